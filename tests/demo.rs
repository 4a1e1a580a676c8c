//! `planck demo` never touches data that is not its own (issue 8, section 2.2).

mod common;

use common::{assert_exit, planck_cmd, project_dir, stderr};

/// The URL of database `name` on the test cluster, given as --database-url so
/// that planck treats the server as one it does not manage.
fn unmanaged_url(db: &common::TestDb) -> String {
    db.url.clone()
}

/// Issue 8, 2.2: `planck demo --database NAME` on a server planck does not
/// manage dropped an existing database with no --force.
#[test]
fn demo_refuses_to_drop_an_existing_database_it_does_not_manage() {
    let victim = test_db!();
    victim.exec("CREATE TABLE precious (v text); INSERT INTO precious VALUES ('keep me')");
    let dir = project_dir();
    let out = planck_cmd(dir.path())
        .args(["--database-url", &unmanaged_url(&victim)])
        .args(["demo", "--database", &victim.name, "--scale", "0.01"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("refusing to drop database"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(victim.query_strings("SELECT v FROM precious"), ["keep me"]);
}

/// Issue 8, 2.2: flags were validated only after the database was dropped
/// (`--scale 0` with --force lost the database, then failed).
#[test]
fn demo_validates_flags_before_dropping_anything() {
    let victim = test_db!();
    victim.exec("CREATE TABLE precious (v text); INSERT INTO precious VALUES ('keep me')");
    let dir = project_dir();
    for scale in ["0", "-1", "NaN"] {
        let out = planck_cmd(dir.path())
            .args(["--database-url", &unmanaged_url(&victim)])
            .args(["demo", "--database", &victim.name, "--force"])
            .arg(format!("--scale={scale}"))
            .output()
            .unwrap();
        assert_exit(&out, 2);
        assert!(stderr(&out).contains("invalid --scale"), "{}", stderr(&out));
        assert_eq!(victim.query_strings("SELECT v FROM precious"), ["keep me"]);
    }
}

#[test]
fn test_databases_are_named_after_their_test() {
    assert_eq!(test_name!(), "test_databases_are_named_after_their_test");
}
