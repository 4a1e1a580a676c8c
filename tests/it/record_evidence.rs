//! `planck record -- CMD` keeps the relay's evidence (issue 13): how each
//! statement was sent (`sent`), the shapes of its LIKE and LIMIT values
//! (`shapes`), and the short literals of low-cardinality columns it was
//! compared with (`[observed]`); secrets and long values are never kept.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::assert_exit;
use planck::queries::{QueryFile, Sent, Statement, ValueShape};

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\nset -e\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("./{name}")
}

fn by_text(file: &QueryFile) -> BTreeMap<String, &Statement> {
    file.statements
        .iter()
        .map(|s| (planck::queries::normalize_space(&s.query), s))
        .collect()
}

const SECRET: &str = "pw-5d1e9a-planck-secret";
const LONG: &str = "a description far longer than thirty-two characters";

// psql (simple protocol) sends literals: unprepared, with its LIKE prefix,
// its LIMIT and its IN list observed; pgbench -M prepared uses named
// statements (prepared) and -M extended the unnamed statement, parsed for
// each execution (unprepared). A password comparison and a long text leave
// nothing in [observed], and the planted secret is in no file.
#[test]
fn the_relay_keeps_how_statements_were_sent_and_their_value_shapes() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE api_check (id int PRIMARY KEY, name text, status text, password text,
             descr text, processed timestamptz);
         INSERT INTO api_check VALUES (1, 'abcd', 'up', NULL, NULL, NULL);",
    );
    let dir = common::project_dir();
    std::fs::write(
        dir.path().join("suite.sql"),
        format!(
            "SELECT id FROM api_check WHERE name LIKE 'abc%' ORDER BY id LIMIT 21;
SELECT id FROM api_check WHERE name LIKE 'xy%' ORDER BY id LIMIT 21;
SELECT id FROM api_check WHERE name LIKE '%q%' ORDER BY id LIMIT 1;
SELECT count(*) FROM api_check WHERE status IN ('up', 'down');
SELECT count(*) FROM api_check WHERE status IN ('up', 'down');
SELECT count(*) FROM api_check WHERE status IN ('up', 'new');
SELECT count(*) FROM api_check WHERE processed IS NULL;
SELECT 1 FROM api_check WHERE password = '{SECRET}';
SELECT 1 FROM api_check WHERE descr = '{LONG}';
"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("named.sql"),
        "\\set x 1\nSELECT name FROM api_check WHERE id = :x;\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("unnamed.sql"),
        "\\set x 1\nSELECT name FROM api_check WHERE id > :x;\n",
    )
    .unwrap();
    let script = write_script(
        dir.path(),
        "suite.sh",
        "psql -X -q -v ON_ERROR_STOP=1 -f suite.sql >/dev/null
pgbench -n -M prepared -t 3 -f named.sql >/dev/null 2>&1
pgbench -n -M extended -t 3 -f unnamed.sql >/dev/null 2>&1
",
    );
    let out = db.planck(&["record", "--", &script], dir.path());
    assert_exit(&out, 0);
    let path = dir.path().join("queries/recorded.toml");
    let f = QueryFile::load(&path).unwrap();
    let s = by_text(&f);
    let like = s["SELECT id FROM api_check WHERE name LIKE $1 ORDER BY id LIMIT $2"];
    assert_eq!(like.sent, Some(Sent::Unprepared));
    assert_eq!(
        like.shapes,
        BTreeMap::from([(1, ValueShape::Prefix), (2, ValueShape::Limit(21))])
    );
    let named = s["SELECT name FROM api_check WHERE id = $1"];
    assert_eq!(named.sent, Some(Sent::Prepared));
    let unnamed = s["SELECT name FROM api_check WHERE id > $1"];
    assert_eq!(unnamed.sent, Some(Sent::Unprepared));

    let status = f
        .observed
        .column("public", "api_check", "status")
        .expect("status observed");
    assert_eq!(status.weighted(), vec![("up", 3), ("down", 2), ("new", 1)]);
    let processed = f
        .observed
        .column("public", "api_check", "processed")
        .unwrap();
    assert_eq!((processed.null_tests, processed.not_null_tests), (1, 0));
    assert!(
        f.observed
            .column("public", "api_check", "password")
            .is_none()
    );
    assert!(f.observed.column("public", "api_check", "descr").is_none());
    // The pgbench id comparisons: `id = $1` was sent the value 1.
    assert_eq!(
        f.observed
            .column("public", "api_check", "id")
            .map(|c| c.weighted()),
        Some(vec![("1", 3)])
    );

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(SECRET) && !text.contains(LONG), "{text}");
    for e in walk(dir.path())
        .into_iter()
        .filter(|e| !e.ends_with("suite.sql"))
    {
        let body = String::from_utf8_lossy(&std::fs::read(&e).unwrap()).into_owned();
        assert!(!body.contains(SECRET), "{} holds the secret", e.display());
    }

    // Re-recording replaces the whole [observed] table.
    let script = write_script(
        dir.path(),
        "again.sh",
        "psql -X -q -c \"SELECT count(*) FROM api_check WHERE status = 'paused'\" >/dev/null\n",
    );
    assert_exit(&db.planck(&["record", "--", &script], dir.path()), 0);
    let f = QueryFile::load(&path).unwrap();
    let status = f.observed.column("public", "api_check", "status").unwrap();
    assert_eq!(status.weighted(), vec![("paused", 1)]);
    assert!(
        f.observed
            .column("public", "api_check", "processed")
            .is_none()
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
