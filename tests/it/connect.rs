//! Connections against real servers (issue 8, section 3): TLS mode by mode
//! against a server with a certificate made here, timeouts against
//! listeners that never answer, the password and service files, and the
//! CLI never printing a password.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{TestDb, assert_exit, block_on, planck_cmd, stderr};
use planck::cluster::Cluster;
use planck::db::{ConnInfo, LibpqEnv};

fn env(vars: &[(&str, &str)]) -> LibpqEnv {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    LibpqEnv::capture(&move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
}

/// Connects with `text` (resolved with `env`) and reports whether the session
/// is encrypted, or the error as the user would read it (headline and hints).
fn try_connect(text: &str, env: &LibpqEnv) -> Result<bool, String> {
    let (info, _) = ConnInfo::resolve(text, env).map_err(|e| e.to_string())?;
    block_on(async move {
        let client = info.connect().await.map_err(|e| {
            let hints = e.hints().join(" / ");
            format!("{e} [hint: {hints}]")
        })?;
        let row = client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(row.get::<_, bool>(0))
    })
}

// ---- a TLS server ---------------------------------------------------------------

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command is needed for the TLS tests");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate it signs for the name `localhost` only (not
/// 127.0.0.1, so connecting by address is "the wrong host name"), another CA
/// that signed nothing here (what a self-signed server certificate is to a
/// client), and a client certificate for role `conn_certuser`.
fn make_certs(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let run =
        |args: Vec<String>| openssl(dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let ec = |mut a: Vec<String>| {
        a.extend(
            [
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
            ]
            .map(String::from),
        );
        a
    };
    for (name, cn) in [("ca", "planck test CA"), ("other-ca", "unrelated CA")] {
        let mut a = ec(vec!["req".into(), "-x509".into()]);
        a.extend([
            "-keyout".into(),
            format!("{name}.key"),
            "-out".into(),
            format!("{name}.crt"),
            "-days".into(),
            "30".into(),
            "-subj".into(),
            format!("/CN={cn}"),
            "-addext".into(),
            "basicConstraints=critical,CA:TRUE".into(),
            "-addext".into(),
            "keyUsage=critical,keyCertSign,cRLSign".into(),
        ]);
        run(a);
    }
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    for (name, cn) in [("server", "localhost"), ("client", "conn_certuser")] {
        let mut a = ec(vec!["req".into()]);
        a.extend([
            "-keyout".into(),
            format!("{name}.key"),
            "-out".into(),
            format!("{name}.csr"),
            "-subj".into(),
            format!("/CN={cn}"),
        ]);
        run(a);
        run([
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &format!("{name}.crt"),
            "-days",
            "30",
            "-extfile",
            &format!("{name}.ext"),
        ]
        .map(String::from)
        .to_vec());
    }
}

fn postgres_ids() -> Option<(u32, u32)> {
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, "postgres"]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

/// Copies a file into the server's data directory, owned by the server's OS
/// user when planck runs as root (the key must be theirs and 0600).
fn install(from: &Path, to: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::copy(from, to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode)).unwrap();
    if planck::cluster::running_as_root() {
        let (uid, gid) = postgres_ids().expect("the postgres OS user");
        std::os::unix::fs::chown(to, Some(uid), Some(gid)).unwrap();
    }
}

/// A self-signed certificate `name.crt` (its key `name.key`) for the common
/// name `localhost`, a CA certificate as `openssl req -x509` makes it
/// (basicConstraints CA:TRUE), with `extra` arguments (`-addext ...`).
fn make_self_signed(dir: &Path, name: &str, extra: &[&str]) {
    let (key, crt) = (format!("{name}.key"), format!("{name}.crt"));
    let mut args = vec![
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        &key,
        "-out",
        &crt,
        "-days",
        "30",
        "-subj",
        "/CN=localhost",
    ];
    args.extend(extra);
    openssl(dir, &args);
}

/// A self-signed certificate for `localhost` that expired before it began
/// (`-days -1`), otherwise like [`make_self_signed`]'s.
fn make_expired_self_signed(dir: &Path, name: &str) {
    make_self_signed(dir, name, &["-addext", "subjectAltName=DNS:localhost"]);
    let (key, crt, csr) = (
        format!("{name}.key"),
        format!("{name}.crt"),
        format!("{name}.csr"),
    );
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            &key,
            "-subj",
            "/CN=localhost",
            "-out",
            &csr,
        ],
    );
    std::fs::write(
        dir.join(format!("{name}.ext")),
        "basicConstraints=critical,CA:TRUE\nsubjectAltName=DNS:localhost\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-signkey",
            &key,
            "-days",
            "-1",
            "-extfile",
            &format!("{name}.ext"),
            "-out",
            &crt,
        ],
    );
}

