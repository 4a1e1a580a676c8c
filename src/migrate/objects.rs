//! Which migration line made or dropped each index and constraint.
//!
//! Around every statement of a migration, `migrate` reads the indexes
//! (`pg_index`) and constraints (`pg_constraint`) of the database and
//! compares them by oid: new ones were created by that statement, missing
//! ones dropped, one whose name changed renamed, and a name that was both
//! dropped and created (`ALTER COLUMN ... TYPE` rebuilds its indexes) was
//! recreated. The changes go to the file's own row of `planck_migrations`
//! (an `objects` jsonb column), written in the file's transaction.
//!
//! In the database, not in a file under `.planck/`: the map describes one
//! database's history, so it must commit and roll back with the migration
//! itself, vanish with `migrate --fresh`, and be found by whoever reads that
//! database (explain in CI, against a URL, on another machine), which a file
//! of the checkout would not guarantee.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio_postgres::GenericClient;
use tokio_postgres::error::SqlState;

use crate::error::{Error, Result};

/// The column the map lives in: a column of planck's existing table, not
/// a table of its own, so planck adds no table to a migrated database and
/// every catalog reader that skips `planck_migrations` skips it too.
pub const COLUMN_DDL: &str = "ALTER TABLE planck_migrations ADD COLUMN IF NOT EXISTS objects jsonb";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Index,
    Constraint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Dropped,
    Recreated,
    Renamed,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Index => "index",
            Kind::Constraint => "constraint",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        match s {
            "index" => Some(Kind::Index),
            "constraint" => Some(Kind::Constraint),
            _ => None,
        }
    }
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Dropped => "dropped",
            Action::Recreated => "recreated",
            Action::Renamed => "renamed",
        }
    }
}

/// One index or constraint a migration statement changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectChange {
    /// The migration's file name (as in `planck_migrations`).
    pub migration: String,
    /// 1-based line of the statement in that file.
    pub line: usize,
    pub action: Action,
    pub kind: Kind,
    pub schema: String,
    pub name: String,
    /// The table it belongs to (`None` for a domain's constraint).
    pub table: Option<String>,
    /// The old name, for [`Action::Renamed`].
    pub renamed_from: Option<String>,
}

/// Where an index or constraint came from: a migration file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub path: PathBuf,
    pub line: usize,
    pub action: Action,
}

/// The indexes and constraints of the database, by oid.
#[derive(Debug, Clone, Default)]
pub(super) struct Snapshot(HashMap<(Kind, u32), Object>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Object {
    schema: String,
    name: String,
    table: Option<String>,
}

/// Reads the snapshot; planck's own tables are left out.
pub(super) async fn snapshot(client: &impl GenericClient) -> Result<Snapshot> {
    let rows = client
        .query(
            "SELECT /* planck */ 'index', c.oid, n.nspname::text, c.relname::text, t.relname::text
               FROM pg_index i
               JOIN pg_class c ON c.oid = i.indexrelid
               JOIN pg_class t ON t.oid = i.indrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'planck')
                AND n.nspname NOT LIKE 'pg\\_toast%'
                AND t.relname <> 'planck_migrations'
             UNION ALL
             SELECT 'constraint', co.oid, n.nspname::text, co.conname::text, t.relname::text
               FROM pg_constraint co
               JOIN pg_namespace n ON n.oid = co.connamespace
               LEFT JOIN pg_class t ON t.oid = co.conrelid
              WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'planck')
                AND n.nspname NOT LIKE 'pg\\_toast%'
                AND coalesce(t.relname, '') <> 'planck_migrations'
                -- 18 keeps NOT NULL in pg_constraint too (contype 'n'): a
                -- column property, as on every earlier major, not an object.
                AND co.contype <> 'n'",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the indexes and constraints", e))?;
    let mut out = Snapshot::default();
    for r in rows {
        let kind = Kind::parse(r.get(0)).unwrap_or(Kind::Index);
        out.0.insert(
            (kind, r.get(1)),
            Object {
                schema: r.get(2),
                name: r.get(3),
                table: r.get(4),
            },
        );
    }
    Ok(out)
}

