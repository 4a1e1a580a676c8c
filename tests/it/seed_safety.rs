//! `planck seed` never loses or corrupts data: issue 8 sections 2.3 to 2.7,
//! each against a real server and, where a signal or a race is the point,
//! real `planck` processes.

use crate::common;

use std::process::{Child, Output, Stdio};
use std::time::Duration;

use common::{TestDb, assert_exit, project_dir, repo_root, stderr};

fn count(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql)[0].parse().unwrap()
}

/// Every foreign key of the public schema with its validity.
fn fks(db: &TestDb) -> Vec<String> {
    db.query_strings(
        "SELECT conrelid::regclass || ':' || conname || ':' || convalidated || ':' || pg_get_constraintdef(oid)
           FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace ORDER BY 1",
    )
}

/// Nothing in schema planck but `planck.seeded` (and its key's index) and,
/// after a stopped seed, `planck.seed_run` (the record the next seed
/// finishes it from), no planck_seed_saved, no NOT VALID constraint.
fn assert_nothing_left(db: &TestDb) {
    assert_eq!(
        db.query_strings(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = 'planck' AND c.relname NOT IN ('seeded', 'seeded_pkey', 'seed_run', 'seed_run_pkey')
             UNION ALL SELECT count(*) FROM pg_class WHERE relname LIKE 'planck_seed_saved%'
             UNION ALL SELECT count(*) FROM pg_constraint WHERE NOT convalidated"
        ),
        vec!["0", "0", "0"],
        "planck left something behind (in schema planck other than planck.seeded, the record of \
         what it seeded, and planck.seed_run, the record of a stopped seed; planck_seed_saved; \
         NOT VALID constraints)"
    );
}

fn example_spec_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = project_dir();
    let p = dir.path().join("spec.toml");
    std::fs::copy(repo_root().join("seeds/example.toml"), &p).unwrap();
    (dir, p)
}

/// Starts `planck seed` of the bundled example at a scale whose COPY into
/// items lasts long enough to be caught, one table at a time (parents load
/// before children), and waits until that COPY runs.
fn seed_until_items_copy(db: &TestDb, dir: &std::path::Path, spec: &std::path::Path) -> Child {
    let child = common::spawn_seed(db, dir, spec, "1");
    wait_for_items_copy(db);
    child
}

fn wait_for_items_copy(db: &TestDb) {
    assert!(
        common::on_items_copy(db, "count(*)", 1500),
        "never saw the COPY into items"
    );
}

fn signal(child: &Child, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn planck(db: &TestDb, args: &[&str]) -> Output {
    let dir = project_dir();
    db.planck(args, dir.path())
}

/// Loaded tables' identity sequences are past their keys: an application
/// INSERT with the default key does not collide.
fn assert_sequences_moved(db: &TestDb) {
    let accounts = count(db, "SELECT count(*) FROM accounts");
    assert!(accounts > 0, "accounts did not load before the signal");
    db.exec(
        "INSERT INTO accounts (name, slug) VALUES ('after the signal', 'fresh-slug-after-signal')",
    );
    assert_eq!(count(db, "SELECT count(*) FROM accounts"), accounts + 1);
}

/// Issue 8 section 2.3: SIGTERM (timeout, docker stop, CI cancellation)
/// killed planck at once with every foreign key dropped. Now: exit 143,
/// every foreign key exists and is valid, nothing of planck's is left.
/// Section 2.4 too: the tables that committed have their sequences moved.
#[test]
fn sigterm_mid_load_exits_143_with_every_foreign_key_back_and_valid() {
    let db = test_db!(migrated);
    let before = fks(&db);
    assert!(before.len() > 5, "{before:?}");
    let (dir, spec) = example_spec_file();
    let child = seed_until_items_copy(&db, dir.path(), &spec);
    signal(&child, "-TERM");
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 143);
    let err = stderr(&out);
    assert!(
        err.contains("error: interrupted: SIGTERM; loaded:"),
        "{err}"
    );
    assert!(err.contains("indexes and foreign keys restored"), "{err}");
    assert_eq!(fks(&db), before);
    assert_eq!(count(&db, "SELECT count(*) FROM items"), 0);
    assert_nothing_left(&db);
    assert_sequences_moved(&db);
}