/// CRLs of the CA [`make_certs`] made: `empty.crl` (nothing revoked),
/// `revoked.crl` (the server's certificate revoked), and `other.crl` (from
/// the unrelated CA, so no CRL of the server certificate's issuer).
fn make_crls(dir: &Path) {
    for (db, ca) in [("ca", "ca"), ("other", "other-ca")] {
        std::fs::write(dir.join(format!("{db}-index.txt")), "").unwrap();
        std::fs::write(dir.join(format!("{db}-crlnumber")), "1000\n").unwrap();
        std::fs::write(
            dir.join(format!("{db}.cnf")),
            format!(
                "[ca]\ndefault_ca = test\n[test]\ndatabase = {db}-index.txt\n\
                 crlnumber = {db}-crlnumber\ndefault_md = sha256\ndefault_crl_days = 30\n\
                 certificate = {ca}.crt\nprivate_key = {ca}.key\n"
            ),
        )
        .unwrap();
    }
    let gencrl =
        |cnf: &str, out: &str| openssl(dir, &["ca", "-config", cnf, "-gencrl", "-out", out]);
    gencrl("ca.cnf", "empty.crl");
    gencrl("other.cnf", "other.crl");
    openssl(dir, &["ca", "-config", "ca.cnf", "-revoke", "server.crt"]);
    gencrl("ca.cnf", "revoked.crl");
}

/// A server of its own with `ssl = on`, accepting only TLS connections
/// (`hostssl` lines alone), stopped when dropped.
struct TlsServer {
    cluster: Cluster,
    port: u16,
    certs: PathBuf,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.cluster.stop();
    }
}

impl TlsServer {
    fn start() -> TlsServer {
        TlsServer::start_in("tls-cluster")
    }

    /// A server in its own directory (`name`), so tests run side by side,
    /// one per set of server binaries (a data directory of one major
    /// version does not start under another: `PLANCK_PG_BINDIR`).
    fn start_in(name: &str) -> TlsServer {
        use sha2::Digest;
        let bindir = planck::cluster::find_bindir(
            std::env::var_os("PLANCK_PG_BINDIR")
                .map(PathBuf::from)
                .as_deref(),
        )
        .expect("PostgreSQL server binaries are needed to run the tests");
        let h = sha2::Sha256::digest(bindir.as_os_str().as_encoded_bytes());
        let tag: String = h.iter().take(4).map(|b| format!("{b:02x}")).collect();
        let base = common::tests_base().join(format!("{name}-{tag}"));
        let cluster = Cluster::at(base.join(".planck"), bindir);
        // First start initializes the data directory; then it is configured
        // afresh (new certificates every run) and restarted.
        cluster
            .start(None, &mut |m| eprintln!("tls cluster: {m}"))
            .expect("starting the TLS test cluster");
        cluster.stop().unwrap();
        let certs = base.join("certs");
        let _ = std::fs::remove_dir_all(&certs);
        make_certs(&certs);
        let data = cluster.data_dir();
        install(&certs.join("server.crt"), &data.join("server.crt"), 0o644);
        install(&certs.join("server.key"), &data.join("server.key"), 0o600);
        install(&certs.join("ca.crt"), &data.join("ca.crt"), 0o644);
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        if !text.contains("# planck connect tests") {
            text.push_str(
                "\n# planck connect tests\nssl = on\nssl_cert_file = 'server.crt'\n\
                 ssl_key_file = 'server.key'\nssl_ca_file = 'ca.crt'\n",
            );
            std::fs::write(&conf, text).unwrap();
        }
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\n\
             hostssl all planck 127.0.0.1/32 trust\n\
             hostssl all conn_certuser 127.0.0.1/32 cert\n\
             hostssl all all 127.0.0.1/32 scram-sha-256\n",
        )
        .unwrap();
        let port = cluster
            .start(None, &mut |m| eprintln!("tls cluster: {m}"))
            .expect("restarting the TLS test cluster with ssl = on");
        let server = TlsServer {
            cluster,
            port,
            certs,
        };
        server.admin(
            "DROP ROLE IF EXISTS conn_scram; CREATE ROLE conn_scram LOGIN PASSWORD 'p w''d'; \
             DROP ROLE IF EXISTS conn_certuser; CREATE ROLE conn_certuser LOGIN",
        );
        server
    }

    /// Restarts the server with another certificate and key of `certs`.
    fn serve(&mut self, cert: &str, key: &str) {
        self.cluster.stop().unwrap();
        let data = self.cluster.data_dir();
        install(&self.certs.join(cert), &data.join("server.crt"), 0o644);
        install(&self.certs.join(key), &data.join("server.key"), 0o600);
        self.port = self
            .cluster
            .start(None, &mut |m| eprintln!("tls cluster: {m}"))
            .expect("restarting the TLS test cluster with another certificate");
    }

    /// Runs SQL as the superuser over the Unix socket (no TLS there).
    fn admin(&self, sql: &str) {
        let text = format!(
            "host={} port={} user=planck dbname=postgres",
            self.cluster.socket_dir().display(),
            self.port
        );
        let sql = sql.to_string();
        let info = ConnInfo::parse(&text, true).unwrap();
        block_on(async move {
            info.connect()
                .await
                .unwrap()
                .batch_execute(&sql)
                .await
                .unwrap()
        });
    }

    /// Connects by the name in the certificate (and the address it listens on).
    fn by_name(&self, extra: &str) -> String {
        format!(
            "host=localhost hostaddr=127.0.0.1 port={} dbname=postgres {extra}",
            self.port
        )
    }

    /// Connects by address: a host name the certificate does not hold.
    fn by_address(&self, extra: &str) -> String {
        format!("host=127.0.0.1 port={} dbname=postgres {extra}", self.port)
    }

    fn cert(&self, name: &str) -> String {
        self.certs.join(name).display().to_string()
    }
}

