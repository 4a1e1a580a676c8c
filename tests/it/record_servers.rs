//! `planck record` on servers set up for the case (issue 12, 4 and the
//! acceptance): a test runner that creates its own database on a server
//! whose small `pg_stat_statements.max` evicts the application's
//! statements; the same without the relay; and a server with `ssl=on`
//! that planck reaches at `sslmode=verify-full` through the relay.
//!
//! Each test starts a server of its own (through planck's cluster code, as
//! the shared test cluster is) and stops and removes it at the end.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_exit, block_on, stderr, stdout};
use planck::cluster::Cluster;
use planck::db::ConnInfo;
use planck::queries::QueryFile;

/// A server of one test's own.
struct Server {
    cluster: Cluster,
    port: u16,
    dir: PathBuf,
}

impl Server {
    /// Initializes and starts a server under the tests' base directory;
    /// `settings` are set with ALTER SYSTEM and the server restarted.
    fn start(name: &str, settings: &[(&str, &str)]) -> Server {
        let dir = common::tests_base().join(format!("server-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let bindir = planck::cluster::find_bindir(
            std::env::var_os("PLANCK_PG_BINDIR")
                .map(PathBuf::from)
                .as_deref(),
        )
        .expect("PostgreSQL server binaries are needed to run the tests");
        let cluster = Cluster::at(dir.join(".planck"), bindir);
        let port = cluster
            .start(None, &mut |m| eprintln!("server {name}: {m}"))
            .expect("starting the test's server");
        let mut s = Server { cluster, port, dir };
        if !settings.is_empty() {
            for (k, v) in settings {
                s.exec("postgres", &format!("ALTER SYSTEM SET {k} = '{v}'"));
            }
            s.cluster.stop().unwrap();
            s.port = s.cluster.start(Some(port), &mut |_| {}).unwrap();
        }
        s
    }

    fn url(&self, database: &str) -> String {
        self.cluster.url(self.port, database)
    }

    fn exec(&self, database: &str, sql: &str) {
        let url = self.url(database);
        let sql = sql.to_string();
        block_on(async move {
            ConnInfo::parse(&url, true)
                .unwrap()
                .connect()
                .await
                .unwrap()
                .batch_execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        });
    }

    fn strings(&self, database: &str, sql: &str) -> Vec<String> {
        let url = self.url(database);
        let sql = sql.to_string();
        block_on(async move {
            let c = ConnInfo::parse(&url, true)
                .unwrap()
                .connect()
                .await
                .unwrap();
            c.simple_query(&sql)
                .await
                .unwrap()
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some(r.get(0).unwrap_or("NULL").to_string())
                    }
                    _ => None,
                })
                .collect()
        })
    }

    /// The data directory, where the server may read its files.
    fn data_dir(&self) -> PathBuf {
        self.cluster.data_dir()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.cluster.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\nset -e\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("./{name}")
}

fn record(url: &str, args: &[&str], dir: &Path) -> Output {
    common::planck_cmd(dir)
        .args(["--database-url", url, "--format", "json", "record"])
        .args(args)
        .output()
        .unwrap()
}

fn texts(file: &QueryFile) -> Vec<String> {
    let mut v: Vec<String> = file
        .statements
        .iter()
        .map(|s| planck::queries::normalize_space(&s.query))
        .collect();
    v.sort();
    v
}

/// The application's statements of [`app_sql`], as recorded.
const APP: [&str; 4] = [
    "INSERT INTO item VALUES ($1, $2)",
    "SELECT count(*) FROM item",
    "SELECT label FROM item WHERE id = $1",
    "UPDATE item SET label = $1 WHERE id = $2",
];

/// A test database's session: the application's statements, then
/// `savepoints` uniquely named SAVEPOINTs (each its own pg_stat_statements
/// entry, as Django's are before PostgreSQL 17, which folds them into
/// `SAVEPOINT $1`) and as many settings of distinct names (one entry each
/// on every major), all noise that evicts the application's entries.
fn app_sql(savepoints: usize) -> String {
    let mut sql = String::from(
        "CREATE TABLE item (id int PRIMARY KEY, label text);\n\
         INSERT INTO item VALUES (1, 'a');\n\
         SELECT label FROM item WHERE id = 1;\n\
         UPDATE item SET label = 'b' WHERE id = 1;\n\
         SELECT count(*) FROM item;\n\
         BEGIN;\n",
    );
    for i in 0..savepoints {
        sql.push_str(&format!(
            "SAVEPOINT s{i}_x;\nSET LOCAL app.s{i}_x = 'y';\nRELEASE SAVEPOINT s{i}_x;\n"
        ));
    }
    sql.push_str("COMMIT;\n");
    sql
}