/// Issue 8 section 2.3: SIGHUP (a closed terminal) is handled the same way, exit 129.
#[test]
fn sighup_mid_load_exits_129_with_every_foreign_key_back() {
    let db = test_db!(migrated);
    let before = fks(&db);
    let (dir, spec) = example_spec_file();
    let child = seed_until_items_copy(&db, dir.path(), &spec);
    signal(&child, "-HUP");
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 129);
    assert_eq!(fks(&db), before);
    assert_nothing_left(&db);
}

/// Issue 8 section 2.4: a first seed interrupted by Ctrl-C left sequences
/// behind the loaded keys (the application's next INSERT failed with a
/// duplicate key).
#[test]
fn ctrl_c_leaves_the_sequences_of_committed_tables_past_their_keys() {
    let db = test_db!(migrated);
    let (dir, spec) = example_spec_file();
    let child = seed_until_items_copy(&db, dir.path(), &spec);
    signal(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 130);
    assert_sequences_moved(&db);
    assert_nothing_left(&db);
}

/// Issue 8 section 2.3: after a SIGKILL every saved foreign key waits; the
/// next command says so and `planck seed --restore` restores them. A saved
/// key that no longer applies (its column was renamed) is reported with a
/// hint and a way out (`--forget`), not a dead end.
#[test]
fn sigkill_mid_load_then_restore_brings_every_foreign_key_back_and_a_renamed_column_has_a_hint() {
    let db = test_db!(migrated);
    let before = fks(&db);
    let (dir, spec) = example_spec_file();
    let mut child = seed_until_items_copy(&db, dir.path(), &spec);
    child.kill().unwrap();
    let _ = child.wait();
    // The kill left the foreign keys dropped and saved.
    assert!(fks(&db).len() < before.len());
    let saved = count(&db, "SELECT count(*) FROM planck.seed_saved");
    assert_eq!(saved as usize, before.len() - fks(&db).len());
    // The next command that touches the database says so. (--truncate: the
    // tables that loaded before the kill hold rows, which a run without it
    // refuses to add to, a dry run too.)
    let (dir2, spec2) = example_spec_file();
    let dry = db.planck(
        &[
            "seed",
            "--spec",
            spec2.to_str().unwrap(),
            "--scale",
            "0.001",
            "--dry-run",
            "--truncate",
        ],
        dir2.path(),
    );
    assert_exit(&dry, 0);
    assert!(
        stderr(&dry).contains("wait to be restored")
            && stderr(&dry).contains("planck seed --restore"),
        "{}",
        stderr(&dry)
    );
    // So do explain and migrate (issue 8, 2.3: "every command that touches
    // the database warns"); migrate needs its folder to get that far.
    std::fs::create_dir_all(dir2.path().join("migrations")).unwrap();
    for args in [
        &["migrate"][..],
        &["explain", "--queries", "nothing.toml"][..],
    ] {
        std::fs::write(dir2.path().join("nothing.toml"), "format_version = 2\n").unwrap();
        let out = db.planck(args, dir2.path());
        assert!(
            stderr(&out).contains("wait to be restored"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A column of one saved key is renamed meanwhile.
    let victim = db.query_strings(
        "SELECT name FROM planck.seed_saved WHERE table_name = 'public.items' AND def LIKE 'FOREIGN KEY (pouch_id)%'",
    );
    assert_eq!(victim.len(), 1, "no saved key on items.pouch_id");
    db.exec("ALTER TABLE items RENAME COLUMN pouch_id TO bag_id");
    let out = planck(&db, &["seed", "--restore"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "saved foreign key {} on public.items no longer applies",
            victim[0]
        )),
        "{err}"
    );
    assert!(err.contains("column \"pouch_id\""), "{err}");
    assert!(
        err.contains(&format!("planck seed --restore --forget {}", victim[0])),
        "{err}"
    );
    // Every other key is back and valid already.
    assert_eq!(fks(&db).len(), before.len() - 1, "{err}");
    assert_eq!(
        db.query_strings("SELECT conname FROM pg_constraint WHERE NOT convalidated"),
        Vec::<String>::new(),
        "{err}"
    );
    // The way out: re-create it by hand to fit, then --restore forgets the copy.
    db.exec(&format!(
        "ALTER TABLE items ADD CONSTRAINT {} FOREIGN KEY (bag_id) REFERENCES pouches(id) ON DELETE CASCADE",
        victim[0]
    ));
    let out = planck(&db, &["seed", "--restore"]);
    assert_exit(&out, 0);
    assert_eq!(fks(&db).len(), before.len());
    assert_nothing_left(&db);
}

/// `--forget` drops planck's copy of a key that no longer applies.
#[test]
fn restore_forget_drops_the_copy_of_a_key_that_no_longer_applies() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE parents (id int PRIMARY KEY);
         CREATE TABLE kids (id int PRIMARY KEY, parent_id int CONSTRAINT kids_parent_fk REFERENCES parents)",
    );
    // A seed killed while loading leaves the key saved: simulate the state a
    // kill leaves through planck's own bookkeeping (a real seed, then a kill,
    // is what the test above does).
    let dir = project_dir();
    let out = db.planck(&["seed", "--rows", "10"], dir.path());
    assert_exit(&out, 0);
    assert_nothing_left(&db);
    let conn = db.conn();
    common::block_on(async move {
        let mut c = conn.connect().await.unwrap();
        planck::bookkeeping::ensure(&mut c).await.unwrap();
        let tx = c.transaction().await.unwrap();
        planck::bookkeeping::save_fk(
            &tx,
            "public.kids",
            "kids_parent_fk",
            "FOREIGN KEY (parent_id) REFERENCES parents(id)",
        )
        .await
        .unwrap();
        tx.batch_execute("ALTER TABLE kids DROP CONSTRAINT kids_parent_fk")
            .await
            .unwrap();
        tx.commit().await.unwrap();
    });
    db.exec("ALTER TABLE kids DROP COLUMN parent_id");
    let out = planck(&db, &["seed", "--restore"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--forget kids_parent_fk"),
        "{}",
        stderr(&out)
    );
    let out = planck(&db, &["seed", "--restore", "--forget", "kids_parent_fk"]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("forgot planck's copy of kids_parent_fk"),
        "{}",
        stderr(&out)
    );
    assert_nothing_left(&db);
    let out = planck(&db, &["seed", "--restore", "--forget", "nope"]);
    assert_exit(&out, 2);
}

/// Issue 8 section 2.6: the bookkeeping lived in the user's public schema
/// and stayed after every seed. Now it is in schema planck, and after a
/// seed that completes nothing is left.
#[test]
fn a_completed_seed_leaves_nothing_in_the_database() {
    let db = test_db!(migrated);
    let out = planck(&db, &["seed", "--rows", "20"]);
    assert_exit(&out, 0);
    assert_nothing_left(&db);
    // The record of the seed under way goes with its end.
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM pg_class WHERE relname = 'seed_run'"
        ),
        0
    );
    assert!(count(&db, "SELECT count(*) FROM items") > 0);
}

