//! The workload replay runs: statements, transactions and their weights.
//!
//! Read from the queries file: `[[statement]]` entries (their `calls` are the
//! weights) and `[[transaction]]` entries (format 2: `statements` in order,
//! `repeat`, `calls`, `think_ms`, `role`, `settings`, `isolation`,
//! `outcome`, `manual` and `[[transaction.bind]]` with `value`, `column` or
//! `result`). Statements that belong to no transaction run alone.
//!
//! The shared `queries` layer parses and validates the file (an unknown
//! statement id is an error at file:line); this module turns it into units.

use std::collections::HashSet;
use std::path::Path;

use super::attribution::locked_relations;
use crate::error::Result;
use crate::queries::{self, QueryFile};

#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub id: String,
    /// The text as recorded (what reports show).
    pub query: String,
    /// The text sent: the recorded one repaired where normalization broke
    /// it (`interval $1` is `$1::interval`, see
    /// [`crate::params::binding::repair`]) and, once the run has prepared
    /// it, with the casts that type its loose parameters.
    pub sql: String,
    pub role: Option<String>,
    pub calls: u64,
    /// Relations it writes or row-locks (see [`locked_relations`]).
    pub locks: Vec<String>,
    /// Whether it writes or row-locks (INSERT, UPDATE, DELETE, MERGE, FOR UPDATE/SHARE).
    pub writes: bool,
    /// Whether it changes rows (INSERT, UPDATE, DELETE, MERGE): the rows the
    /// server reports for it count in the integrity line.
    pub modifies: bool,
    /// Why a rollback would not undo it, when it calls such a function.
    pub side_effect: Option<&'static str>,
    /// Binds the statement's own text gives (the shared `params` layer's
    /// analysis: `$n` compared with, inserted into or assigned to a column
    /// is sampled from it; LIMIT gets a page size, OFFSET 0). A transaction's
    /// own `[[transaction.bind]]` entries win over these.
    pub auto_bind: Vec<Bind>,
    /// Where the queries file holds it (`queries/recorded.toml:12`, or
    /// `line 12` when the file's path is not known), for the warnings.
    pub location: Option<String>,
}