/// What changed between two snapshots, attributed to `migration:line`, in
/// a stable order (kind, schema, name).
pub(super) fn diff(
    before: &Snapshot,
    after: &Snapshot,
    migration: &str,
    line: usize,
) -> Vec<ObjectChange> {
    let change = |action, kind, o: &Object, from: Option<String>| ObjectChange {
        migration: migration.to_string(),
        line,
        action,
        kind,
        schema: o.schema.clone(),
        name: o.name.clone(),
        table: o.table.clone(),
        renamed_from: from,
    };
    let mut created = Vec::new();
    let mut dropped = Vec::new();
    let mut out = Vec::new();
    for (key, o) in &after.0 {
        match before.0.get(key) {
            None => created.push((key.0, o)),
            Some(b) if b.name != o.name || b.schema != o.schema => {
                out.push(change(Action::Renamed, key.0, o, Some(b.name.clone())))
            }
            Some(_) => {}
        }
    }
    for (key, o) in &before.0 {
        if !after.0.contains_key(key) {
            dropped.push((key.0, o));
        }
    }
    for (kind, o) in &created {
        let again = dropped
            .iter()
            .any(|(k, d)| k == kind && d.schema == o.schema && d.name == o.name);
        out.push(change(
            if again {
                Action::Recreated
            } else {
                Action::Created
            },
            *kind,
            o,
            None,
        ));
    }
    for (kind, o) in &dropped {
        let again = created
            .iter()
            .any(|(k, c)| k == kind && c.schema == o.schema && c.name == o.name);
        if !again {
            out.push(change(Action::Dropped, *kind, o, None));
        }
    }
    out.sort_by(|a, b| {
        (a.kind, &a.schema, &a.name, a.action).cmp(&(b.kind, &b.schema, &b.name, b.action))
    });
    out
}

/// A file's changes as stored in its `planck_migrations` row.
pub(super) fn to_json(changes: &[ObjectChange]) -> serde_json::Value {
    serde_json::to_value(changes).unwrap_or(serde_json::Value::Null)
}

/// Every recorded change of a database, in the order migrations applied them.
#[derive(Debug, Clone, Default)]
pub struct ObjectMap {
    dir: PathBuf,
    changes: Vec<ObjectChange>,
}

impl ObjectMap {
    /// Reads the map of the database `client` is connected to; empty when
    /// `planck migrate` never ran there (or an older planck did).
    /// `migrations_dir` turns file names into paths.
    pub async fn load(client: &impl GenericClient, migrations_dir: &Path) -> Result<ObjectMap> {
        // Migrations apply in file-name order: that is the order of history.
        let rows = match client
            .query(
                "SELECT /* planck */ objects FROM planck_migrations \
                 WHERE objects IS NOT NULL ORDER BY name",
                &[],
            )
            .await
        {
            Ok(rows) => rows,
            // Never migrated by planck, or by a planck without the map.
            Err(e)
                if e.code() == Some(&SqlState::UNDEFINED_TABLE)
                    || e.code() == Some(&SqlState::UNDEFINED_COLUMN) =>
            {
                Vec::new()
            }
            Err(e) => return Err(Error::db("reading planck_migrations", e)),
        };
        let mut changes = Vec::new();
        for r in rows {
            let v: serde_json::Value = r.get(0);
            let file: Vec<ObjectChange> = serde_json::from_value(v).map_err(|e| {
                Error::usage(format!(
                    "planck_migrations holds an object map this planck cannot read: {e}"
                ))
            })?;
            changes.extend(file);
        }
        Ok(ObjectMap {
            dir: migrations_dir.to_path_buf(),
            changes,
        })
    }

    pub fn changes(&self) -> &[ObjectChange] {
        self.changes.iter().as_slice()
    }

    /// The migration line that last made, dropped, rebuilt or renamed the
    /// index or constraint `name` (in `schema`, or in any schema when
    /// `None`): what a finding about it points at.
    pub fn object_origin(&self, schema: Option<&str>, name: &str) -> Option<Origin> {
        self.changes
            .iter()
            .rev()
            .find(|c| c.name == name && schema.is_none_or(|s| s == c.schema))
            .map(|c| Origin {
                path: self.dir.join(&c.migration),
                line: c.line,
                action: c.action,
            })
    }
}

/// An index the project's migrations dropped and did not create again under
/// its name: where it was dropped, where it had been created, and the
/// columns its `CREATE INDEX` listed (expressions left out), which is what
/// a plan that lost it is matched by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedIndex {
    pub schema: String,
    pub name: String,
    pub table: Option<String>,
    /// The migration's file name and the line of the statement that dropped it.
    pub dropped: (String, usize),
    /// The same for the statement that had created it, when the map knows.
    pub created: Option<(String, usize)>,
    /// The indexed columns in order (empty when the creating statement is
    /// not a `CREATE INDEX` or could not be read).
    pub columns: Vec<String>,
}