/// Issue 8 section 2.6: rows of the previous version's
/// `public.planck_seed_saved` are read once (migrated), so upgrades lose nothing.
#[test]
fn the_old_public_planck_seed_saved_is_migrated_and_restored() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE parents (id int PRIMARY KEY);
         CREATE TABLE kids (id int PRIMARY KEY, parent_id int);
         CREATE TABLE public.planck_seed_saved (
            id bigserial PRIMARY KEY,
            kind text NOT NULL CHECK (kind IN ('index', 'fk')),
            table_name text NOT NULL, name text NOT NULL, def text NOT NULL,
            saved_at timestamptz NOT NULL DEFAULT now());
         INSERT INTO planck_seed_saved (kind, table_name, name, def)
              VALUES ('fk', 'public.kids', 'kids_parent_fk', 'FOREIGN KEY (parent_id) REFERENCES parents(id)');",
    );
    // Read-only commands report it.
    let dir = project_dir();
    let out = db.planck(&["seed", "--rows", "5", "--dry-run"], dir.path());
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("kids_parent_fk on public.kids"),
        "{}",
        stderr(&out)
    );
    let out = db.planck(&["seed", "--restore"], dir.path());
    assert_exit(&out, 0);
    assert_eq!(
        db.query_strings(
            "SELECT conname || ':' || convalidated FROM pg_constraint WHERE contype = 'f'"
        ),
        vec!["kids_parent_fk:true"]
    );
    assert_nothing_left(&db);
}

