//! planck on Citus (issue 36, point 1): `planck db start --citus-workers N`
//! makes the managed cluster a Citus coordinator with N worker servers, and
//! says how to install Citus when it is missing. Each test runs the real
//! binary in a project folder of its own (as tests/cluster.rs does). The tests
//! that need Citus skip through `skip!` (counted by `.ci/run`): "not
//! applicable" on a major Citus 13.2 does not support (14, 18), "could not
//! run" when citus.so is not installed for the server binaries in use, which
//! fails under CI (`.ci/run` builds it from ../shared/citus for 15, 16, 17).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{
    Destroy, assert_exit, bindir, planck_cmd, planck_in as planck, project_dir, stderr, stdout,
};

/// The rows of `sql` (`psql -tA`), panicking when psql fails.
fn psql(url: &str, sql: &str) -> Vec<String> {
    let out = Command::new("psql")
        .arg(url)
        .args(["-tAX", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .env("PGSSLMODE", "disable")
        .output()
        .unwrap();
    assert!(out.status.success(), "psql {sql}: {}", stderr(&out));
    stdout(&out).lines().map(str::to_string).collect()
}

fn status(dir: &Path) -> serde_json::Value {
    let out = planck(dir, &["--format", "json", "db", "status"]);
    assert_exit(&out, 0);
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// Pids of the processes running in `dir` (a postmaster runs in its data
/// directory).
fn processes_in(dir: &Path) -> usize {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return 0;
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == dir))
        .count()
}

#[test]
fn db_start_with_two_citus_workers_distributes_a_table_over_both() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let out = planck(p.path(), &["db", "start", "--citus-workers", "2"]);
    assert_exit(&out, 0);
    let url = stdout(&out).trim().to_string();

    let nodes = psql(&url, "SELECT count(*) FROM citus_get_active_worker_nodes()");
    assert_eq!(nodes, ["2"]);
    psql(
        &url,
        "CREATE TABLE ads (company_id bigint, id bigint, PRIMARY KEY (company_id, id));
         SELECT create_distributed_table('ads', 'company_id');
         INSERT INTO ads SELECT g % 50, g FROM generate_series(1, 1000) g;",
    );
    // The shards, and the rows, are on both workers, not on the coordinator.
    let placed = psql(
        &url,
        "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'ads'::regclass",
    );
    assert_eq!(placed, ["2"]);
    let on_coordinator = psql(
        &url,
        "SELECT count(*) FROM citus_shards s, pg_dist_node n
          WHERE s.table_name = 'ads'::regclass AND s.nodeport = n.nodeport AND n.groupid = 0",
    );
    assert_eq!(on_coordinator, ["0"]);
    assert_eq!(psql(&url, "SELECT count(*) FROM ads"), ["1000"]);

    // `db status` names the workers, running; `db stop` stops them too.
    let s = status(p.path());
    let workers = s["citus_workers"]
        .as_array()
        .expect("citus_workers in status");
    assert_eq!(workers.len(), 2, "{s:#}");
    assert!(workers.iter().all(|w| w["state"] == "running"), "{s:#}");
    let data_dirs: Vec<PathBuf> = workers
        .iter()
        .map(|w| PathBuf::from(w["data_dir"].as_str().unwrap()))
        .collect();
    assert!(data_dirs.iter().all(|d| processes_in(d) > 0));
    assert_exit(&planck(p.path(), &["db", "stop"]), 0);
    let s = status(p.path());
    assert_eq!(s["state"], "stopped", "{s:#}");
    assert!(
        s["citus_workers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["state"] == "stopped"),
        "{s:#}"
    );
    assert!(data_dirs.iter().all(|d| processes_in(d) == 0));

    // A plain `db url` (no flag) brings the whole Citus cluster back, data
    // and all, even when a worker's last port was taken meanwhile: the
    // worker moves and the coordinator is told (citus_update_node).
    let old_port = u16::try_from(workers[0]["port"].as_u64().unwrap()).unwrap();
    let squatter = std::net::TcpListener::bind(("127.0.0.1", old_port)).unwrap();
    let out = planck(p.path(), &["db", "url"]);
    assert_exit(&out, 0);
    drop(squatter);
    let url = stdout(&out).trim().to_string();
    let new_port = status(p.path())["citus_workers"][0]["port"]
        .as_u64()
        .unwrap();
    assert_ne!(new_port, u64::from(old_port));
    assert_eq!(psql(&url, "SELECT count(*) FROM ads"), ["1000"]);
    assert_eq!(
        psql(
            &url,
            "SELECT node_port FROM citus_get_active_worker_nodes() ORDER BY node_port"
        )
        .iter()
        .filter(|p| **p == new_port.to_string())
        .count(),
        1
    );
    assert_eq!(
        psql(&url, "SELECT count(*) FROM citus_get_active_worker_nodes()"),
        ["2"]
    );

    // Fewer workers than it has is refused, as bad usage.
    let out = planck(p.path(), &["db", "start", "--citus-workers", "1"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("already has 2 Citus workers"),
        "{}",
        stderr(&out)
    );

    // `db destroy` stops and deletes the workers with the coordinator.
    assert_exit(&planck(p.path(), &["db", "destroy", "--wait", "0"]), 0);
    assert!(
        data_dirs
            .iter()
            .all(|d| processes_in(d) == 0 && !d.exists())
    );
}

/// Server binaries with no Citus beside them: planck's `bin/` of symlinks
/// to the real ones, so `../lib` holds no citus.so.
fn binaries_without_citus(root: &Path) -> PathBuf {
    let bin = root.join("pg/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for b in ["initdb", "pg_ctl", "postgres"] {
        std::os::unix::fs::symlink(bindir().join(b), bin.join(b)).unwrap();
    }
    bin
}

#[test]
fn without_citus_installed_db_start_says_how_to_install_it_and_makes_nothing() {
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let bin = binaries_without_citus(p.path());
    let out = planck_cmd(p.path())
        .env("PLANCK_PG_BINDIR", &bin)
        .args(["db", "start", "--citus-workers", "2"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("Citus is not installed for PostgreSQL"),
        "{err}"
    );
    assert!(err.contains("hint: install Citus 13"), "{err}");
    assert!(!p.path().join(".planck/data").exists());

    // The same through planck.toml; and a bad count there is a usage error.
    std::fs::write(
        p.path().join("planck.toml"),
        "[database]\ncitus_workers = 2\n",
    )
    .unwrap();
    let out = planck_cmd(p.path())
        .env("PLANCK_PG_BINDIR", &bin)
        .args(["db", "start"])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    assert!(stderr(&out).contains("Citus is not installed"));
    std::fs::write(
        p.path().join("planck.toml"),
        "[database]\ncitus_workers = 0\n",
    )
    .unwrap();
    let out = planck(p.path(), &["db", "start"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("[database] citus_workers = 0"),
        "{}",
        stderr(&out)
    );
    let out = planck(p.path(), &["db", "start", "--citus-workers", "0"]);
    assert_exit(&out, 2);
}

/// The Citus tutorial's schema, distributed by the company, with rows.
const TUTORIAL: &str = "
CREATE TABLE companies (id bigint PRIMARY KEY, name text NOT NULL);
CREATE TABLE campaigns (company_id bigint REFERENCES companies, id bigint, name text,
  budget int, PRIMARY KEY (company_id, id));
CREATE TABLE ads (company_id bigint, id bigint, campaign_id bigint, name text, clicks int,
  PRIMARY KEY (company_id, id),
  FOREIGN KEY (company_id, campaign_id) REFERENCES campaigns (company_id, id));
SELECT create_distributed_table('companies', 'id');
SELECT create_distributed_table('campaigns', 'company_id');
SELECT create_distributed_table('ads', 'company_id');
INSERT INTO companies SELECT g, 'c' || g FROM generate_series(1, 200) g;
INSERT INTO campaigns SELECT g % 200 + 1, g, 'k' || g, g % 1000 FROM generate_series(1, 4000) g;
INSERT INTO ads SELECT c.company_id, c.id * 10 + k, c.id, 'a', k FROM campaigns c, generate_series(1, 5) k;
ANALYZE;
";

/// A coordinator with two workers in a fresh project, the tutorial's tables
/// distributed and filled; destroyed when dropped (before its folder).
struct Tutorial {
    _destroy: Destroy,
    dir: tempfile::TempDir,
    url: String,
}

impl Tutorial {
    fn start() -> Tutorial {
        let dir = project_dir();
        let destroy = Destroy(dir.path().to_path_buf());
        let out = planck(dir.path(), &["db", "start", "--citus-workers", "2"]);
        assert_exit(&out, 0);
        let url = stdout(&out).trim().to_string();
        psql(&url, TUTORIAL);
        Tutorial {
            _destroy: destroy,
            dir,
            url,
        }
    }

    /// `planck --format json explain` of `statements` (recorded by a
    /// superuser): its output and report.
    fn explain(&self, statements: &[&str]) -> (Output, serde_json::Value) {
        let mut text = String::from("format_version = 2\n");
        for q in statements {
            text.push_str(&format!(
                "\n[[statement]]\nrole = \"planck\"\nbypass_rls = true\nquery = '\'\'\n{q}\n'\'\'\n"
            ));
        }
        std::fs::write(self.dir.path().join("q.toml"), text).unwrap();
        let out = planck(
            self.dir.path(),
            &["--format", "json", "explain", "--queries", "q.toml"],
        );
        let v = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(&out)));
        (out, v)
    }
}

/// The `Task Count` of a plan's Citus job (1: a router plan, one shard).
fn task_count(plan: &serde_json::Value) -> Option<u64> {
    plan[0]["Plan"]["Distributed Query"]["Job"]["Task Count"].as_u64()
}

/// Issue 36, 3: on Citus the generic plan of a multi-shard statement fails
/// ("could not create distributed plan ... parameters in SQL functions",
/// 0A000) and was reported as a planning failure. Every statement is now
/// planned with the sampled values, as Citus makes the application run it.
#[test]
fn explain_on_citus_plans_router_multi_shard_and_colocated_join_statements() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let t = Tutorial::start();
    let statements = [
        "SELECT * FROM ads WHERE company_id = $1 AND id = $2",
        "SELECT * FROM ads WHERE campaign_id = $1",
        "SELECT a.name, c.name FROM ads a JOIN campaigns c ON c.company_id = a.company_id AND c.id = a.campaign_id WHERE a.company_id = $1",
        "SELECT company_id, count(*) FROM ads WHERE clicks > $1 GROUP BY company_id",
    ];
    let (_, v) = t.explain(&statements);
    let stmts = v["statements"].as_array().unwrap();
    assert_eq!(stmts.len(), 4, "{v:#}");
    // The multi-shard check names exactly the statements sent to every shard.
    let mut flagged: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "multi-shard")
        .map(|f| {
            assert_eq!(f["relation"], "ads", "{f:#}");
            assert!(
                f["message"]
                    .as_str()
                    .unwrap()
                    .contains("fans out to 32 shards"),
                "{f:#}"
            );
            f["statement_id"].as_str().unwrap()
        })
        .collect();
    flagged.sort_unstable();
    // The router statement reads ads_pkey on its shard (ads_pkey_<shard id>
    // in the worker plan): the index is used, not reported unused.
    let unused: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "unused-index")
        .filter_map(|f| f["index"].as_str())
        .collect();
    assert!(!unused.contains(&"ads_pkey"), "{unused:?}");
    let mut fanning: Vec<&str> = stmts
        .iter()
        .filter(|s| !s["query"].as_str().unwrap().contains("company_id = $1"))
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    fanning.sort_unstable();
    assert_eq!(flagged, fanning, "{v:#}");
    for (s, q) in stmts.iter().zip(statements) {
        assert_eq!(s["status"], "explained", "{q}: {s:#}");
        let notes = s["notes"].to_string();
        assert!(
            !notes.contains("could not create distributed plan"),
            "{q}: {notes}"
        );
        let custom = s["plans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "custom")
            .unwrap_or_else(|| panic!("{q}: no custom plan: {s:#}"));
        let tasks = task_count(&custom["plan"]).unwrap_or_else(|| panic!("{q}: {custom:#}"));
        let router = q.contains("company_id = $1");
        assert_eq!(tasks == 1, router, "{q}: {tasks} tasks");
        if !router {
            // The multi-shard statements have no generic plan on Citus, and say so.
            assert!(notes.contains("no generic plan on Citus"), "{q}: {notes}");
            assert!(
                s["plans"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|p| p["kind"] != "generic")
            );
        }
    }
}