impl ObjectMap {
    /// Every index dropped by a migration and not created again later, in
    /// the order the migrations dropped them.
    pub fn dropped_indexes(&self) -> Vec<DroppedIndex> {
        let same = |a: &ObjectChange, b: &ObjectChange| {
            a.kind == Kind::Index && a.name == b.name && a.schema == b.schema
        };
        let makes = |c: &ObjectChange| {
            matches!(
                c.action,
                Action::Created | Action::Recreated | Action::Renamed
            )
        };
        let mut out = Vec::new();
        for (i, c) in self.changes.iter().enumerate() {
            if c.kind != Kind::Index || c.action != Action::Dropped {
                continue;
            }
            if self.changes[i + 1..].iter().any(|l| same(l, c) && makes(l)) {
                continue;
            }
            let created = self.changes[..i]
                .iter()
                .rev()
                .find(|p| same(p, c) && makes(p));
            let columns = created
                .and_then(|p| self.statement_at(&p.migration, p.line))
                .map(|sql| index_columns(&sql))
                .unwrap_or_default();
            out.push(DroppedIndex {
                schema: c.schema.clone(),
                name: c.name.clone(),
                table: c.table.clone(),
                dropped: (c.migration.clone(), c.line),
                created: created.map(|p| (p.migration.clone(), p.line)),
                columns,
            });
        }
        out
    }

    /// The text of the statement at `line` of the migration file `migration`.
    fn statement_at(&self, migration: &str, line: usize) -> Option<String> {
        let sql = std::fs::read_to_string(self.dir.join(migration)).ok()?;
        super::split::statements(&sql)?
            .into_iter()
            .find(|p| p.line == line)
            .map(|p| p.text)
    }
}

/// The plain columns a `CREATE INDEX ... ON t [USING m] (a, b DESC, (expr))`
/// lists, in order, without opclasses, sort orders or expressions;
/// unquoted names folded to lower case as PostgreSQL does. Empty for any
/// other statement.
pub fn index_columns(sql: &str) -> Vec<String> {
    let tokens = tokens(sql);
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.eq_ignore_ascii_case(w));
    if !tokens.first().is_some_and(|t| word(t, "create"))
        || !tokens.iter().take(4).any(|t| word(t, "index"))
    {
        return Vec::new();
    }
    let Some(on) = tokens.iter().position(|t| word(t, "on")) else {
        return Vec::new();
    };
    let Some(open) = tokens[on..].iter().position(|t| *t == Token::Open) else {
        return Vec::new();
    };
    let list = &tokens[on + open + 1..];
    let mut out = Vec::new();
    let (mut depth, mut first_of_element) = (0usize, true);
    for (i, t) in list.iter().enumerate() {
        // `lower(name)`: a function of a column, an expression.
        let call = list.get(i + 1) == Some(&Token::Open);
        match t {
            Token::Open => depth += 1,
            Token::Close if depth == 0 => break,
            Token::Close => depth -= 1,
            Token::Comma if depth == 0 => {
                first_of_element = true;
                continue;
            }
            Token::Word(w) if depth == 0 && first_of_element && !call => out.push(w.to_lowercase()),
            Token::Quoted(w) if depth == 0 && first_of_element && !call => out.push(w.clone()),
            _ => {}
        }
        first_of_element = false;
    }
    out
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Open,
    Close,
    Comma,
    Other,
}

/// Words, quoted identifiers and brackets; string literals and comments
/// are skipped whole, so a parenthesis inside them does not count.
fn tokens(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '-' if chars.get(i + 1) == Some(&'-') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            '\'' | '"' => {
                let mut text = String::new();
                i += 1;
                while i < chars.len() {
                    if chars[i] == c && chars.get(i + 1) == Some(&c) {
                        text.push(c);
                        i += 2;
                    } else if chars[i] == c {
                        i += 1;
                        break;
                    } else {
                        text.push(chars[i]);
                        i += 1;
                    }
                }
                out.push(if c == '"' {
                    Token::Quoted(text)
                } else {
                    Token::Other
                });
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                out.push(Token::Close);
                i += 1;
            }
            ',' => {
                out.push(Token::Comma);
                i += 1;
            }
            c if c.is_alphanumeric() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || "_$".contains(chars[i])) {
                    i += 1;
                }
                out.push(Token::Word(chars[start..i].iter().collect()));
            }
            c if c.is_whitespace() => i += 1,
            _ => {
                out.push(Token::Other);
                i += 1;
            }
        }
    }
    out
}