/// The binds [`crate::params::binding::analyze`] finds in `query`. A column
/// of no named table is taken from the statement's one table, when it has one.
fn auto_binds(id: &str, query: &str) -> Vec<Bind> {
    use crate::params::binding::{Binding, analyze};
    let a = analyze(query);
    a.bindings
        .iter()
        .filter_map(|(&n, b)| {
            let source = match b {
                Binding::Limit => BindSource::Value("50".into()),
                Binding::Offset => BindSource::Value("0".into()),
                Binding::Column { array: true, .. } => return None,
                Binding::Column { table, column, .. } => {
                    let table = table
                        .clone()
                        .or_else(|| (a.tables.len() == 1).then(|| a.tables[0].clone()))?;
                    BindSource::Column {
                        table,
                        column: column.clone(),
                    }
                }
            };
            Some(Bind {
                statement: id.to_string(),
                param: n,
                source,
            })
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub enum BindSource {
    Value(String),
    /// `table.column` or `schema.table.column`, sampled from the data.
    Column {
        table: String,
        column: String,
    },
    /// An output column of an earlier statement of the transaction; a
    /// column `$n`: the value bound to that statement's `$n` (a variable
    /// shared across statements).
    Result {
        statement: String,
        column: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bind {
    pub statement: String,
    /// `$n`, from 1.
    pub param: u32,
    pub source: BindSource,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    pub id: String,
    pub name: String,
    /// Indexes into [`Workload::statements`], in order.
    pub statements: Vec<usize>,
    pub repeat: u32,
    pub calls: u64,
    pub think_ms: f64,
    pub role: Option<String>,
    pub settings: Vec<(String, String)>,
    /// Which of `settings` the transaction set itself (`SET LOCAL`): set per
    /// transaction; the others were the session's, set once per connection.
    /// A hand-written entry's settings are all the transaction's.
    pub local_settings: Vec<String>,
    /// `read committed`, `repeatable read` or `serializable`.
    pub isolation: Option<String>,
    pub bind: Vec<Bind>,
    pub rollback: bool,
    pub manual: bool,
}

/// One thing a client runs: a transaction, or a statement alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Transaction(usize),
    Lone(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weights {
    #[default]
    Calls,
    Uniform,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    pub statements: Vec<Statement>,
    pub transactions: Vec<Transaction>,
    /// What runs, with its weight (> 0).
    pub units: Vec<(Unit, f64)>,
}

impl Workload {
    /// Builds the units: every transaction (rolled-back shapes only with
    /// `include_rollbacks`), and each statement of no transaction alone.
    pub fn new(
        statements: Vec<Statement>,
        transactions: Vec<Transaction>,
        weights: Weights,
        include_rollbacks: bool,
    ) -> Workload {
        let in_tx: HashSet<usize> = transactions
            .iter()
            .flat_map(|t| t.statements.iter().copied())
            .collect();
        let w = |calls: u64| match weights {
            Weights::Calls => calls.max(1) as f64,
            Weights::Uniform => 1.0,
        };
        let mut units = Vec::new();
        for (i, t) in transactions.iter().enumerate() {
            if t.rollback && !include_rollbacks {
                continue;
            }
            units.push((Unit::Transaction(i), w(t.calls)));
        }
        for (i, s) in statements.iter().enumerate() {
            if !in_tx.contains(&i) {
                units.push((Unit::Lone(i), w(s.calls)));
            }
        }
        Workload {
            statements,
            transactions,
            units,
        }
    }

    /// The statements a unit runs, in order (a transaction's `repeat` times).
    pub fn unit_statements(&self, unit: Unit) -> Vec<usize> {
        match unit {
            Unit::Lone(s) => vec![s],
            Unit::Transaction(t) => {
                let t = &self.transactions[t];
                (0..t.repeat.max(1))
                    .flat_map(|_| t.statements.iter().copied())
                    .collect()
            }
        }
    }

    pub fn unit_name(&self, unit: Unit) -> String {
        match unit {
            Unit::Lone(s) => self.statements[s].id.clone(),
            Unit::Transaction(t) => self.transactions[t].name.clone(),
        }
    }

    /// Statements with effects a rollback does not undo.
    pub fn side_effects(&self) -> Vec<(&Statement, &'static str)> {
        self.statements
            .iter()
            .filter_map(|s| s.side_effect.map(|e| (s, e)))
            .collect()
    }

    /// Relations the workload writes or locks (for the integrity check).
    pub fn written_relations(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.statements {
            for r in &s.locks {
                if !out.contains(r) {
                    out.push(r.clone());
                }
            }
        }
        out
    }
}

/// Functions and commands whose effect a ROLLBACK keeps (nextval/setval aside).
const SIDE_EFFECTS: &[(&str, &str)] = &[
    ("dblink", "dblink runs on another connection"),
    (
        "pg_advisory_lock",
        "a session advisory lock outlives the transaction",
    ),
    (
        "pg_try_advisory_lock",
        "a session advisory lock outlives the transaction",
    ),
    ("pg_terminate_backend", "it terminates a backend"),
    ("pg_cancel_backend", "it cancels a backend's query"),
    ("pg_notify", "a notification is sent"),
    ("notify", "a notification is sent"),
    ("lo_export", "it writes a file on the server"),
    (
        "copy",
        "COPY to a file or program has effects outside the database",
    ),
];

fn side_effect_of(query: &str) -> Option<&'static str> {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    SIDE_EFFECTS.iter().find_map(|(name, why)| {
        let hit = if *name == "notify" || *name == "copy" {
            words.first() == Some(name)
        } else {
            words.contains(name)
        };
        hit.then_some(*why)
    })
}

fn modifies(query: &str) -> bool {
    let words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let writes = |w: &str| matches!(w, "insert" | "update" | "delete" | "merge");
    let Some(first) = words.first() else {
        return false;
    };
    // A data-modifying CTE (`WITH moved AS (DELETE ... RETURNING ...)
    // SELECT ...`) writes too; a `FOR [NO KEY] UPDATE` is a lock, counted
    // by `locked_relations`.
    writes(first)
        || (first == "with"
            && words
                .windows(2)
                .any(|w| writes(&w[1]) && !matches!(w[0].as_str(), "for" | "key")))
}

impl Statement {
    pub fn new(id: String, query: String, role: Option<String>, calls: u64) -> Statement {
        let locks = locked_relations(&query);
        let sql = crate::params::binding::repair(&query).0;
        Statement {
            writes: !locks.is_empty() || modifies(&query),
            modifies: modifies(&query),
            side_effect: side_effect_of(&query),
            auto_bind: auto_binds(&id, &sql),
            sql,
            id,
            query,
            role,
            calls,
            locks,
            location: None,
        }
    }
}

/// Reads the queries file at `path` (format 2, through the shared `queries`
/// layer, which validates the transactions: ids that exist, binds naming
/// their own statements, an isolation PostgreSQL has) into replay's workload.
pub fn load(path: &Path) -> Result<(Vec<Statement>, Vec<Transaction>)> {
    let (mut statements, transactions) = from_file(&QueryFile::load(path)?);
    locate(&mut statements, path);
    Ok((statements, transactions))
}

/// Names each statement's place as `path:line`.
fn locate(statements: &mut [Statement], path: &Path) {
    for s in statements {
        if let Some(line) = s.location.as_deref().and_then(|l| l.strip_prefix("line ")) {
            s.location = Some(format!("{}:{line}", path.display()));
        }
    }
}

/// Replay's view of a parsed queries file. Ignored statements are left out
/// (a transaction that names one keeps its other statements).
pub fn from_file(qf: &QueryFile) -> (Vec<Statement>, Vec<Transaction>) {
    let statements: Vec<Statement> = qf
        .statements
        .iter()
        .filter(|s| s.ignore.is_none())
        .map(|s| Statement {
            location: s.line.map(|l| format!("line {l}")),
            ..Statement::new(
                s.id.clone(),
                s.query.trim().to_string(),
                s.role.clone(),
                s.calls.unwrap_or(1),
            )
        })
        .collect();
    let transactions = qf
        .transactions
        .iter()
        .map(|t| Transaction {
            id: t.id.clone(),
            // `tx-<id>`; a recorded id already starts so (`tx-3b3de4fe1e97`).
            name: t
                .name
                .clone()
                .unwrap_or_else(|| match t.id.starts_with("tx-") {
                    true => t.id.clone(),
                    false => format!("tx-{}", t.id),
                }),
            statements: t
                .statements
                .iter()
                .filter_map(|id| statements.iter().position(|s| &s.id == id))
                .collect(),
            repeat: t.repeat.max(1),
            calls: t.calls.unwrap_or(1),
            think_ms: t.think_ms,
            role: t.role.clone(),
            settings: t
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), v.as_text()))
                .collect(),
            local_settings: match t.recorded {
                true => t.local_settings.clone(),
                false => t.settings.iter().map(|(k, _)| k.clone()).collect(),
            },
            isolation: t.isolation.map(|i| i.sql().to_string()),
            bind: t
                .bind
                .iter()
                .map(|b| Bind {
                    statement: b.statement.clone(),
                    param: b.param,
                    source: match &b.source {
                        queries::BindSource::Value(v) => BindSource::Value(v.clone()),
                        queries::BindSource::Column(c) => {
                            let (table, column) = c.rsplit_once('.').unwrap_or(("", c));
                            BindSource::Column {
                                table: table.to_string(),
                                column: column.to_string(),
                            }
                        }
                        queries::BindSource::Result { statement, column } => BindSource::Result {
                            statement: statement.clone(),
                            column: column.clone(),
                        },
                    },
                })
                .collect(),
            rollback: t.outcome == queries::TxOutcome::Rollback,
            manual: t.manual,
        })
        .filter(|t| !t.statements.is_empty())
        .collect();
    (statements, transactions)
}