/// Issue 8 section 2.6: the saved DDL was executed verbatim whoever planted
/// it (on 14 and older any role can create in public). A table that another
/// role owns is refused, and what it holds is not run.
#[test]
fn saved_ddl_planted_by_another_role_is_not_executed() {
    let db = test_db!();
    let role = format!("{}_planter", db.name);
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role};
         GRANT CREATE ON SCHEMA public TO {role};
         CREATE TABLE victim (id int PRIMARY KEY);
         SET ROLE {role};
         CREATE TABLE public.planck_seed_saved (
            id bigserial PRIMARY KEY, kind text NOT NULL, table_name text NOT NULL,
            name text NOT NULL, def text NOT NULL, saved_at timestamptz NOT NULL DEFAULT now());
         INSERT INTO planck_seed_saved (kind, table_name, name, def)
              VALUES ('index', 'public.victim', 'x', 'DROP TABLE victim');
         RESET ROLE;"
    ));
    for args in [&["seed", "--rows", "5"][..], &["seed", "--restore"][..]] {
        let out = planck(&db, args);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("public.planck_seed_saved belongs to role {role}")),
            "{err}"
        );
        assert!(
            err.contains("does not run the definitions it holds"),
            "{err}"
        );
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM pg_class WHERE relname = 'victim'"
        ),
        1
    );
    db.exec(&format!(
        "DROP TABLE public.planck_seed_saved; REVOKE CREATE ON SCHEMA public FROM {role}; DROP ROLE {role}"
    ));
}