/// Issue 8, 3.2: `sslmode=require` failed with "server does not support
/// TLS" and `verify-full` was a malformed URL. Each mode now passes or
/// fails exactly where libpq does.
#[test]
fn tls_modes_pass_and_fail_where_libpq_does() {
    let server = TlsServer::start();
    let none = LibpqEnv::empty();
    let ca = server.cert("ca.crt");
    let other = server.cert("other-ca.crt");
    let planck = "user=planck";

    // A connection that negotiated TLS lends no socket (its bytes are the
    // TLS session's), whichever mode got it there; it works as any other.
    for mode in ["allow", "prefer", "require"] {
        let (info, _) =
            ConnInfo::resolve(&server.by_name(&format!("{planck} sslmode={mode}")), &none).unwrap();
        let (lent, works) = block_on(async move {
            let (client, lender) = info.connect_lending().await.unwrap();
            (
                lender.is_some(),
                client.simple_query("SELECT 1").await.is_ok(),
            )
        });
        assert!(!lent && works, "{mode}: lent {lent}, works {works}");
    }

    // The server accepts TLS only (hostssl).
    let e = try_connect(&server.by_name(&format!("{planck} sslmode=disable")), &none)
        .expect_err("disable against a hostssl-only server");
    assert!(e.contains("28000") && e.contains("hostssl"), "{e}");
    assert_eq!(
        try_connect(&server.by_name(&format!("{planck} sslmode=allow")), &none),
        Ok(true),
        "allow: plain is refused, then TLS"
    );

    // An untrusted certificate (to this client, as a self-signed one is):
    // prefer and require encrypt without verifying; verify-ca refuses.
    for mode in ["prefer", "require"] {
        assert_eq!(
            try_connect(&server.by_name(&format!("{planck} sslmode={mode}")), &none),
            Ok(true),
            "{mode} without a root certificate"
        );
    }
    let e = try_connect(
        &server.by_name(&format!("{planck} sslmode=verify-ca sslrootcert={other}")),
        &none,
    )
    .expect_err("verify-ca with a CA that did not sign the certificate");
    assert!(
        e.contains("UnknownIssuer") && e.contains("sslrootcert"),
        "{e}"
    );
    // libpq: require with a root certificate file is verify-ca.
    assert!(
        try_connect(
            &server.by_name(&format!("{planck} sslmode=require sslrootcert={other}")),
            &none
        )
        .is_err()
    );
    let e = try_connect(
        &server.by_name(&format!(
            "{planck} sslmode=verify-ca sslrootcert=/nonexistent/root.crt"
        )),
        &none,
    )
    .expect_err("verify-ca without its root file");
    assert!(e.contains("does not exist"), "{e}");
    // libpq's default root file, ~/.postgresql/root.crt, found through HOME.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".postgresql")).unwrap();
    std::fs::copy(&ca, home.path().join(".postgresql/root.crt")).unwrap();
    let with_home = env(&[("HOME", home.path().to_str().unwrap())]);
    assert_eq!(
        try_connect(
            &server.by_name(&format!("{planck} sslmode=verify-full")),
            &with_home
        ),
        Ok(true),
        "verify-full with ~/.postgresql/root.crt"
    );

    // The right CA, the wrong host name: verify-ca passes, verify-full fails.
    assert_eq!(
        try_connect(
            &server.by_address(&format!("{planck} sslmode=verify-ca sslrootcert={ca}")),
            &none
        ),
        Ok(true)
    );
    let e = try_connect(
        &server.by_address(&format!("{planck} sslmode=verify-full sslrootcert={ca}")),
        &none,
    )
    .expect_err("verify-full with a name the certificate does not hold");
    assert!(
        e.contains("not valid for name") && e.contains("verify-ca"),
        "{e}"
    );
    // The right CA and host name.
    assert_eq!(
        try_connect(
            &server.by_name(&format!("{planck} sslmode=verify-full sslrootcert={ca}")),
            &none
        ),
        Ok(true)
    );
    // PGSSLMODE and PGSSLROOTCERT do the same.
    let vars = env(&[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", &ca)]);
    assert_eq!(try_connect(&server.by_name(planck), &vars), Ok(true));
    assert!(try_connect(&server.by_address(planck), &vars).is_err());

    // SCRAM over TLS, with and without channel binding.
    let scram = r"user=conn_scram password='p w\'d'";
    assert_eq!(
        try_connect(
            &server.by_name(&format!("{scram} sslmode=verify-full sslrootcert={ca}")),
            &none
        ),
        Ok(true)
    );
    assert_eq!(
        try_connect(
            &server.by_name(&format!("{scram} sslmode=require channel_binding=require")),
            &none
        ),
        Ok(true),
        "SCRAM-SHA-256-PLUS over TLS"
    );
    let e = try_connect(
        &server.by_name("user=conn_scram password=wrong sslmode=require"),
        &none,
    )
    .expect_err("a wrong password");
    assert!(e.contains("28P01"), "{e}");
    // A trust login uses no SCRAM, so it cannot bind the channel: refused, as libpq does.
    assert!(
        try_connect(
            &server.by_name(&format!("{planck} sslmode=require channel_binding=require")),
            &none
        )
        .is_err()
    );

    // A client certificate (pg_hba `cert`): sslcert and sslkey.
    let key = home.path().join("client.key");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::copy(server.certs.join("client.key"), &key).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let client = format!(
        "user=conn_certuser sslmode=verify-full sslrootcert={ca} sslcert={} sslkey={}",
        server.cert("client.crt"),
        key.display()
    );
    assert_eq!(try_connect(&server.by_name(&client), &none), Ok(true));
    assert!(
        try_connect(
            &server.by_name(&format!(
                "user=conn_certuser sslmode=verify-full sslrootcert={ca}"
            )),
            &none
        )
        .is_err(),
        "without the client certificate"
    );

    // sslrootcert=system: the system's trusted roots, which rustls-native-certs
    // reads from SSL_CERT_FILE when it is set (as OpenSSL does). Through the
    // CLI, so the variable is set for that process alone.
    let project = common::project_dir();
    std::fs::create_dir_all(project.path().join("migrations")).unwrap();
    let system = format!(
        "postgres://planck@localhost:{}/postgres?hostaddr=127.0.0.1&sslrootcert=system",
        server.port
    );
    for (roots, ok) in [(&ca, true), (&other, false)] {
        let out = planck_cmd(project.path())
            .env("SSL_CERT_FILE", roots)
            .env_remove("SSL_CERT_DIR")
            .args(["--database-url", &system, "migrate"])
            .output()
            .unwrap();
        assert_eq!(out.status.success(), ok, "{roots}: {}", stderr(&out));
        if !ok {
            assert_exit(&out, 3);
        }
    }

    // The pool connects the same way.
    let (info, _) = ConnInfo::resolve(
        &server.by_name(&format!("{planck} sslmode=verify-full sslrootcert={ca}")),
        &none,
    )
    .unwrap();
    let ssl = block_on(async move {
        let mgr = info
            .pool_manager(deadpool_postgres::ManagerConfig::default())
            .unwrap();
        let pool = deadpool_postgres::Pool::builder(mgr)
            .max_size(2)
            .build()
            .unwrap();
        let c = pool.get().await.unwrap();
        let row = c
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .unwrap();
        row.get::<_, bool>(0)
    });
    assert!(ssl, "pooled connections use TLS too");
}

/// Issue 31: a self-signed server certificate named in `sslrootcert` (what
/// psql accepts) was refused with `CaUsedAsEndEntity`. It is now its own
/// chain, as in OpenSSL: accepted under verify-ca and verify-full when the
/// root file holds it, with the host checked against its subjectAltName, or
/// its common name when it has none; refused when the root file does not
/// hold it, when it has expired, or for another host under verify-full.
#[test]
fn a_self_signed_server_certificate_is_its_own_root_as_in_libpq() {
    let mut server = TlsServer::start_in("tls-self-signed-cluster");
    let none = LibpqEnv::empty();
    let dir = server.certs.clone();
    make_self_signed(&dir, "ss", &["-addext", "subjectAltName=DNS:localhost"]);
    make_self_signed(
        &dir,
        "ss-other",
        &["-addext", "subjectAltName=DNS:localhost"],
    );
    make_self_signed(&dir, "ss-cn", &[]);
    make_expired_self_signed(&dir, "ss-expired");
    // A root file of several certificates, the server's among them.
    let bundle = dir.join("bundle.crt");
    let text = std::fs::read_to_string(dir.join("other-ca.crt")).unwrap()
        + &std::fs::read_to_string(dir.join("ss.crt")).unwrap();
    std::fs::write(&bundle, text).unwrap();
    let (ss, other, cn, expired) = (
        server.cert("ss.crt"),
        server.cert("ss-other.crt"),
        server.cert("ss-cn.crt"),
        server.cert("ss-expired.crt"),
    );
    let planck = "user=planck";

    server.serve("ss.crt", "ss.key");
    for mode in ["verify-ca", "verify-full"] {
        assert_eq!(
            try_connect(
                &server.by_name(&format!("{planck} sslmode={mode} sslrootcert={ss}")),
                &none
            ),
            Ok(true),
            "{mode} with the server's own certificate as the root"
        );
    }
    assert_eq!(
        try_connect(
            &server.by_name(&format!(
                "{planck} sslmode=verify-full sslrootcert={}",
                bundle.display()
            )),
            &none
        ),
        Ok(true),
        "the certificate among others in the root file"
    );
    // The wrong host name: verify-ca passes, verify-full fails.
    assert_eq!(
        try_connect(
            &server.by_address(&format!("{planck} sslmode=verify-ca sslrootcert={ss}")),
            &none
        ),
        Ok(true)
    );
    let e = try_connect(
        &server.by_address(&format!("{planck} sslmode=verify-full sslrootcert={ss}")),
        &none,
    )
    .expect_err("verify-full with a name the certificate does not hold");
    assert!(
        e.contains("not valid for name") && e.contains("verify-ca"),
        "{e}"
    );
    // Another self-signed certificate for the same name is no root of this one.
    for mode in ["verify-ca", "verify-full"] {
        let e = try_connect(
            &server.by_name(&format!("{planck} sslmode={mode} sslrootcert={other}")),
            &none,
        )
        .expect_err("a root file without the server's certificate");
        assert!(
            e.contains("is self-signed and is not in the root certificate file")
                && e.contains(&other)
                && e.contains("put the certificate itself in the file sslrootcert names"),
            "{mode}: {e}"
        );
    }

    // No subjectAltName: the common name is the host name, as in libpq.
    server.serve("ss-cn.crt", "ss-cn.key");
    assert_eq!(
        try_connect(
            &server.by_name(&format!("{planck} sslmode=verify-full sslrootcert={cn}")),
            &none
        ),
        Ok(true),
        "verify-full by the common name"
    );
    let e = try_connect(
        &server.by_address(&format!("{planck} sslmode=verify-full sslrootcert={cn}")),
        &none,
    )
    .expect_err("verify-full with a host that is not the common name");
    assert!(e.contains("not valid for name"), "{e}");

    // Expired: refused even though the root file holds it.
    server.serve("ss-expired.crt", "ss-expired.key");
    let e = try_connect(
        &server.by_name(&format!("{planck} sslmode=verify-ca sslrootcert={expired}")),
        &none,
    )
    .expect_err("an expired certificate");
    assert!(e.to_lowercase().contains("expired"), "{e}");
    // require still encrypts without a check.
    assert_eq!(
        try_connect(&server.by_name(&format!("{planck} sslmode=require")), &none),
        Ok(true)
    );
}

/// Issue 31: `sslcrl` and `sslcrldir` were refused as unsupported. A server
/// certificate its CA revoked is now refused under verify-ca and
/// verify-full, naming the CRL file; one with no CRL from its issuer among
/// those given is refused too (libpq checks the whole chain).
#[test]
fn sslcrl_and_sslcrldir_refuse_a_revoked_server_certificate() {
    let server = TlsServer::start_in("tls-crl-cluster");
    let none = LibpqEnv::empty();
    make_crls(&server.certs);
    let crldir = server.certs.join("crldir");
    std::fs::create_dir_all(&crldir).unwrap();
    std::fs::copy(server.certs.join("revoked.crl"), crldir.join("revoked.crl")).unwrap();
    std::fs::write(crldir.join("README"), "not a CRL\n").unwrap();
    let ca = server.cert("ca.crt");
    let (empty, revoked, other) = (
        server.cert("empty.crl"),
        server.cert("revoked.crl"),
        server.cert("other.crl"),
    );
    let base = format!("user=planck sslrootcert={ca}");

    assert_eq!(
        try_connect(
            &server.by_name(&format!("{base} sslmode=verify-full sslcrl={empty}")),
            &none
        ),
        Ok(true),
        "a CRL from the issuer that does not list the certificate"
    );
    for (mode, crl) in [
        ("verify-full", format!("sslcrl={revoked}")),
        ("verify-ca", format!("sslcrl={revoked}")),
        ("verify-full", format!("sslcrldir={}", crldir.display())),
    ] {
        let e = try_connect(
            &server.by_name(&format!("{base} sslmode={mode} {crl}")),
            &none,
        )
        .expect_err("a revoked certificate");
        assert!(
            e.contains("is revoked by the certificate revocation list in")
                && e.contains("revoked.crl")
                && e.contains("the certificate's issuer revoked it"),
            "{mode} {crl}: {e}"
        );
    }
    // PGSSLCRL does the same.
    let vars = env(&[("PGSSLCRL", revoked.as_str())]);
    let e = try_connect(
        &server.by_name(&format!("{base} sslmode=verify-full")),
        &vars,
    )
    .expect_err("PGSSLCRL");
    assert!(e.contains("is revoked"), "{e}");
    // A CRL from another CA: the server certificate's status is unknown.
    let e = try_connect(
        &server.by_name(&format!("{base} sslmode=verify-full sslcrl={other}")),
        &none,
    )
    .expect_err("no CRL from the issuer");
    assert!(
        e.contains("no certificate revocation list in") && e.contains("planck test CA"),
        "{e}"
    );
    // A CRL file that is not there is an error, not a check skipped.
    let e = try_connect(
        &server.by_name(&format!(
            "{base} sslmode=verify-full sslcrl=/nonexistent/root.crl"
        )),
        &none,
    )
    .expect_err("a missing CRL file");
    assert!(
        e.contains("certificate revocation list file \"/nonexistent/root.crl\""),
        "{e}"
    );
}

// ---- timeouts -------------------------------------------------------------------

/// A listener that accepts connections and never writes a byte.
fn silent_listener() -> (u16, Arc<Mutex<Vec<TcpStream>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for s in l.incoming().take(8).flatten() {
            keep.lock().unwrap().push(s);
        }
    });
    (port, held)
}

