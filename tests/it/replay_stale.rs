//! `planck replay` of a recording older than the schema (issue 11, a
//! new-user pass): a migration dropped a column after the recording, and
//! the replay stopped at the first statement that named it. Now each stale
//! statement (and every unit that runs it) is skipped with one warning
//! naming its id, its queries-file line and the server's error, the rest
//! replays, and the summary says what was skipped; only a workload that is
//! stale throughout is an error (exit 2, with a hint to re-record).

use crate::common;

use std::path::Path;

use common::{TestDb, assert_exit, project_dir, stderr, stdout};
use planck::replay::report::ReplayReport;

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\nset -e\n{body}")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("./{name}")
}

/// The 1-based line of the `[[statement]]` header of the entry whose query
/// is `query`, read from the file's text.
fn header_line(text: &str, query: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(query))
        .unwrap_or_else(|| panic!("{query} not in\n{text}"));
    lines[..at]
        .iter()
        .rposition(|l| l.trim() == "[[statement]]")
        .unwrap()
        + 1
}

/// The id of the entry whose query is `query`: the `id = ` line above it.
fn id_of(text: &str, query: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let header = header_line(text, query) - 1;
    lines[header..]
        .iter()
        .find_map(|l| l.strip_prefix("id = "))
        .unwrap()
        .trim_matches('"')
        .to_string()
}

fn replay(db: &TestDb, dir: &Path, queries: &str) -> std::process::Output {
    db.planck(
        &[
            "replay",
            "--queries",
            queries,
            "--warmup",
            "0",
            "--ladder",
            "2",
            "--duration",
            "400ms",
            "--format",
            "json",
        ],
        dir,
    )
}

#[test]
fn stale_statements_skipped_with_one_warning_each() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE items (id int PRIMARY KEY, title text NOT NULL, note text);
         INSERT INTO items SELECT g, 'item ' || g, 'note ' || g FROM generate_series(1, 50) g",
    );
    let dir = project_dir();
    // The application's run: two reads alone, and a transaction that
    // writes the column the migration will drop.
    let suite = write_script(
        dir.path(),
        "suite.sh",
        "psql -X -q -v ON_ERROR_STOP=1 \\
  -c \"SELECT title FROM items WHERE id = 1\" \\
  -c \"SELECT note FROM items WHERE id = 2\" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 \\
  -c \"BEGIN\" \\
  -c \"UPDATE items SET title = 'renamed' WHERE id = 3\" \\
  -c \"UPDATE items SET note = 'seen' WHERE id = 3\" \\
  -c \"COMMIT\" >/dev/null
",
    );
    let out = db.planck(&["record", "--", &suite], dir.path());
    assert_exit(&out, 0);
    let file = dir.path().join("queries/recorded.toml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("[[transaction]]"), "{text}");
    // A hand-written transaction that binds a parameter from the column.
    let title_update = id_of(&text, "UPDATE items SET title = $1 WHERE id = $2");
    text.push_str(&format!(
        "\n[[transaction]]\nid = \"by-note\"\nstatements = [\"{title_update}\"]\nmanual = true\n\n\
         [[transaction.bind]]\nstatement = \"{title_update}\"\nparam = 1\ncolumn = \"items.note\"\n"
    ));
    std::fs::write(&file, &text).unwrap();

    // The migration since the recording.
    db.exec("ALTER TABLE items DROP COLUMN note");
    let out = replay(&db, dir.path(), "queries/recorded.toml");
    assert_exit(&out, 0);
    let err = stderr(&out);
    let r: ReplayReport =
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}\n{err}"));

    let read_note = id_of(&text, "SELECT note FROM items WHERE id = $1");
    let note_update = id_of(&text, "UPDATE items SET note = $1 WHERE id = $2");
    let read_title = id_of(&text, "SELECT title FROM items WHERE id = $1");
    // One warning per stale statement, naming its id, its line and the
    // server's error; and the bind's.
    for (id, query) in [
        (&read_note, "SELECT note FROM items WHERE id = $1"),
        (&note_update, "UPDATE items SET note = $1 WHERE id = $2"),
    ] {
        let warnings: Vec<&str> = err
            .lines()
            .filter(|l| l.contains(&format!("statement {id} ")))
            .collect();
        assert_eq!(warnings.len(), 1, "{err}");
        let at = format!("recorded.toml:{}", header_line(&text, query));
        assert!(warnings[0].contains(&at), "{at}: {err}");
        assert!(
            warnings[0].contains("column \"note\"") && warnings[0].contains("42703"),
            "{err}"
        );
    }
    assert!(
        err.lines()
            .any(|l| l.contains("items.note, which is stale")
                && l.contains("transaction tx-by-note")),
        "{err}"
    );

    // The summary's JSON says what was skipped, with the units.
    let skipped = &r.integrity.skipped;
    assert_eq!(skipped.len(), 3, "{skipped:#?}");
    let lone = skipped
        .iter()
        .find(|k| k.statement_id == read_note)
        .unwrap();
    assert_eq!(lone.units, vec![read_note.clone()]);
    assert_eq!(lone.sqlstate, "42703");
    assert!(lone.bind.is_none());
    let in_tx = skipped
        .iter()
        .find(|k| k.statement_id == note_update)
        .unwrap();
    assert_eq!(in_tx.units.len(), 1);
    assert!(in_tx.units[0].starts_with("tx-"), "{in_tx:?}");
    let bind = skipped.iter().find(|k| k.bind.is_some()).unwrap();
    assert_eq!(bind.bind.as_deref(), Some("items.note"));
    assert_eq!(bind.units, vec!["tx-by-note".to_string()]);

    // The rest replayed, without error.
    let s = &r.steps[0];
    assert!(s.units > 0 && s.errors.is_empty(), "{s:?}\n{err}");
    let ran: Vec<&str> = r
        .statements
        .iter()
        .filter(|s| s.calls > 0)
        .map(|s| s.id.as_str())
        .collect();
    assert!(ran.contains(&read_title.as_str()), "{ran:?}");
    assert!(!ran.contains(&read_note.as_str()), "{ran:?}");
    assert!(!ran.contains(&note_update.as_str()), "{ran:?}");
    assert!(
        r.transactions.iter().all(|t| t.calls == 0),
        "{:?}",
        r.transactions
    );

    // A workload that is stale throughout is an error, with the hint.
    let only = dir.path().join("only-stale.toml");
    std::fs::write(
        &only,
        "format_version = 2\n\n[[statement]]\nid = \"gone\"\nquery = \"SELECT note FROM items WHERE id = $1\"\n",
    )
    .unwrap();
    let out = replay(&db, dir.path(), "only-stale.toml");
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("every statement of the workload is stale"),
        "{err}"
    );
    assert!(err.contains("re-record"), "{err}");
    assert!(err.contains("only-stale.toml:3"), "{err}");
}