/// A runner that creates `test_x`, runs [`app_sql`] there and drops it.
fn runner(dir: &Path, database: &str, savepoints: usize) -> String {
    std::fs::write(dir.join("app.sql"), app_sql(savepoints)).unwrap();
    write_script(
        dir,
        "runner.sh",
        &format!(
            "psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'CREATE DATABASE {database}'\n\
             psql -X -q -v ON_ERROR_STOP=1 -d {database} -f app.sql >/dev/null\n\
             psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'DROP DATABASE {database}'\n"
        ),
    )
}

fn summary(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

// Issue 12, 4: a runner creates its own database, runs its statements
// there (far more distinct SAVEPOINTs than the server's
// pg_stat_statements.max of 100, which evict the application's entries)
// and drops it. The statements are recorded from the relay, none lost, and
// the summary names the database.
#[test]
fn a_created_database_is_recorded_from_the_relay_past_evictions() {
    let server = Server::start("evicting", &[("pg_stat_statements.max", "100")]);
    assert_eq!(
        server.strings("postgres", "SHOW pg_stat_statements.max"),
        ["100"]
    );
    server.exec("postgres", "CREATE DATABASE app");
    let dir = common::project_dir();
    let script = runner(dir.path(), "test_x", 600);
    let out = record(&server.url("app"), &["--", &script], dir.path());
    assert_exit(&out, 0);
    // pg_stat_statements no longer has them: only the relay could tell.
    let left = server.strings(
        "app",
        "SELECT count(*) FROM pg_stat_statements WHERE query LIKE '%FROM item WHERE id%'",
    );
    assert_eq!(left, ["0"], "the statements were not evicted");
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    assert_eq!(texts(&f), APP);
    let s = summary(&out);
    assert_eq!(
        s["recorded_databases"],
        serde_json::json!(["app", "test_x"])
    );
    assert_eq!(s["relay"]["relay_only"], 4, "{s}");
    // Every count is the run's, whatever pg_stat_statements kept.
    for st in s["statements"].as_array().unwrap() {
        assert_eq!(st["calls"], 1, "{st}");
    }
    let err = stderr(&out);
    assert!(err.contains("none is missing"), "{err}");
}

// Issue 12, 4, without the relay: the database the run created is found
// by the oid its pg_stat_statements entries carry, though it was dropped.
#[test]
fn without_the_relay_a_created_database_is_recorded_by_its_oid() {
    let db = test_db!();
    let created = format!("{}_x", db.name);
    let dir = common::project_dir();
    let script = runner(dir.path(), &created, 3);
    let out = record(&db.url, &["--no-relay", "--", &script], dir.path());
    assert_exit(&out, 0);
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    let t = texts(&f);
    for app in APP {
        assert!(t.contains(&app.to_string()), "{app} missing: {t:?}");
    }
    let s = summary(&out);
    let dbs = s["recorded_databases"].as_array().unwrap();
    assert_eq!(dbs[0], db.name.as_str());
    assert!(
        dbs.iter()
            .any(|d| d.as_str().unwrap().ends_with("(dropped)")),
        "{dbs:?}"
    );
}

/// A CA and a certificate for `localhost` signed by it, made with openssl
/// in `dir`; returns the CA's path.
fn certificates(dir: &Path) -> PathBuf {
    let run = |args: &[&str]| openssl(dir, args);
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=planck test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName = DNS:localhost, IP:127.0.0.1\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.crt",
    ]);
    dir.join("ca.crt")
}

/// Runs openssl with `args` in `dir`; its stdout.
fn openssl(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl is needed for this test");
    assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// Turns TLS on in `server` with `server.crt` and `server.key` from
/// `certs`, and creates database `app` with table `acct`.
fn serve_tls(server: &Server, certs: &Path) {
    let data = server.data_dir();
    for f in ["server.crt", "server.key"] {
        std::fs::copy(certs.join(f), data.join(f)).unwrap();
        hand_over(&data.join(f), &data);
    }
    for set in [
        "ssl_cert_file = 'server.crt'",
        "ssl_key_file = 'server.key'",
        "ssl = on",
    ] {
        server.exec("postgres", &format!("ALTER SYSTEM SET {set}"));
    }
    server.exec("postgres", "SELECT pg_reload_conf()");
    server.exec("postgres", "CREATE DATABASE app");
    server.exec("app", "CREATE TABLE acct (id int PRIMARY KEY, bal int)");
}

/// Gives a file to the OS user that owns the data directory, mode 0600
/// (the server refuses a key others may read).
fn hand_over(file: &Path, data_dir: &Path) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = std::fs::metadata(data_dir).unwrap();
    std::os::unix::fs::chown(file, Some(meta.uid()), Some(meta.gid())).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).unwrap();
}

