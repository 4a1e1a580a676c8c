//! `[[transaction]]` entries of the queries file: statements that run
//! together, as one transaction, with the session they need.
//!
//! ```toml
//! [[transaction]]
//! id = "checkout"
//! name = "Checkout"
//! statements = ["5f0c3a9e1b2d4c68", "0d1e2f3a4b5c6d7e"]
//! repeat = 1          # times the statements run inside one transaction
//! calls = 120         # times the transaction ran in the recording (its weight)
//! think_ms = 25       # pause between statements, >= 0
//! role = "app_user"
//! settings = { "app.account_id" = "42", "request.jwt.claims" = { sub = "u1" } }
//! isolation = "repeatable read"
//! outcome = "commit"  # or "rollback"
//! manual = true
//!
//! [[transaction.bind]]
//! statement = "0d1e2f3a4b5c6d7e"
//! param = 1
//! result = "5f0c3a9e1b2d4c68.id"   # or: value = 42, or: column = "public.items.id"
//! ```
//!
//! or, instead of `[[transaction.bind]]` entries, variables: a value shared
//! by several slots (the first slot's value, drawn as its statement's text
//! binds it), and a RETURNING value fed forward:
//!
//! ```toml
//! bind = { aid = ["upd_acc.$2", "sel_acc.$1", "ins_his.$3"],
//!          seq = { from = "upd_acc.returning.seq", to = ["ins_his.$5"] } }
//! ```
//!
//! Both become bindings: a shared slot is `result = "upd_acc.$2"` (the value
//! bound to that `$2`), `from` is `result = "upd_acc.seq"`.
//!
//! Parsed and validated here (statement ids that exist, `think_ms >= 0`, an
//! isolation level PostgreSQL has, bindings that name a statement of the
//! transaction and one source), so a command that runs them trusts them.
//! `record` writes entries with `recorded = true` from what its capture
//! relay saw (and replaces them on the next recording); the others are
//! kept as written.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::read_error::{check_keys, file_error};
use super::statement::Statement;
use crate::config::line_col;
use crate::error::Result;

/// A transaction of the recorded workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    /// Unique among the file's transactions.
    pub id: String,
    pub name: Option<String>,
    /// Statement ids, in the order they run; each exists in the file.
    pub statements: Vec<String>,
    /// Times the statements run, in order, inside one transaction (>= 1).
    pub repeat: u32,
    /// Times the transaction ran in the recording.
    pub calls: Option<u64>,
    /// Pause between two statements, in milliseconds (finite, >= 0).
    pub think_ms: f64,
    /// The role to run as (`SET LOCAL ROLE`); `None`: the connection's.
    pub role: Option<String>,
    /// Settings applied for the transaction (`set_config(name, value, true)`),
    /// sorted by name (JSON object keys too).
    pub settings: Vec<(String, SettingValue)>,
    /// `None`: the server's default.
    pub isolation: Option<Isolation>,
    pub bind: Vec<Bind>,
    pub outcome: TxOutcome,
    /// Written by a person: never changed by `record`.
    pub manual: bool,
    /// 1-based line of the entry.
    pub line: Option<usize>,
    /// Written by `record` from what its relay saw: a re-recording
    /// replaces it. Entries without it are hand-written and kept.
    pub recorded: bool,
    /// Which of `settings` the transaction set itself (`SET LOCAL`,
    /// `set_config(.., true)`); the others were the session's when it ran.
    pub local_settings: Vec<String>,
}

/// A setting's value: text as written, or a JSON document (JWT claims) for
/// a TOML table or array: the session layer's type, which applies it.
pub use crate::session::SettingValue;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    /// As SQL writes it: `BEGIN ISOLATION LEVEL <this>`.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }

    /// `read committed`, `repeatable read` or `serializable`, in any case,
    /// with `_` or `-` for the space.
    pub fn parse(s: &str) -> Option<Isolation> {
        let n = s.trim().to_lowercase().replace(['_', '-'], " ");
        match n.split_whitespace().collect::<Vec<_>>().join(" ").as_str() {
            "read committed" => Some(Isolation::ReadCommitted),
            "repeatable read" => Some(Isolation::RepeatableRead),
            "serializable" => Some(Isolation::Serializable),
            _ => None,
        }
    }
}

/// How a transaction ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TxOutcome {
    #[default]
    Commit,
    Rollback,
}