/// A plain managed server already running cannot become a coordinator
/// without a restart (Citus is preloaded): said with the way out, before
/// any worker is made; after `db stop` the same command makes it one.
#[test]
fn a_running_plain_server_is_restarted_into_a_coordinator_only_when_asked_to() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    assert_exit(&planck(p.path(), &["db", "start"]), 0);
    let out = planck(p.path(), &["db", "start", "--citus-workers", "1"]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("runs without Citus"), "{err}");
    assert!(err.contains("hint: run `planck db stop`"), "{err}");
    assert!(!p.path().join(".planck/citus-workers").exists());
    assert_exit(&planck(p.path(), &["db", "stop"]), 0);
    let out = planck(p.path(), &["db", "start", "--citus-workers", "1"]);
    assert_exit(&out, 0);
    let url = stdout(&out).trim().to_string();
    assert_eq!(
        psql(&url, "SELECT count(*) FROM citus_get_active_worker_nodes()"),
        ["1"]
    );
}

/// seed through a coordinator: rows reach the shards, a second seed with
/// `--truncate` empties the shards first (under the superuser's replica
/// mode Citus's truncate trigger did not fire: the reload failed on the
/// shards' unique indexes, 23505), and the summary's sizes are the shards'
/// (it measured the coordinator's empty shell tables).
#[test]
fn seed_on_citus_fills_the_shards_reseeds_with_truncate_and_measures_the_shards() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let p = project_dir();
    let _d = Destroy(p.path().to_path_buf());
    let out = planck(p.path(), &["db", "start", "--citus-workers", "2"]);
    assert_exit(&out, 0);
    let url = stdout(&out).trim().to_string();
    psql(
        &url,
        "CREATE TABLE companies (id bigint PRIMARY KEY, name text NOT NULL);
         CREATE TABLE ads (company_id bigint REFERENCES companies, id bigint, name text,
           PRIMARY KEY (company_id, id));
         SELECT create_distributed_table('companies', 'id');
         SELECT create_distributed_table('ads', 'company_id');",
    );
    let seed = || {
        planck(
            p.path(),
            &[
                "--format",
                "json",
                "seed",
                "--no-spec",
                "--rows",
                "3000",
                "--truncate",
            ],
        )
    };
    let first = seed();
    assert_exit(&first, 0);
    let again = seed();
    assert_exit(&again, 0);
    let counts = psql(
        &url,
        "SELECT (SELECT count(*) FROM companies) || ' ' || (SELECT count(*) FROM ads)",
    );
    assert_eq!(counts, vec!["3000 6000".to_string()], "{}", stderr(&again));
    let v: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    let ads = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "ads")
        .unwrap_or_else(|| panic!("{v:#}"));
    let shell: i64 = psql(&url, "SELECT pg_table_size('ads')")[0]
        .parse()
        .unwrap();
    let shards: i64 = psql(&url, "SELECT citus_table_size('ads')")[0]
        .parse()
        .unwrap();
    assert!(
        shell < 100_000,
        "premise: the coordinator's table is a shell ({shell} bytes)"
    );
    let said = ads["data_bytes"].as_i64().unwrap();
    assert!(
        said >= shards * 9 / 10 && said <= shards * 11 / 10,
        "the summary says {said} bytes, the shards hold {shards}"
    );
    // The spread over the shards: the heaviest shard is the one holding
    // the most rows, as the workers count them.
    let spread = &ads["shards"];
    assert_eq!(spread["shards"], 32, "{ads:#}");
    assert_eq!(spread["rows"], 6000, "{ads:#}");
    let heaviest = spread["heaviest_shard"].as_i64().unwrap();
    let top = psql(
        &url,
        "SELECT shardid || ' ' || result FROM run_command_on_shards('ads', 'SELECT count(*) FROM %s') \
         ORDER BY result::bigint DESC, shardid LIMIT 1",
    );
    assert_eq!(
        top,
        vec![format!("{heaviest} {}", spread["heaviest_rows"])],
        "{ads:#}"
    );
    assert_eq!(spread["workers"].as_array().unwrap().len(), 2, "{ads:#}");
}