// Issue 12, acceptance: a server with ssl=on, planck at
// sslmode=verify-full (its own CA, the host name checked): the relay
// reaches the server over TLS while the client side stays plain, and the
// command's transaction is recorded.
#[test]
fn the_relay_reaches_a_verify_full_server_over_tls() {
    let server = Server::start("tls", &[]);
    let certs = tempfile::tempdir().unwrap();
    let ca = certificates(certs.path());
    serve_tls(&server, certs.path());
    let url = format!(
        "postgres://planck@localhost:{}/app?sslmode=verify-full&sslrootcert={}",
        server.port,
        ca.display()
    );
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "suite.sh",
        "test \"$PGSSLMODE\" = disable\n\
         psql -X -q -At -c 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()' > ssl.txt\n\
         psql -X -q -c 'BEGIN' -c 'INSERT INTO acct VALUES (1, 0)' \
         -c 'UPDATE acct SET bal = bal + 1 WHERE id = 1' -c 'COMMIT' >/dev/null\n",
    );
    let out = record(&url, &["--", &script], dir.path());
    assert_exit(&out, 0);
    // The relay's connection to the server is TLS.
    let ssl = std::fs::read_to_string(dir.path().join("ssl.txt")).unwrap();
    assert_eq!(ssl.trim(), "t");
    let f = QueryFile::load(&dir.path().join("queries/recorded.toml")).unwrap();
    assert_eq!(f.transactions.len(), 1, "{:?}", f.transactions);
    assert_eq!(f.transactions[0].statements.len(), 2);
    // A CA that did not sign the server's certificate: refused.
    let other = tempfile::tempdir().unwrap();
    let wrong = certificates(other.path());
    let url = format!(
        "postgres://planck@localhost:{}/app?sslmode=verify-full&sslrootcert={}",
        server.port,
        wrong.display()
    );
    let out = record(&url, &["--", &script], dir.path());
    assert_exit(&out, 3);
}

// Issue 36, 4 (libpq parity, issue 31, 3): `CREATE EXTENSION citus` turns
// on TLS with a self-signed X.509 version 1 certificate, which webpki does
// not read and OpenSSL (libpq, psql) does. At libpq's default sslmode
// (prefer) and at require nothing is verified, so the relay must reach the
// server; at verify-full with that very certificate as sslrootcert it is
// its own root, as OpenSSL allows. A version 1 certificate someone else
// made is still refused at verify-full.
#[test]
fn the_relay_reaches_a_server_whose_certificate_is_version_1() {
    let server = Server::start("tls-v1", &[]);
    let certs = tempfile::tempdir().unwrap();
    let v1 = |dir: &Path| {
        for args in [
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=localhost",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
            ][..],
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-signkey",
                "server.key",
                "-days",
                "2",
                "-out",
                "server.crt",
            ][..],
        ] {
            openssl(dir, args);
        }
        let text = openssl(dir, &["x509", "-noout", "-text", "-in", "server.crt"]);
        assert!(text.contains("Version: 1 (0x0)"), "{text}");
        dir.join("server.crt")
    };
    let cert = v1(certs.path());
    serve_tls(&server, certs.path());
    let dir = common::project_dir();
    let script = write_script(
        dir.path(),
        "suite.sh",
        "psql -X -q -At -c 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()' > ssl.txt\n\
         psql -X -q -c 'UPDATE acct SET bal = bal + 1 WHERE id = 1' >/dev/null\n",
    );
    let base = format!("postgres://planck@localhost:{}/app", server.port);
    for query in [
        String::new(),
        "?sslmode=require".to_string(),
        // TLS 1.2 maps a signature scheme to several algorithms.
        "?sslmode=require&ssl_max_protocol_version=TLSv1.2".to_string(),
        format!("?sslmode=verify-full&sslrootcert={}", cert.display()),
    ] {
        let _ = std::fs::remove_file(dir.path().join("ssl.txt"));
        let out = record(&format!("{base}{query}"), &["--", &script], dir.path());
        assert_exit(&out, 0);
        let ssl = std::fs::read_to_string(dir.path().join("ssl.txt")).unwrap();
        assert_eq!(ssl.trim(), "t", "{query}");
    }
    let other = tempfile::tempdir().unwrap();
    let stranger = v1(other.path());
    let url = format!(
        "{base}?sslmode=verify-full&sslrootcert={}",
        stranger.display()
    );
    let out = record(&url, &["--", &script], dir.path());
    assert_exit(&out, 3);
}