/// Issue 8, 3.3: a server that accepts TCP and never answers hung planck
/// forever. The whole attempt is now under connect_timeout, and the error
/// names the host.
#[test]
fn a_server_that_never_answers_times_out_naming_the_host() {
    let (port, _held) = silent_listener();
    for mode in ["disable", "prefer", "require"] {
        let start = Instant::now();
        let e = try_connect(
            &format!("host=127.0.0.1 port={port} user=u connect_timeout=1 sslmode={mode}"),
            &LibpqEnv::empty(),
        )
        .expect_err("a silent server");
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "{mode}: took {took:?}");
        assert!(took >= Duration::from_millis(900), "{mode}: took {took:?}");
        assert!(
            e.contains(&format!("127.0.0.1:{port}: timed out after 1 s")),
            "{mode}: {e}"
        );
    }
    // PGCONNECT_TIMEOUT, and every host of a list is named, with the time
    // waited in all (issue 31: it said "timed out after 1 s" after 2 s).
    let (port2, _held2) = silent_listener();
    let start = Instant::now();
    let e = try_connect(
        &format!("postgres://u@127.0.0.1:{port},127.0.0.1:{port2}/d?sslmode=disable"),
        &env(&[("PGCONNECT_TIMEOUT", "1")]),
    )
    .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
    assert!(
        e.contains(&format!(
            "timed out after 2 s (1 s for each of 2 addresses: 127.0.0.1:{port}, 127.0.0.1:{port2};"
        )),
        "{e}"
    );
}