/// Where one parameter of one statement gets its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Bind {
    /// A statement of the transaction.
    pub statement: String,
    /// `$n`, from 1.
    pub param: u32,
    pub source: BindSource,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BindSource {
    /// A fixed value, as text.
    Value(String),
    /// Sampled from a column: `table.column` or `schema.table.column`.
    Column(String),
    /// An output column of an earlier statement of the transaction.
    Result { statement: String, column: String },
}

#[derive(Debug, Deserialize)]
pub(super) struct RawTransaction {
    id: String,
    name: Option<String>,
    /// Defaulted so that a misspelt key is named as unknown (by
    /// `check_keys`), not reported as `statements` missing.
    #[serde(default)]
    statements: Vec<String>,
    repeat: Option<i64>,
    calls: Option<u64>,
    think_ms: Option<toml::Value>,
    role: Option<String>,
    #[serde(default)]
    settings: toml::Table,
    isolation: Option<String>,
    /// `[[transaction.bind]]` entries, or shared variables:
    /// `bind = { aid = ["upd_acc.$2", "sel_acc.$1"] }`.
    bind: Option<toml::Value>,
    outcome: Option<String>,
    #[serde(default)]
    manual: bool,
    #[serde(default)]
    recorded: bool,
    #[serde(default)]
    local_settings: Vec<String>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
pub(super) struct RawBind {
    statement: String,
    param: i64,
    value: Option<toml::Value>,
    column: Option<String>,
    result: Option<String>,
    /// `result` as the issue writes it: `s1.returning.item_seq`.
    from: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

/// The longest pause `think_ms` may ask for: an hour.
const MAX_THINK_MS: f64 = 3_600_000.0;

const TRANSACTION_KEYS: &str = "id, name, statements, repeat, calls, think_ms, role, settings, \
                                isolation, bind, outcome, manual, recorded, local_settings";
const BIND_KEYS: &str = "statement, param, value, column, result, from";

/// `bind = { name = ["stmt.$n", ...] }`: every slot after the first takes
/// the value bound to the first (`result = "stmt.$n"`), so one drawn value
/// is shared across statements (TPC-B's `aid`). Bindings in order: the
/// first slot must belong to a statement that runs before the others.
fn shared_variables(
    table: &toml::Table,
    id: &str,
) -> std::result::Result<Vec<RawBind>, (String, &'static str)> {
    let hint =
        "write bind = { name = [\"<statement id>.$n\", ...] }, the first slot giving the value";
    let slot = |v: &toml::Value| -> std::result::Result<(String, i64), (String, &'static str)> {
        let text = v.as_str().unwrap_or_default();
        text.rsplit_once(".$")
            .and_then(|(s, n)| Some((s.to_string(), n.parse::<i64>().ok()?)))
            .filter(|(s, _)| !s.is_empty())
            .ok_or_else(|| {
                (
                    format!("transaction {id}: {v} is not <statement id>.$n"),
                    hint,
                )
            })
    };
    let mut out = Vec::new();
    for (name, var) in table {
        // { from = "s1.returning.col", to = ["s2.$3"] }: a RETURNING value.
        if let Some(t) = var.as_table() {
            let (Some(from), Some(to)) = (
                t.get("from").and_then(toml::Value::as_str),
                t.get("to").and_then(toml::Value::as_array),
            ) else {
                return Err((
                    format!(
                        "transaction {id}: bind variable {name} needs from = \"<statement id>.returning.<column>\" and to = [slots]"
                    ),
                    hint,
                ));
            };
            for v in to {
                let (statement, param) = slot(v)?;
                out.push(RawBind {
                    statement,
                    param,
                    value: None,
                    column: None,
                    result: None,
                    from: Some(from.to_string()),
                    other: BTreeMap::new(),
                });
            }
            continue;
        }
        let Some(slots) = var.as_array().filter(|a| a.len() >= 2) else {
            return Err((
                format!("transaction {id}: bind variable {name} needs a list of two slots or more"),
                hint,
            ));
        };
        let (first, n) = slot(&slots[0])?;
        for v in &slots[1..] {
            let (statement, param) = slot(v)?;
            out.push(RawBind {
                statement,
                param,
                value: None,
                column: None,
                result: Some(format!("{first}.${n}")),
                from: None,
                other: BTreeMap::new(),
            });
        }
    }
    Ok(out)
}

/// A TOML value as a setting or bound value's text.
fn scalar_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Datetime(d) => Some(d.to_string()),
        toml::Value::Array(_) | toml::Value::Table(_) => None,
    }
}