/// A join off the distribution columns has a plan on Citus (planck plans
/// with citus.enable_repartition_joins on, and says so) and is reported as
/// `repartition-join` naming both tables; the co-located join is not.
#[test]
fn a_repartition_join_is_planned_and_reported() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let t = Tutorial::start();
    let statements = [
        "SELECT count(*) FROM ads a JOIN campaigns c ON c.id = a.campaign_id WHERE a.name = $1",
        "SELECT a.name, c.name FROM ads a JOIN campaigns c ON c.company_id = a.company_id AND c.id = a.campaign_id WHERE a.company_id = $1",
    ];
    let (out, v) = t.explain(&statements);
    assert!(
        stderr(&out).contains("citus.enable_repartition_joins = on"),
        "{}",
        stderr(&out)
    );
    let stmts = v["statements"].as_array().unwrap();
    for s in stmts {
        assert_eq!(s["status"], "explained", "{s:#}");
    }
    let found: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "repartition-join")
        .collect();
    assert_eq!(found.len(), 1, "{v:#}");
    assert_eq!(found[0]["statement_id"], stmts[0]["id"], "{v:#}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "joins ads (distributed by company_id), campaigns (distributed by company_id) off \
             their distribution columns"
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "fix: join on the distribution columns (ads.company_id = campaigns.company_id)"
        ),
        "{message}"
    );
}

