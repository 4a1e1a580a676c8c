//! `planck explain --format csv` (issue 50, 3): one row per finding under
//! a header, RFC 4180 quoting, the same bytes on stdout and in `-o csv=`;
//! a command whose result is not written as CSV refuses the format
//! before any work.

use crate::common;

use common::{assert_exit, stderr, stdout};

/// `orders` (20,000 rows, twice the default `min_rows`) read by a column
/// no index leads with: a seq-scan finding.
#[test]
fn explain_writes_its_findings_as_csv() {
    let db = test_db!();
    let dir = common::project_dir();
    db.exec(
        "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, note text);
         INSERT INTO orders SELECT g, 'customer ' || (g % 500), 'note ' || g
           FROM generate_series(1, 20000) g;
         ANALYZE orders",
    );
    let path = dir.path().join("queries.toml");
    std::fs::write(
        &path,
        "format_version = 1\n\n[[statement]]\nquery = '''\n\
         SELECT id, note FROM orders WHERE customer = $1\n'''\n",
    )
    .unwrap();
    let q = path.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["--format", "csv", "explain", "--queries", &q, "--no-advice"];
        args.extend_from_slice(extra);
        db.planck(&args, dir.path())
    };
    let out = run(&[]);
    assert_exit(&out, 1);
    let csv = stdout(&out);
    let shown = csv.replace(&dir.path().display().to_string(), "[dir]");
    insta::assert_snapshot!(shown);
    let rows: Vec<&str> = csv.split_terminator("\r\n").collect();
    assert!(rows[0].starts_with("severity,check,mode,"), "{csv}");
    assert!(rows[1..].iter().any(|r| r.contains(",seq-scan,")), "{csv}");

    // The same bytes in a file, nothing on stdout.
    let out = run(&["-o", "csv=out/findings.csv"]);
    assert_exit(&out, 1);
    assert_eq!(stdout(&out), "");
    let file = std::fs::read_to_string(dir.path().join("out/findings.csv")).unwrap();
    assert_eq!(file, csv);

    // Seed's and replay's results are not written as CSV: refused before
    // any work, naming what they write.
    for command in ["seed", "replay"] {
        let out = db.planck(&["--format", "csv", command], dir.path());
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains("does not write --format csv; it writes table, json, markdown"),
            "{}",
            stderr(&out)
        );
    }
}