fn to_json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => serde_json::Value::String(s.clone()),
        toml::Value::Integer(i) => serde_json::Value::from(*i),
        toml::Value::Float(f) => serde_json::Value::from(*f),
        toml::Value::Boolean(b) => serde_json::Value::Bool(*b),
        toml::Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        toml::Value::Array(a) => serde_json::Value::Array(a.iter().map(to_json).collect()),
        toml::Value::Table(t) => {
            serde_json::Value::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

/// Checks every transaction against the file's statements.
pub(super) fn validate(
    path: &Path,
    text: &str,
    raw: Vec<toml::Spanned<RawTransaction>>,
    statements: &[Statement],
) -> Result<Vec<Transaction>> {
    let ids: HashSet<&str> = statements.iter().map(|s| s.id.as_str()).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(raw.len());
    for spanned in raw {
        let (line, _) = line_col(text, spanned.span().start);
        let r = spanned.into_inner();
        let err = |message: String, hint: &str| file_error(path, Some(line), message, hint);
        check_keys(
            path,
            Some(line),
            "a [[transaction]]",
            &r.other,
            TRANSACTION_KEYS,
        )?;
        check_identity(&r, &ids, &mut seen, line, &err)?;
        let repeat = match r.repeat {
            None => 1,
            Some(n) if (1..=i64::from(u32::MAX)).contains(&n) => n as u32,
            Some(n) => {
                return Err(err(
                    format!("transaction {}: repeat = {n} must be 1 or more", r.id),
                    "repeat is how many times the statements run inside one transaction",
                ));
            }
        };
        let think_ms = think_ms(&r, &err)?;
        let isolation = match &r.isolation {
            None => None,
            Some(s) => Some(Isolation::parse(s).ok_or_else(|| {
                err(
                    format!("transaction {}: unknown isolation level {s:?}", r.id),
                    "use \"read committed\", \"repeatable read\" or \"serializable\"",
                )
            })?),
        };
        let outcome = match r.outcome.as_deref() {
            None | Some("commit") => TxOutcome::Commit,
            Some("rollback") => TxOutcome::Rollback,
            Some(o) => {
                return Err(err(
                    format!("transaction {}: unknown outcome {o:?}", r.id),
                    "use \"commit\" or \"rollback\"",
                ));
            }
        };
        let settings = r
            .settings
            .iter()
            .map(|(k, v)| {
                let value = match scalar_text(v) {
                    Some(t) => SettingValue::Text(t),
                    None => SettingValue::Json(to_json(v)),
                };
                (k.clone(), value)
            })
            .collect();
        let raw_binds = raw_binds(r.bind, &r.id, &err)?;
        let mut bind = Vec::with_capacity(raw_binds.len());
        for b in raw_binds {
            bind.push(checked_bind(b, &r.id, &r.statements, path, line, &err)?);
        }
        out.push(Transaction {
            id: r.id,
            name: r.name,
            statements: r.statements,
            repeat,
            calls: r.calls,
            think_ms,
            role: r.role,
            settings,
            isolation,
            bind,
            outcome,
            manual: r.manual,
            line: Some(line),
            recorded: r.recorded,
            local_settings: r.local_settings,
        });
    }
    Ok(out)
}

/// Checks a transaction's id (present, unique in the file, first seen at
/// `line`) and that it lists statements the file has.
fn check_identity(
    r: &RawTransaction,
    ids: &HashSet<&str>,
    seen: &mut HashMap<String, usize>,
    line: usize,
    err: &impl Fn(String, &str) -> crate::error::Error,
) -> Result<()> {
    if r.id.trim().is_empty() {
        return Err(err(
            "transaction with an empty id".into(),
            "give it an id, unique in the file",
        ));
    }
    if let Some(first) = seen.insert(r.id.clone(), line) {
        return Err(err(
            format!("transaction {} appears twice (first at line {first})", r.id),
            "give each transaction its own id",
        ));
    }
    if r.statements.is_empty() {
        return Err(err(
            format!("transaction {} has no statements", r.id),
            "list the ids of its [[statement]] entries in `statements`",
        ));
    }
    if let Some(missing) = r.statements.iter().find(|s| !ids.contains(s.as_str())) {
        return Err(err(
            format!(
                "transaction {} names statement {missing}, which the file does not have",
                r.id
            ),
            "use the `id` of a [[statement]] of this file (ids of hand-added entries without one are derived: add an id)",
        ));
    }
    Ok(())
}

/// A transaction's `think_ms`: a number of milliseconds, 0 to an hour.
fn think_ms(r: &RawTransaction, err: &impl Fn(String, &str) -> crate::error::Error) -> Result<f64> {
    let think_ms = match &r.think_ms {
        None => 0.0,
        Some(toml::Value::Integer(i)) => *i as f64,
        Some(toml::Value::Float(f)) => *f,
        Some(other) => {
            return Err(err(
                format!(
                    "transaction {}: think_ms must be a number of milliseconds, not {}",
                    r.id,
                    other.type_str()
                ),
                "write e.g. think_ms = 25",
            ));
        }
    };
    if !think_ms.is_finite() || think_ms < 0.0 {
        return Err(err(
            format!(
                "transaction {}: think_ms = {think_ms} must be 0 or more",
                r.id
            ),
            "think_ms is the pause between two statements, in milliseconds",
        ));
    }
    // A pause of more than an hour is a typo (seconds for ms, a stray
    // exponent): replay would hold the step, and the row locks taken
    // before it, that long.
    if think_ms > MAX_THINK_MS {
        return Err(err(
            format!(
                "transaction {}: think_ms = {} is more than an hour",
                r.id,
                crate::output::number(think_ms)
            ),
            "think_ms is in milliseconds: 2 seconds is think_ms = 2000",
        ));
    }
    Ok(think_ms)
}

/// A transaction's `bind`, as written: [[transaction.bind]] entries, or a
/// table of shared variables.
fn raw_binds(
    bind: Option<toml::Value>,
    id: &str,
    err: &impl Fn(String, &str) -> crate::error::Error,
) -> Result<Vec<RawBind>> {
    Ok(match bind {
        None => Vec::new(),
        Some(toml::Value::Table(t)) => shared_variables(&t, id).map_err(|(m, h)| err(m, h))?,
        Some(toml::Value::Array(a)) => a
            .into_iter()
            .map(|v| {
                v.try_into::<RawBind>().map_err(|e| {
                    err(
                        format!("transaction {}: a binding: {}", id, e.message()),
                        "a [[transaction.bind]] takes statement, param and one of value, column, result",
                    )
                })
            })
            .collect::<Result<_>>()?,
        Some(other) => {
            return Err(err(
                format!(
                    "transaction {}: bind must be [[transaction.bind]] entries or a table of variables, not {}",
                    id,
                    other.type_str()
                ),
                "see [[transaction.bind]] in docs/replay.md",
            ));
        }
    })
}

/// Checks one binding of transaction `id` (its keys, its statement among
/// `statements`, its parameter, exactly one source) and resolves its source.
fn checked_bind(
    mut b: RawBind,
    id: &str,
    statements: &[String],
    path: &Path,
    line: usize,
    err: &impl Fn(String, &str) -> crate::error::Error,
) -> Result<Bind> {
    let sources = [
        b.value.is_some(),
        b.column.is_some(),
        b.result.is_some(),
        b.from.is_some(),
    ];
    if let Some(f) = b.from.take().filter(|_| b.result.is_none()) {
        // `s1.returning.col` is `s1.col`.
        b.result = Some(match f.split_once(".returning.") {
            Some((s, c)) => format!("{s}.{c}"),
            None => f,
        });
    }
    check_keys(
        path,
        Some(line),
        "a [[transaction.bind]]",
        &b.other,
        BIND_KEYS,
    )?;
    let Some(pos) = statements.iter().position(|s| *s == b.statement) else {
        return Err(err(
            format!(
                "transaction {}: a binding names statement {}, which is not in its statements",
                id, b.statement
            ),
            "bind parameters of the transaction's own statements",
        ));
    };
    if b.param < 1 || b.param > 65535 {
        return Err(err(
            format!(
                "transaction {}: param = {} must be a parameter number ($1 is 1)",
                id, b.param
            ),
            "param is n of $n, from 1",
        ));
    }
    if sources.iter().filter(|s| **s).count() != 1 {
        return Err(err(
            format!(
                "transaction {}: the binding of ${} of {} needs exactly one of value, column, result, from",
                id, b.param, b.statement
            ),
            "value = a fixed value, column = \"table.column\" to sample, result = \"<statement id>.<column>\" (or from = \"<statement id>.returning.<column>\"), result = \"<statement id>.$n\" for the value of its $n",
        ));
    }
    let source = if let Some(v) = &b.value {
        BindSource::Value(scalar_text(v).unwrap_or_else(|| to_json(v).to_string()))
    } else if let Some(c) = b.column {
        let parts = c.split('.').count();
        if !(2..=3).contains(&parts) || c.split('.').any(str::is_empty) {
            return Err(err(
                format!("transaction {}: column = {c:?} is not table.column", id),
                "write table.column or schema.table.column",
            ));
        }
        BindSource::Column(c)
    } else {
        let res = b.result.unwrap_or_default();
        let Some((stmt, column)) = res
            .split_once('.')
            .filter(|(s, c)| !s.is_empty() && !c.is_empty())
        else {
            return Err(err(
                format!(
                    "transaction {}: result = {res:?} is not <statement id>.<column>",
                    id
                ),
                "name an earlier statement of the transaction and one of its output columns",
            ));
        };
        let earlier = statements[..pos].iter().any(|s| s == stmt);
        if !earlier {
            return Err(err(
                format!(
                    "transaction {}: result = {res:?} does not name a statement that runs before {}",
                    id, b.statement
                ),
                "a value can only come from a statement that ran earlier in the transaction",
            ));
        }
        BindSource::Result {
            statement: stmt.to_string(),
            column: column.to_string(),
        }
    };
    Ok(Bind {
        statement: b.statement,
        param: b.param as u32,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queries::QueryFile;

    const STATEMENTS: &str = "format_version = 2\n\
        [[statement]]\nid = \"a\"\nquery = \"INSERT INTO t (x) VALUES ($1) RETURNING id\"\n\
        [[statement]]\nid = \"b\"\nquery = \"SELECT * FROM u WHERE t_id = $1\"\n";

    fn parse(tx: &str) -> Result<QueryFile> {
        QueryFile::parse(Path::new("q.toml"), &format!("{STATEMENTS}{tx}"))
    }

    #[test]
    fn a_full_transaction_is_parsed() {
        let f = parse(
            "[[transaction]]\nid = \"checkout\"\nname = \"Checkout\"\nstatements = [\"a\", \"b\"]\n\
             repeat = 2\ncalls = 7\nthink_ms = 2.5\nrole = \"app_user\"\nisolation = \"Repeatable_Read\"\n\
             outcome = \"rollback\"\nmanual = true\n\
             settings = { \"app.account_id\" = 42, \"request.jwt.claims\" = { sub = \"u1\", roles = [\"x\"] } }\n\
             [[transaction.bind]]\nstatement = \"b\"\nparam = 1\nresult = \"a.id\"\n\
             [[transaction.bind]]\nstatement = \"a\"\nparam = 1\ncolumn = \"public.t.x\"\n",
        )
        .unwrap();
        let t = &f.transactions[0];
        assert_eq!(t.id, "checkout");
        assert_eq!(t.line, Some(8));
        assert_eq!(t.statements, ["a", "b"]);
        assert_eq!((t.repeat, t.calls, t.think_ms), (2, Some(7), 2.5));
        assert_eq!(t.isolation, Some(Isolation::RepeatableRead));
        assert_eq!(t.outcome, TxOutcome::Rollback);
        assert!(t.manual);
        assert_eq!(
            t.settings,
            [
                (
                    "app.account_id".to_string(),
                    SettingValue::Text("42".into())
                ),
                (
                    "request.jwt.claims".to_string(),
                    SettingValue::Json(serde_json::json!({"sub": "u1", "roles": ["x"]}))
                ),
            ]
        );
        assert_eq!(t.settings[1].1.as_text(), r#"{"roles":["x"],"sub":"u1"}"#);
        assert_eq!(
            t.bind,
            [
                Bind {
                    statement: "b".into(),
                    param: 1,
                    source: BindSource::Result {
                        statement: "a".into(),
                        column: "id".into()
                    }
                },
                Bind {
                    statement: "a".into(),
                    param: 1,
                    source: BindSource::Column("public.t.x".into())
                },
            ]
        );
        let d = parse("[[transaction]]\nid = \"d\"\nstatements = [\"a\"]\n").unwrap();
        let d = &d.transactions[0];
        assert_eq!(
            (d.repeat, d.think_ms, d.isolation, d.outcome),
            (1, 0.0, None, TxOutcome::Commit)
        );
    }

    #[test]
    fn invalid_transactions_are_errors_at_their_line() {
        let cases = [
            (
                "statements = [\"a\", \"zz\"]",
                "names statement zz, which the file does not have",
            ),
            (
                "statements = [\"a\"]\nthink_ms = -1",
                "think_ms = -1 must be 0 or more",
            ),
            (
                "statements = [\"a\"]\nthink_ms = \"5\"",
                "think_ms must be a number",
            ),
            (
                "statements = [\"a\"]\nthink_ms = 1e300",
                "think_ms = 1e300 is more than an hour",
            ),
            (
                "statements = [\"a\"]\nisolation = \"snapshot\"",
                "unknown isolation level \"snapshot\"",
            ),
            (
                "statements = [\"a\"]\nrepeat = 0",
                "repeat = 0 must be 1 or more",
            ),
            (
                "statements = [\"a\"]\noutcome = \"maybe\"",
                "unknown outcome",
            ),
            ("statements = []", "has no statements"),
            (
                "statements = [\"a\"]\nthinkms = 3",
                "unknown key `thinkms` in a [[transaction]]",
            ),
            // Misspelt, the list is not reported as missing.
            (
                "statments = [\"a\"]",
                "unknown key `statments` in a [[transaction]]",
            ),
            (
                "statements = [\"a\", \"b\"]\n[[transaction.bind]]\nstatement = \"a\"\nparam = 1\nresult = \"b.id\"",
                "does not name a statement that runs before a",
            ),
            (
                "statements = [\"a\"]\n[[transaction.bind]]\nstatement = \"b\"\nparam = 1\nvalue = 1",
                "names statement b, which is not in its statements",
            ),
            (
                "statements = [\"a\"]\n[[transaction.bind]]\nstatement = \"a\"\nparam = 1\nvalue = 1\ncolumn = \"t.x\"",
                "needs exactly one of value, column, result, from",
            ),
            (
                "statements = [\"a\"]\n[[transaction.bind]]\nstatement = \"a\"\nparam = 0\nvalue = 1",
                "param = 0 must be a parameter number",
            ),
        ];
        for (body, want) in cases {
            let msg = parse(&format!("\n[[transaction]]\nid = \"t\"\n{body}\n"))
                .unwrap_err()
                .to_string();
            assert!(msg.starts_with("q.toml:9: "), "{body}: {msg}");
            assert!(msg.contains(want), "{body}: {msg}");
        }
        let msg = parse(
            "[[transaction]]\nid = \"t\"\nstatements = [\"a\"]\n[[transaction]]\nid = \"t\"\nstatements = [\"b\"]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("transaction t appears twice (first at line 8)"),
            "{msg}"
        );
    }

    /// The issue's forms: variables shared across statements and `from`
    /// a RETURNING column become result bindings that name their source.
    #[test]
    fn bind_variables_and_from_become_result_bindings() {
        let f = parse(
            "[[transaction]]\nid = \"t\"\nstatements = [\"a\", \"b\"]\n\
             bind = { x = [\"a.$1\", \"b.$1\"], id = { from = \"a.returning.id\", to = [\"b.$2\"] } }\n",
        )
        .unwrap();
        let mut got: Vec<(String, u32, BindSource)> = f.transactions[0]
            .bind
            .iter()
            .map(|b| (b.statement.clone(), b.param, b.source.clone()))
            .collect();
        got.sort_by_key(|(_, p, _)| *p);
        let result = |c: &str| BindSource::Result {
            statement: "a".into(),
            column: c.into(),
        };
        assert_eq!(
            got,
            [
                ("b".to_string(), 1, result("$1")),
                ("b".to_string(), 2, result("id"))
            ]
        );
        let f = parse(
            "[[transaction]]\nid = \"t\"\nstatements = [\"a\", \"b\"]\n\
             [[transaction.bind]]\nstatement = \"b\"\nparam = 1\nfrom = \"a.returning.id\"\n",
        )
        .unwrap();
        assert_eq!(f.transactions[0].bind[0].source, result("id"));
        for (body, want) in [
            (
                "bind = { x = [\"b.$1\", \"a.$1\"] }",
                "does not name a statement that runs before a",
            ),
            (
                "bind = { x = [\"a.$1\"] }",
                "needs a list of two slots or more",
            ),
            (
                "bind = { x = [\"a\", \"b.$1\"] }",
                "is not <statement id>.$n",
            ),
            ("bind = 3", "bind must be"),
            (
                "[[transaction.bind]]\nstatement = \"b\"\nparam = 1\nresult = \"a.id\"\nfrom = \"a.returning.id\"",
                "needs exactly one of value, column, result, from",
            ),
        ] {
            let msg = parse(&format!(
                "[[transaction]]\nid = \"t\"\nstatements = [\"a\", \"b\"]\n{body}\n"
            ))
            .unwrap_err()
            .to_string();
            assert!(msg.contains(want), "{body}: {msg}");
        }
    }
}