/// [`ObjectMap::object_origin`] for one object, read from the database.
pub async fn object_origin(
    client: &impl GenericClient,
    migrations_dir: &Path,
    schema: Option<&str>,
    name: &str,
) -> Result<Option<Origin>> {
    Ok(ObjectMap::load(client, migrations_dir)
        .await?
        .object_origin(schema, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns a dropped index is matched by: plain columns in order,
    /// opclasses, sort orders and expressions left out, quoted names kept.
    #[test]
    fn index_columns_reads_the_create_index_column_list() {
        assert_eq!(
            index_columns(
                "-- the feed (by account)\nCREATE INDEX events_account_created ON events (account_id, created_at DESC);"
            ),
            ["account_id", "created_at"]
        );
        assert_eq!(
            index_columns(
                "create unique index concurrently if not exists i on only public.t using btree \
                 (\"Code\" varchar_pattern_ops, lower(name), (a + b), Kind) where (x = 'a,(b')"
            ),
            ["Code", "kind"]
        );
        assert!(index_columns("ALTER TABLE t ALTER COLUMN a TYPE bigint").is_empty());
        assert!(index_columns("DROP INDEX i").is_empty());
    }

    fn snap(items: &[(Kind, u32, &str, &str)]) -> Snapshot {
        Snapshot(
            items
                .iter()
                .map(|(k, oid, schema, name)| {
                    (
                        (*k, *oid),
                        Object {
                            schema: schema.to_string(),
                            name: name.to_string(),
                            table: Some("t".into()),
                        },
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn diff_names_each_change() {
        let before = snap(&[
            (Kind::Index, 1, "public", "t_pkey"),
            (Kind::Index, 2, "public", "t_a"),
            (Kind::Index, 3, "public", "old_name"),
            (Kind::Constraint, 4, "public", "t_pkey"),
            (Kind::Index, 5, "public", "t_b"),
        ]);
        let after = snap(&[
            (Kind::Index, 1, "public", "t_pkey"),
            (Kind::Index, 3, "public", "new_name"),
            (Kind::Constraint, 4, "public", "t_pkey"),
            (Kind::Index, 6, "app", "t_c"),
            (Kind::Index, 7, "public", "t_b"),
        ]);
        let got: Vec<(Action, Kind, String, Option<String>)> = diff(&before, &after, "0002.sql", 7)
            .into_iter()
            .map(|c| {
                assert_eq!((c.migration.as_str(), c.line), ("0002.sql", 7));
                (
                    c.action,
                    c.kind,
                    format!("{}.{}", c.schema, c.name),
                    c.renamed_from,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (Action::Created, Kind::Index, "app.t_c".into(), None),
                (
                    Action::Renamed,
                    Kind::Index,
                    "public.new_name".into(),
                    Some("old_name".into())
                ),
                (Action::Dropped, Kind::Index, "public.t_a".into(), None),
                (Action::Recreated, Kind::Index, "public.t_b".into(), None),
            ]
        );
        assert!(diff(&after, &after, "x", 1).is_empty());
    }

    #[test]
    fn origin_is_the_latest_change_of_that_name() {
        let change = |migration: &str, line, action, schema: &str| ObjectChange {
            migration: migration.into(),
            line,
            action,
            kind: Kind::Index,
            schema: schema.into(),
            name: "items_slug".into(),
            table: Some("items".into()),
            renamed_from: None,
        };
        let map = ObjectMap {
            dir: PathBuf::from("/p/migrations"),
            changes: vec![
                change("0001_init.sql", 4, Action::Created, "public"),
                change("0002_fix.sql", 9, Action::Dropped, "public"),
                change("0002_fix.sql", 12, Action::Created, "app"),
            ],
        };
        assert_eq!(
            map.object_origin(Some("public"), "items_slug"),
            Some(Origin {
                path: "/p/migrations/0002_fix.sql".into(),
                line: 9,
                action: Action::Dropped
            })
        );
        assert_eq!(map.object_origin(None, "items_slug").unwrap().line, 12);
        assert_eq!(map.object_origin(Some("public"), "nope"), None);
    }
}