/// Parses a queries file's text (the tests hold theirs as text).
#[cfg(test)]
pub fn parse(path: &Path, text: &str) -> Result<(Vec<Statement>, Vec<Transaction>)> {
    let (mut statements, transactions) = from_file(&QueryFile::parse(path, text)?);
    locate(&mut statements, path);
    Ok((statements, transactions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn a_data_modifying_cte_writes_and_a_row_lock_does_not_modify() {
        assert!(modifies("insert into t values (1)"));
        assert!(modifies(
            "WITH moved AS (DELETE FROM q WHERE id = $1 RETURNING *) SELECT * FROM moved"
        ));
        assert!(!modifies(
            "WITH c AS (SELECT id FROM t FOR UPDATE) SELECT * FROM c"
        ));
        assert!(!modifies(
            "WITH c AS (SELECT id FROM t FOR NO KEY UPDATE) SELECT 1"
        ));
        assert!(!modifies("SELECT updated_at FROM t"));
        assert!(!modifies(""));
    }

    const FILE: &str = r#"format_version = 2

[[statement]]
id = "s1"
calls = 30
query = "UPDATE accounts SET n = n + 1 WHERE id = $1 RETURNING n"

[[statement]]
id = "s2"
calls = 30
query = "INSERT INTO items (account_id, seq) VALUES ($1, $2)"

[[statement]]
id = "s3"
calls = 10
query = "SELECT 1"

[[transaction]]
id = "t1"
statements = ["s1", "s2"]
calls = 30
think_ms = 2
manual = true

[[transaction.bind]]
statement = "s1"
param = 1
column = "accounts.id"

[[transaction.bind]]
statement = "s2"
param = 2
result = "s1.n"
"#;

    #[test]
    fn transactions_and_lone_statements_become_units() {
        let (s, t) = parse(Path::new("q.toml"), FILE).unwrap();
        assert_eq!(t[0].name, "tx-t1");
        // Each statement knows its line, for the stale-statement warning.
        assert_eq!(s[1].location.as_deref(), Some("q.toml:8"));
        // A recorded id keeps its one prefix.
        let recorded = FILE.replacen("id = \"t1\"", "id = \"tx-5f3e\"", 1);
        let (_, t2) = parse(Path::new("q.toml"), &recorded).unwrap();
        assert_eq!(t2[0].name, "tx-5f3e");
        assert_eq!(t[0].statements, vec![0, 1]);
        assert_eq!(
            t[0].bind[1].source,
            BindSource::Result {
                statement: "s1".into(),
                column: "n".into()
            }
        );
        let w = Workload::new(s, t, Weights::Calls, false);
        assert_eq!(
            w.units,
            vec![(Unit::Transaction(0), 30.0), (Unit::Lone(2), 10.0)]
        );
        assert_eq!(w.written_relations(), vec!["accounts", "items"]);
        assert!(w.statements[0].writes && !w.statements[2].writes);
        let u = Workload::new(
            w.statements.clone(),
            w.transactions.clone(),
            Weights::Uniform,
            false,
        );
        assert!(u.units.iter().all(|(_, w)| *w == 1.0));
    }

    /// Faults: a transaction naming an unknown statement id is an error at file:line.
    #[test]
    fn unknown_statement_id_is_an_error_at_its_line() {
        let text = FILE.replace(
            r#"statements = ["s1", "s2"]"#,
            r#"statements = ["s1", "nope"]"#,
        );
        let e = parse(Path::new("q.toml"), &text).unwrap_err();
        match e {
            Error::Config { line, message, .. } => {
                assert_eq!(line, Some(18)); // the [[transaction]] header
                assert!(message.contains("nope"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rolled_back_shapes_are_skipped_unless_asked() {
        let text = FILE.replace("manual = true", "manual = true\noutcome = \"rollback\"");
        let (s, t) = parse(Path::new("q.toml"), &text).unwrap();
        let w = Workload::new(s.clone(), t.clone(), Weights::Calls, false);
        assert!(
            !w.units
                .iter()
                .any(|(u, _)| matches!(u, Unit::Transaction(_)))
        );
        let w = Workload::new(s, t, Weights::Calls, true);
        assert!(
            w.units
                .iter()
                .any(|(u, _)| matches!(u, Unit::Transaction(_)))
        );
    }

    /// A lone statement's parameters are bound from its own text (the
    /// shared params layer), so a recorded file replays without hand binds.
    #[test]
    fn lone_statement_parameters_bind_from_the_text() {
        let s = Statement::new(
            "s".into(),
            "SELECT id FROM items WHERE account_id = $1 ORDER BY id LIMIT $2".into(),
            None,
            1,
        );
        assert_eq!(
            s.auto_bind
                .iter()
                .map(|b| (b.param, b.source.clone()))
                .collect::<Vec<_>>(),
            vec![
                (
                    1,
                    BindSource::Column {
                        table: "items".into(),
                        column: "account_id".into()
                    }
                ),
                (2, BindSource::Value("50".into())),
            ]
        );
    }

    #[test]
    fn side_effects_are_named() {
        assert!(side_effect_of("SELECT pg_advisory_lock($1)").is_some());
        assert!(side_effect_of("NOTIFY jobs").is_some());
        assert!(side_effect_of("SELECT nextval('s')").is_none());
        assert!(side_effect_of("SELECT notify_count FROM t").is_none());
    }
}