/// Reads one length-prefixed startup-phase message (no type byte).
fn read_startup(s: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize - 4];
    s.read_exact(&mut body).unwrap();
    body
}

/// A fake server: answers the startup with AuthenticationOk and, when
/// `finish` is set, ReadyForQuery; then says nothing more.
fn half_server(finish: bool) -> (u16, std::sync::mpsc::Receiver<u16>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut s, peer) = l.accept().unwrap();
        let _ = tx.send(peer.port());
        read_startup(&mut s);
        // AuthenticationOk.
        s.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 0]).unwrap();
        if finish {
            // ReadyForQuery (idle).
            s.write_all(&[b'Z', 0, 0, 0, 5, b'I']).unwrap();
        }
        std::thread::sleep(Duration::from_secs(20));
        drop(s);
    });
    (port, rx)
}

/// Issue 8, 3.3: the timeout covers startup and authentication, not only
/// the TCP connect (tokio-postgres' own connect_timeout stops there).
#[test]
fn a_server_silent_mid_startup_times_out() {
    let (port, _) = half_server(false);
    let start = Instant::now();
    let e = try_connect(
        &format!("host=127.0.0.1 port={port} user=u connect_timeout=1 sslmode=disable"),
        &LibpqEnv::empty(),
    )
    .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(e.contains("timed out after 1 s"), "{e}");
}