/// Issue 8 section 2.6: a user table that happens to be named like planck's
/// gets a clear error, not `column "id" does not exist`.
#[test]
fn a_user_table_named_like_planck_s_is_a_clear_error() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE parents (id int PRIMARY KEY);
         CREATE SCHEMA planck; CREATE TABLE planck.seed_saved (note text);",
    );
    let out = planck(&db, &["seed", "--rows", "5"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("planck.seed_saved exists but is not planck's bookkeeping"),
        "{err}"
    );
    assert!(err.contains("hint: "), "{err}");
    assert!(!err.contains("does not exist"), "{err}");
    // Same columns but not marked as planck's: still refused.
    db.exec(
        "DROP TABLE planck.seed_saved;
         CREATE TABLE planck.seed_saved (id bigint, kind text, table_name text, name text, def text, state text);",
    );
    let out = planck(&db, &["seed", "--rows", "5"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("lacks planck's marker"),
        "{}",
        stderr(&out)
    );
}

/// Issue 8 section 2.7: a role that cannot create planck's schema gets an
/// error naming the grant it needs.
#[test]
fn a_role_that_cannot_create_the_schema_is_told_the_grant() {
    let db = test_db!();
    let role = format!("{}_app", db.name);
    db.exec(&format!(
        "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN PASSWORD 'app-pw';
         CREATE SCHEMA app AUTHORIZATION {role};
         SET ROLE {role}; CREATE TABLE app.things (id int PRIMARY KEY); RESET ROLE;"
    ));
    let url = db
        .url
        .replacen("://planck@", &format!("://{role}:app-pw@"), 1);
    assert_ne!(url, db.url);
    let dir = project_dir();
    let out = common::planck_cmd(dir.path())
        .args(["--database-url", &url, "seed", "--rows", "5"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("role {role} may not create schema planck")),
        "{err}"
    );
    assert!(
        err.contains(&format!("GRANT CREATE ON DATABASE {} TO {role};", db.name)),
        "{err}"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM app.things"), 0);
    db.exec(&format!("DROP SCHEMA app CASCADE; DROP ROLE {role}"));
}

/// Issue 8 section 2.7: two seeds of one database at once "restored" each
/// other's live saves. Now the second waits, saying who holds the lock, and
/// runs when the first is done.
#[test]
fn a_second_seed_of_the_same_database_waits_and_says_who_holds_the_lock() {
    let db = test_db!(migrated);
    let before = fks(&db);
    let (dir, spec) = example_spec_file();
    let first = seed_until_items_copy(&db, dir.path(), &spec);
    let first_pid = db.query_strings(&format!(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = '{}')",
        db.name
    ));
    assert_eq!(first_pid.len(), 1, "the first seed holds no lock");
    let second = common::planck_cmd(dir.path())
        .args([
            "--database-url",
            &db.url,
            "seed",
            "--spec",
            spec.to_str().unwrap(),
            "--scale",
            "0.002",
            "--truncate",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The second is waiting on the lock while the first still loads.
    let mut waiting = false;
    for _ in 0..500 {
        let n = db.query_strings(&format!(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                AND database = (SELECT oid FROM pg_database WHERE datname = '{}')",
            db.name
        ));
        if n[0] == "1" {
            waiting = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(waiting, "the second seed does not wait for the first");
    // The first one stops; the second then runs to the end.
    signal(&first, "-INT");
    let out1 = first.wait_with_output().unwrap();
    assert_exit(&out1, 130);
    let out2 = second.wait_with_output().unwrap();
    assert_exit(&out2, 0);
    let err = stderr(&out2);
    assert!(
        err.contains(&format!(
            "another planck seed is running on database {}: waiting for it (held by pid {} (planck seed, exclusive) since ",
            db.name, first_pid[0]
        )),
        "{err}"
    );
    assert!(count(&db, "SELECT count(*) FROM items") > 0);
    assert_eq!(fks(&db), before);
    assert_nothing_left(&db);
}

/// Issue 8 section 2.7: shards of one set take the lock shared, so they
/// load at once, and the set's saved keys are restored by the last one.
#[test]
fn two_shards_run_at_once_and_the_last_restores_the_set() {
    let db = test_db!(migrated);
    let before = fks(&db);
    let (dir, spec) = example_spec_file();
    let spawn = |k: &str| {
        common::planck_cmd(dir.path())
            .args([
                "--database-url",
                &db.url,
                "seed",
                "--spec",
                spec.to_str().unwrap(),
                "--scale",
                "0.01",
                "--threads",
                "1",
                "--shard",
                k,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("1/2"), spawn("2/2"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_exit(&a, 0);
    assert_exit(&b, 0);
    for e in [stderr(&a), stderr(&b)] {
        assert!(!e.contains("waiting for it"), "{e}");
    }
    assert_eq!(fks(&db), before);
    assert_nothing_left(&db);
}

/// Loads `parents` and `kids` through the library with a fault in kids'
/// generator; returns the rendered error.
fn load_with_fault(db: &TestDb, fault: planck::seed::load::Fault) -> String {
    use planck::catalog::schema as catalog;
    use planck::output::Log;
    use planck::seed::{load, planner, spec::SpecFile};
    use planck::signal::Signals;
    let conn = db.conn();
    let r = common::block_on(async move {
        let signals = Signals::install().unwrap();
        let mut lock =
            planck::bookkeeping::SeedLock::acquire(&conn, false, "planck seed", Log::silent())
                .await
                .unwrap();
        let mut c = conn.connect().await.unwrap();
        let cat = catalog::load(&mut c, &[]).await.unwrap();
        let plan = planner::build(
            &cat,
            &SpecFile::default(),
            &planner::Options {
                seed: planner::DEFAULT_SEED,
                scale: 1.0,
                default_rows: Some(20_000),
                reference_keys: Default::default(),
                refused: Default::default(),
                observed: Default::default(),
            },
        )
        .unwrap();
        load::run(
            &conn,
            std::sync::Arc::new(plan),
            &load::LoadOptions {
                truncate: true,
                threads: 1,
                shard: None,
                fault: Some(("kids".into(), fault)),
                ..Default::default()
            },
            &mut lock,
            &signals,
            Log::silent(),
        )
        .await
    });
    planck::error::render(&r.expect_err("a load whose generator failed succeeded"))
}

/// Issue 8 section 2.5: a generator thread that panicked was ignored
/// (`let _ = producer.join()`): the COPY committed a truncated table and the
/// summary reported the planned count. Now the table fails and rolls back;
/// and COPY's row count is checked against the rows generated, so a
/// generator that stops early without a word fails too.
#[test]
fn a_generator_that_panics_or_stops_early_fails_its_table_and_rolls_it_back() {
    use planck::seed::load::Fault;
    let db = test_db!();
    db.exec(
        "CREATE TABLE parents (id int PRIMARY KEY);
         CREATE TABLE kids (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES parents)",
    );
    let before = fks(&db);
    let err = load_with_fault(&db, Fault::PanicAfter(1));
    assert!(
        err.contains("cannot seed kids: a generator thread failed (injected generator failure)"),
        "{err}"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM kids"), 0);
    assert_eq!(fks(&db), before);
    assert_nothing_left(&db);
    let err = load_with_fault(&db, Fault::StopAfter(1));
    assert!(
        err.contains("cannot seed kids: COPY wrote 4096 rows where"),
        "{err}"
    );
    assert_eq!(count(&db, "SELECT count(*) FROM kids"), 0);
    assert_eq!(fks(&db), before);
    assert_nothing_left(&db);
    // Without a fault the same load completes.
    assert_exit(&planck(&db, &["seed", "--rows", "20000", "--truncate"]), 0);
    assert!(count(&db, "SELECT count(*) FROM kids") > 4096);
}

/// Issue 8 section 2.3: a kill while the foreign keys are validated leaves
/// them in place NOT VALID. The next command reports them as such, and
/// `planck seed --restore` validates them. (The state is made with planck's
/// own bookkeeping, as the restore's first transaction leaves it.)
#[test]
fn keys_a_kill_left_not_valid_are_reported_and_validated_by_restore() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE parents (id int PRIMARY KEY);
         CREATE TABLE kids (id int PRIMARY KEY, parent_id int CONSTRAINT kids_parent_fk REFERENCES parents);
         INSERT INTO parents VALUES (1); INSERT INTO kids VALUES (1, 1);",
    );
    let conn = db.conn();
    common::block_on(async move {
        let mut c = conn.connect().await.unwrap();
        planck::bookkeeping::ensure(&mut c).await.unwrap();
        let tx = c.transaction().await.unwrap();
        planck::bookkeeping::save_fk(
            &tx,
            "public.kids",
            "kids_parent_fk",
            "FOREIGN KEY (parent_id) REFERENCES parents(id)",
        )
        .await
        .unwrap();
        tx.batch_execute(
            "ALTER TABLE kids DROP CONSTRAINT kids_parent_fk;
             ALTER TABLE kids ADD CONSTRAINT kids_parent_fk FOREIGN KEY (parent_id) REFERENCES parents(id) NOT VALID;
             UPDATE planck.seed_saved SET state = 'not_valid';",
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    });
    let out = planck(&db, &["seed", "--rows", "5", "--dry-run"]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("1 constraint(s) an interrupted `planck seed` dropped wait to be restored (1 in place as NOT VALID, not yet validated): kids_parent_fk on public.kids"),
        "{}",
        stderr(&out)
    );
    let out = planck(&db, &["seed", "--restore"]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("restored and validated 1 constraint(s)"),
        "{}",
        stderr(&out)
    );
    assert_nothing_left(&db);
    assert_eq!(count(&db, "SELECT count(*) FROM kids"), 1);
}

/// Issue 8 sections 2.2 and 5: flags are validated before anything touches
/// the database, and a bad planck.toml value is named as planck.toml's.
#[test]
fn a_bad_scale_in_planck_toml_is_named_and_nothing_is_written() {
    let db = test_db!(migrated);
    let dir = project_dir();
    std::fs::write(dir.path().join("planck.toml"), "[seed]\nscale = -3.0\n").unwrap();
    let out = db.planck(&["seed"], dir.path());
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("planck.toml: invalid `[seed] scale = -3`"),
        "{err}"
    );
    assert!(!err.contains("--scale"), "{err}");
    let out = db.planck(&["seed", "--scale", "0"], dir.path());
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("invalid --scale 0"),
        "{}",
        stderr(&out)
    );
    // A negative factor is a value planck explains, not a flag clap does
    // not know.
    let out = db.planck(&["seed", "--scale", "-1"], dir.path());
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("invalid --scale -1: the scale must be a positive factor"),
        "{}",
        stderr(&out)
    );
    assert_eq!(count(&db, "SELECT count(*) FROM accounts"), 0);
    assert_nothing_left(&db);
}
