//! `planck demo` never touches data that is not its own (issue 8, section 2.2).

use crate::common;

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

/// Issue 14, section 5: the demo ends by writing `.planck/demo/review.html`
/// and `review.md`, saying where, and both hold the findings explain printed.
#[test]
fn demo_writes_the_review_files_holding_its_findings() {
    let db = test_db!();
    let dir = project_dir();
    let out = planck_cmd(dir.path())
        .args(["--database-url", &db.url, "--format", "json"])
        .args(["demo", "--database", &db.name, "--force", "--scale", "0.01"])
        .args(["--replay-seconds", "0.5"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("wrote the review:"), "{err}");
    let demo = dir.path().join(".planck").join("demo");
    assert!(
        err.contains(&demo.join("review.html").display().to_string()),
        "{err}"
    );
    let html = std::fs::read_to_string(demo.join("review.html")).unwrap();
    let md = std::fs::read_to_string(demo.join("review.md")).unwrap();
    // stdout: the seed summary, then explain's JSON; the last document is explain's.
    let text = common::stdout(&out);
    let explain = serde_json::Deserializer::from_str(&text)
        .into_iter::<serde_json::Value>()
        .filter_map(|v| v.ok())
        .last()
        .unwrap();
    let findings = explain["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "the example has findings on purpose");
    for f in findings {
        let check = f["check"].as_str().unwrap();
        assert!(md.contains(check), "{check} not in review.md");
        assert!(
            html.contains(&format!("<strong>{check}</strong>")),
            "{check} not in review.html"
        );
        if let Some(id) = f["statement_id"].as_str() {
            assert!(md.contains(id) && html.contains(id), "{id}");
        }
    }
    // The replay ran, so its chart is there.
    assert!(html.contains("id=\"chart-throughput\""));
    // The environment and the index table come from the database (explain::environment).
    let version = db.query_strings("SELECT current_setting('server_version')");
    assert!(
        html.contains(&format!("PostgreSQL <strong>{}</strong>", version[0])),
        "version"
    );
    assert!(
        md.contains("| <code>items</code> |"),
        "the items table's size"
    );
    assert!(html.contains("<td>used</td>") && html.contains("<code>items_pkey</code>"));
}