/// The timer state of a loopback TCP socket from /proc/net/tcp: (timer kind,
/// clock ticks until it fires). Kind 2 is the keepalive timer.
fn tcp_timer(local_port: u16, remote_port: u16) -> Option<(u8, u64)> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let port = |a: &str| u16::from_str_radix(a.rsplit(':').next()?, 16).ok();
        if port(f[1])? != local_port || port(f[2])? != remote_port {
            return None;
        }
        let (kind, when) = f[5].split_once(':')?;
        Some((
            u8::from_str_radix(kind, 16).ok()?,
            u64::from_str_radix(when, 16).ok()?,
        ))
    })
}

/// Issue 8, 3.3: a peer that vanishes mid-stream is noticed through TCP
/// keepalives (idle 10 s, then 3 probes 5 s apart) and tcp_user_timeout
/// (30 s of unacknowledged data). A vanished peer cannot be simulated on
/// loopback without firewall rules (the kernel answers for a silent
/// process), so this checks what can be checked honestly: on the real
/// socket of an established connection to a server gone silent, the kernel
/// runs a keepalive timer due within 10 s (it runs none without keepalives).
#[test]
fn an_established_connection_runs_a_10_second_keepalive_timer() {
    let (port, peer) = half_server(true);
    let (info, _) = ConnInfo::resolve(
        &format!("host=127.0.0.1 port={port} user=u sslmode=disable"),
        &LibpqEnv::empty(),
    )
    .unwrap();
    let timer = block_on(async move {
        let client = info.connect().await.expect("the fake server's startup");
        let local = peer.recv().unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let timer = tcp_timer(local, port);
        drop(client);
        timer
    });
    let (kind, ticks) = timer.expect("the client's socket in /proc/net/tcp");
    assert_eq!(kind, 2, "keepalive timer");
    // Clock ticks are 1/100 s on Linux (USER_HZ).
    assert!(ticks <= 1000, "keepalive due in {ticks} ticks");
}