/// `planck record` through the relay against a Citus coordinator with the
/// default sslmode: `CREATE EXTENSION citus` turned TLS on with a
/// self-signed X.509 version 1 certificate, which the relay accepts without
/// verifying, as libpq's `prefer` does. Both statements are recorded, and
/// the relay saw the one connection (no refusal, no warning).
#[test]
fn record_through_the_relay_with_the_default_sslmode() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let t = Tutorial::start();
    let (p, url) = (&t.dir, &t.url);
    assert!(!url.contains("sslmode"), "{url}");
    assert_eq!(psql(url, "SHOW ssl"), vec!["on".to_string()], "premise");
    std::fs::write(
        p.path().join("t.sql"),
        "SELECT count(*) FROM ads WHERE company_id = 7;\n\
         UPDATE ads SET clicks = clicks + 1 WHERE company_id = 7 AND id = 1;\n",
    )
    .unwrap();
    let out = planck(
        p.path(),
        &[
            "--format",
            "json",
            "record",
            "--",
            "psql",
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-f",
            "t.sql",
        ],
    );
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(&out)));
    assert_eq!(v["relay"]["connections"], 1, "{v:#}");
    assert_eq!(v["warnings"], serde_json::json!([]), "{v:#}");
    let file = std::fs::read_to_string(p.path().join("queries/recorded.toml")).unwrap();
    for q in [
        "SELECT count(*) FROM ads WHERE company_id = $1",
        "UPDATE ads SET clicks = clicks + $1 WHERE company_id = $2 AND id = $3",
    ] {
        assert!(file.contains(q), "{q} not in:\n{file}");
    }
}

