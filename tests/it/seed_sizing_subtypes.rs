//! Subtypes split their parent's rows (issue 47): tables whose primary key
//! is a foreign key to one parent's key (multi-table inheritance: a
//! document that is an invoice, a contract or a memo) each took as many
//! rows as the parent (twice as many asked, lowered to the parent's count
//! by their unique key), so every document was all three. Zero-spec, they
//! now share the parent's rows, each a third; another child of the parent
//! (attachments, many a document) still grows from it.

use crate::common;

use common::{TestDb, assert_exit, project_dir, stderr};

const DOCUMENTS: &str = "
CREATE TABLE documents (id serial PRIMARY KEY, title text NOT NULL,
                        created_at timestamptz NOT NULL);
CREATE TABLE invoices (document_ptr_id integer PRIMARY KEY REFERENCES documents,
                       amount numeric(12, 2) NOT NULL);
CREATE TABLE contracts (document_ptr_id integer PRIMARY KEY REFERENCES documents,
                        signed_on date);
CREATE TABLE memos (document_ptr_id integer PRIMARY KEY REFERENCES documents, body text);
CREATE TABLE attachments (id serial PRIMARY KEY,
                          document_id integer NOT NULL REFERENCES documents,
                          file_name text NOT NULL);
";

fn count(db: &TestDb, table: &str) -> i64 {
    db.query_strings(&format!("SELECT count(*) FROM {table}"))
        .remove(0)
        .parse()
        .unwrap()
}

#[test]
fn subtypes_of_one_parent_share_its_rows() {
    let db = test_db!();
    let dir = project_dir();
    std::fs::create_dir_all(dir.path().join("migrations")).unwrap();
    std::fs::write(dir.path().join("migrations/0001_docs.sql"), DOCUMENTS).unwrap();
    assert_exit(&db.planck(&["migrate"], dir.path()), 0);
    let out = db.planck(&["seed", "--no-spec", "--rows", "3000"], dir.path());
    let err = stderr(&out);
    assert_exit(&out, 0);
    let documents = count(&db, "documents");
    assert_eq!(documents, 3000, "{err}");
    let subtypes = ["invoices", "contracts", "memos"];
    for t in subtypes {
        let rows = count(&db, t);
        assert_eq!(rows, documents / 3, "{t}: a third of the documents\n{err}");
        assert!(
            !err.lines().any(|l| l.contains(t) && l.contains("lowered")),
            "{t} was lowered:\n{err}"
        );
    }
    // Another child is not a subtype: it grows from the documents.
    assert_eq!(count(&db, "attachments"), 2 * documents, "{err}");

    // The dry run says why.
    let out = db.planck(
        &[
            "seed",
            "--no-spec",
            "--rows",
            "3000",
            "--truncate",
            "--dry-run",
        ],
        dir.path(),
    );
    assert_exit(&out, 0);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(text.contains("one of 3 table(s) extending"), "{text}");
}