/// The socket replay opens itself, to lend it (src/db/lent.rs), has the
/// same keepalive timer.
#[test]
fn a_lending_connection_runs_the_same_keepalive_timer() {
    let (port, peer) = half_server(true);
    let (info, _) = ConnInfo::resolve(
        &format!("host=127.0.0.1 port={port} user=u sslmode=disable"),
        &LibpqEnv::empty(),
    )
    .unwrap();
    let (lent, timer) = block_on(async move {
        let (client, lender) = info
            .connect_lending()
            .await
            .expect("the fake server's startup");
        let local = peer.recv().unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let timer = tcp_timer(local, port);
        drop(client);
        (lender.is_some(), timer)
    });
    assert!(lent, "a plain TCP connection lends its socket");
    let (kind, ticks) = timer.expect("the client's socket in /proc/net/tcp");
    assert_eq!(kind, 2, "keepalive timer");
    assert!(ticks <= 1000, "keepalive due in {ticks} ticks");
}

// ---- libpq's files -------------------------------------------------------------

fn create_role(db: &TestDb, role: &str, password: &str) {
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN PASSWORD '{}'; \
         GRANT CONNECT ON DATABASE {} TO {role}",
        password.replace('\'', "''"),
        db.name
    ));
}

/// Issue 8, 3.4: a password taken only from a `.pgpass` file (`PGPASSFILE`),
/// with libpq's escapes, and not from a file others may read.
#[test]
fn password_from_pgpass_only() {
    use std::os::unix::fs::PermissionsExt;
    let db = test_db!();
    let role = "conn_pgpass_user";
    create_role(&db, role, r"pa:ss\w rd");
    let port = common::cluster().port;
    let dir = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    std::fs::write(
        &pgpass,
        format!("# test\nother:1:*:*:nope\n127.0.0.1:{port}:*:{role}:pa\\:ss\\\\w rd\n"),
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let vars = env(&[("PGPASSFILE", pgpass.to_str().unwrap())]);
    let text = format!("postgres://{role}@127.0.0.1:{port}/{}", db.name);
    assert_eq!(try_connect(&text, &vars), Ok(false));

    // Group-readable: ignored with a warning, so the login fails.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (_, warnings) = ConnInfo::resolve(&text, &vars).unwrap();
    assert!(
        warnings[0].contains("group or world access"),
        "{warnings:?}"
    );
    let e = try_connect(&text, &vars).unwrap_err();
    assert!(e.contains("the server asks for a password"), "{e}");
}

/// Issue 8, 3.4: `service=` and `PGSERVICE` with `PGSERVICEFILE`, plus
/// `PGAPPNAME` and `PGOPTIONS` reaching the server.
#[test]
fn service_file_appname_and_options() {
    let db = test_db!();
    let port = common::cluster().port;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("services");
    std::fs::write(
        &file,
        format!(
            "[ci]\nhost=127.0.0.1\nport={port}\nuser=planck\ndbname={}\n",
            db.name
        ),
    )
    .unwrap();
    let vars = env(&[
        ("PGSERVICEFILE", file.to_str().unwrap()),
        ("PGSYSCONFDIR", dir.path().to_str().unwrap()),
        ("PGAPPNAME", "ci job 7"),
        ("PGOPTIONS", "-c work_mem=7777kB"),
    ]);
    for text in ["service=ci", "postgres://?service=ci"] {
        let (info, _) = ConnInfo::resolve(text, &vars).unwrap();
        let got = block_on(async move {
            let c = info.connect().await.unwrap();
            let row = c
                .query_one(
                    "SELECT current_database(), current_setting('application_name'), \
                     current_setting('work_mem')",
                    &[],
                )
                .await
                .unwrap();
            (
                row.get::<_, String>(0),
                row.get::<_, String>(1),
                row.get::<_, String>(2),
            )
        });
        assert_eq!(
            got,
            (
                db.name.clone(),
                "ci job 7".to_string(),
                "7777kB".to_string()
            ),
            "{text}"
        );
    }
}

/// Issue 8, 3.4: of several hosts, the first that answers is used (a dead
/// one first), and `target_session_attrs=read-only` skips a primary.
#[test]
fn multi_host_and_target_session_attrs() {
    let db = test_db!();
    let port = common::cluster().port;
    let url = format!(
        "postgres://planck@127.0.0.1:1,127.0.0.1:{port}/{}?sslmode=disable",
        db.name
    );
    assert_eq!(try_connect(&url, &LibpqEnv::empty()), Ok(false));
    let e = try_connect(
        &format!("{url}&target_session_attrs=read-only"),
        &LibpqEnv::empty(),
    )
    .unwrap_err();
    assert!(
        e.contains("127.0.0.1:1:") && e.contains("not read-only"),
        "{e}"
    );
    assert_eq!(
        try_connect(
            &format!("{url}&target_session_attrs=read-write"),
            &LibpqEnv::empty()
        ),
        Ok(false)
    );
}

// ---- the CLI never prints a password ------------------------------------------

/// Issue 8, 3.1: keyword strings printed their passwords (`*** Secret PW'`,
/// `password =hunter2` in full), and `-v` printed the string again.
#[test]
fn cli_never_prints_keyword_passwords() {
    for url in [
        "host=127.0.0.1 port=1 user=u password='my Secret PW' connect_timeout=2",
        "host=127.0.0.1 port=1 user=u password =hunter2Secret connect_timeout=2",
        "host=127.0.0.1 port=1 user=u password='Secret unterminated",
    ] {
        let out = planck_cmd(Path::new("."))
            .args(["-v", "--database-url", url, "migrate"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(
            !err.contains("Secret"),
            "password leaked for {url:?}: {err}"
        );
        assert!(!out.status.success());
    }
}

/// Issue 8, 3.1: a `PGPASSWORD` with a space or a quote was rejected as a
/// malformed URL (exit 2); now it is a password like any other.
#[test]
fn cli_accepts_pgpassword_with_space_and_quote() {
    let out = planck_cmd(Path::new("."))
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", "1")
        .env("PGUSER", "u")
        .env("PGPASSWORD", "it's a Secret")
        .env_remove("DATABASE_URL")
        .env_remove("PLANCK_DATABASE_URL")
        .arg("migrate")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_exit(&out, 3);
    assert!(
        err.contains("cannot connect to postgres://u:***@127.0.0.1:1/"),
        "{err}"
    );
    assert!(!err.contains("Secret"), "{err}");
}

/// Issue 8, 3.4: the errors a transaction-mode pooler causes (a prepared
/// statement missing or already there on the server connection it picked)
/// map to the hint to use the direct or session-mode string. The server
/// raises the same SQLSTATEs when asked directly.
#[test]
fn pooler_hint_recognises_the_servers_prepared_statement_errors() {
    let db = test_db!();
    let conn = db.conn();
    let (missing, duplicate, other) = block_on(async move {
        let c = conn.connect().await.unwrap();
        let missing = c.batch_execute("EXECUTE s_missing").await.unwrap_err();
        c.batch_execute("PREPARE s_dup AS SELECT 1").await.unwrap();
        let duplicate = c
            .batch_execute("PREPARE s_dup AS SELECT 1")
            .await
            .unwrap_err();
        let other = c
            .batch_execute("SELECT * FROM no_such_table")
            .await
            .unwrap_err();
        (missing, duplicate, other)
    });
    let hint = planck::db::pooler_hint(&missing).expect("26000 gets the hint");
    assert!(hint.contains("session-mode"), "{hint}");
    assert!(
        planck::db::pooler_hint(&duplicate).is_some(),
        "42P05 gets the hint"
    );
    assert!(planck::db::pooler_hint(&other).is_none());
}

/// Issue 8, 3.2: `sslmode=require` against a server without TLS says so
/// and how to fix it (the test cluster runs with ssl = off).
#[test]
fn require_against_a_server_without_tls_explains() {
    let port = common::cluster().port;
    let e = try_connect(
        &format!("host=127.0.0.1 port={port} user=planck dbname=postgres sslmode=require"),
        &LibpqEnv::empty(),
    )
    .unwrap_err();
    assert!(
        e.contains("sslmode=require needs a server with ssl=on"),
        "{e}"
    );
    // prefer goes on in plain text.
    assert_eq!(
        try_connect(
            &format!("host=127.0.0.1 port={port} user=planck dbname=postgres sslmode=prefer"),
            &LibpqEnv::empty(),
        ),
        Ok(false)
    );
}

/// Issue 8, 3.3: through the CLI, a silent server is a database error
/// (exit 3) naming the host that timed out.
#[test]
fn cli_timeout_exits_3_naming_the_host() {
    let (port, _held) = silent_listener();
    let out = planck_cmd(Path::new("."))
        .args([
            "--database-url",
            &format!("postgres://u@127.0.0.1:{port}/d?connect_timeout=1"),
            "migrate",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("127.0.0.1:{port}: timed out after 1 s")),
        "{err}"
    );
}