/// Issue 36: a transaction updating one campaign of one company, as
/// `planck record` writes it (the superuser's role), its row held while the
/// transaction reads the company's ads.
const HOT_CAMPAIGN: &str = r#"format_version = 2

[[statement]]
id = "c_update"
role = "planck"
bypass_rls = true
calls = 1
query = "UPDATE campaigns SET budget = budget + 1 WHERE company_id = 8 AND id = 207"

[[statement]]
id = "c_read"
role = "planck"
bypass_rls = true
calls = 1
query = "SELECT count(*) FROM ads WHERE company_id = 8"

[[transaction]]
id = "t"
name = "T"
statements = ["c_update", "c_read"]
calls = 1
think_ms = 20
manual = true
"#;

/// Replay through the coordinator: the clients' UPDATEs of one row wait on
/// the worker holding its shard, where the coordinator's own pg_locks and
/// pg_stat_activity show no lock wait (its backends wait on the worker's
/// connection, `Client`/`ClientRead`): no hotspot was reported. The
/// sampler reads Citus's view of every node's locks: the top hotspot names
/// the distributed table, the row's key, its shard and worker, and the
/// statement that waits and the one that took the lock.
#[test]
fn replay_on_citus_names_the_hot_row_on_its_shard() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let t = Tutorial::start();
    std::fs::write(t.dir.path().join("q.toml"), HOT_CAMPAIGN).unwrap();
    let out = planck(
        t.dir.path(),
        &[
            "--format",
            "json",
            "replay",
            "--queries",
            "q.toml",
            "--warmup",
            "0",
            "--ladder",
            "4",
            "--duration",
            "2s",
        ],
    );
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(&out)));
    let hotspots = v["hotspots"].as_array().unwrap();
    let top = hotspots
        .iter()
        .filter(|h| h["outside_workload"].is_null())
        .max_by_key(|h| h["samples"].as_u64())
        .unwrap_or_else(|| panic!("no hotspot: {v:#}"));
    let update = "UPDATE campaigns SET budget = budget + 1 WHERE company_id = 8 AND id = 207";
    assert_eq!(top["relation"], "campaigns", "{top:#}");
    assert_eq!(top["waiting_statement"], update, "{top:#}");
    assert_eq!(top["blocking_statement"], update, "{top:#}");
    assert_eq!(top["transaction"], "T", "{top:#}");
    // The shard holding company 8's rows, and its worker.
    let place = psql(
        &t.url,
        "SELECT shard_name || ' on worker ' || nodename || ':' || nodeport FROM citus_shards \
         WHERE shardid = get_shard_id_for_distribution_column('campaigns', 8)",
    );
    assert_eq!(
        top["row"],
        format!("company_id = 8, id = 207 (shard {})", place[0]),
        "{top:#}"
    );
    // The step counted its lock waits.
    assert!(v["steps"][0]["lock_samples"].as_u64() > Some(0), "{v:#}");
    // A replay rolls back: the row is as it was.
    assert_eq!(
        psql(
            &t.url,
            "SELECT budget FROM campaigns WHERE company_id = 8 AND id = 207"
        ),
        ["207"]
    );
}

/// Issue 36, 3: one company owning most of `ads` (50,000 rows in one shard
/// of 32) is reported as `tenant-shard-skew`, naming the table, its
/// distribution column, the shard and its worker; and the multi-shard
/// finding names the distribution column and the filter it lacks. A
/// reference table beside them (no distribution column) reads as one.
#[test]
fn a_heavy_tenant_shard_is_reported_and_findings_name_the_distribution_column() {
    if let Some((kind, why)) = common::citus_unavailable() {
        crate::skip!(kind = kind, "{why}");
    }
    let t = Tutorial::start();
    psql(
        &t.url,
        "INSERT INTO campaigns VALUES (1, 1000000, 'big', 1);
         INSERT INTO ads SELECT 1, 1000000 + g, 1000000, repeat('a', 50), g
           FROM generate_series(1, 50000) g;
         CREATE TABLE countries (code text PRIMARY KEY, name text);
         SELECT create_reference_table('countries');
         ANALYZE;",
    );
    let shard = psql(
        &t.url,
        "SELECT get_shard_id_for_distribution_column('ads', 1) || ' ' || nodename || ':' || nodeport \
           FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('ads', 1)",
    );
    let (shard, node) = shard[0].split_once(' ').unwrap();
    let (_, v) = t.explain(&[
        "SELECT * FROM ads WHERE campaign_id = $1",
        "SELECT a.name, c.name FROM ads a JOIN countries c ON c.code = a.name WHERE a.clicks = $1",
    ]);
    let findings = v["findings"].as_array().unwrap();
    let skew: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| f["check"] == "tenant-shard-skew")
        .collect();
    assert_eq!(skew.len(), 1, "{v:#}");
    assert_eq!(skew[0]["relation"], "ads", "{v:#}");
    assert_eq!(skew[0]["severity"], "warning", "{v:#}");
    let message = skew[0]["message"].as_str().unwrap();
    eprintln!("tenant-shard-skew: {message}");
    assert!(
        message.starts_with(&format!(
            "ads (distributed by company_id): its largest shard, shard {shard} on {node}, holds "
        )),
        "{message}"
    );
    assert!(
        message.contains("isolate_tenant_to_new_shard('ads'"),
        "{message}"
    );
    // The statements reading the table: both.
    let ids: Vec<&str> = v["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(
        message.contains(&format!(
            "(recorded statements reading it: {})",
            ids.join(", ")
        )),
        "{message}"
    );
    let multi: Vec<&str> = findings
        .iter()
        .filter(|f| f["check"] == "multi-shard")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(!multi.is_empty(), "{v:#}");
    for m in &multi {
        eprintln!("multi-shard: {m}");
        assert!(
            m.contains("shards of ads (distributed by company_id)")
                && m.contains("fix: filter on ads.company_id (the tenant)"),
            "{m}"
        );
    }
    assert!(
        multi
            .iter()
            .any(|m| m.contains("countries (a reference table)")),
        "{multi:?}"
    );
}
