//! Writing the queries file back without losing what no command owns.
//!
//! A file read from disk keeps its [`toml_edit`] document. A rewrite edits
//! that document: each statement read from the file keeps its table (its
//! comments, key order, `x-` keys and formatting) and only the facts a
//! recording measures are set in it; new statements get a table of their
//! own; pruned ones lose theirs. Everything else (`[[transaction]]`
//! entries, comments, top-level `x-` keys, the trailing text) is left as it
//! was. Tables are written in key order, statements sorted by role and
//! text, so the same content always renders to the same bytes.

use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

use super::evidence::{Observed, ObservedColumn};
use super::statement::{Statement, normalize_space};
use super::transaction::{BindSource, SettingValue, Transaction, TxOutcome};
use super::{FORMAT_VERSION, QueryFile};

/// The header of a file planck creates.
const HEADER: &str = "# Statements planck verifies, recorded from pg_stat_statements by `planck record`.\n\
# Edit freely: add a [[statement]] by hand (manual = true), delete one, or\n\
# set ignore = \"why\" on one. Re-recording keeps your edits, your comments,\n\
# [[transaction]] entries and keys starting with x-.\n";

impl QueryFile {
    /// The file's text. Statements are sorted by role and text, so the same
    /// set always renders to the same bytes; a file read from disk keeps
    /// everything no command owns (see [`write`]).
    pub fn render(&self) -> String {
        let f = self;
        let (mut doc, old, lines) = match &f.source {
            Some(s) => {
                let mut doc = s.doc.clone();
                let old: Vec<Table> = match doc.get_mut("statement") {
                    Some(Item::ArrayOfTables(a)) => std::mem::take(a).into_iter().collect(),
                    _ => Vec::new(),
                };
                (doc, old, s.lines.as_slice())
            }
            None => (
                format!("{HEADER}format_version = {FORMAT_VERSION}\n")
                    .parse::<DocumentMut>()
                    .expect("the header parses"),
                Vec::new(),
                &[][..],
            ),
        };
        set_version(&mut doc);

        let mut sorted: Vec<&Statement> = f.statements.iter().collect();
        sorted.sort_by(|a, b| {
            (a.role.as_deref(), normalize_space(&a.query), &a.id).cmp(&(
                b.role.as_deref(),
                normalize_space(&b.query),
                &b.id,
            ))
        });
        let mut tables = ArrayOfTables::new();
        for s in sorted {
            let from_file = s
                .line
                .and_then(|l| lines.iter().position(|&x| x == l))
                .and_then(|i| old.get(i));
            tables.push(match from_file {
                Some(t) => {
                    let mut t = t.clone();
                    set_facts(&mut t, s);
                    t
                }
                None => new_statement(s),
            });
        }
        match doc.get_mut("statement") {
            Some(item) => *item = Item::ArrayOfTables(tables),
            None if !tables.is_empty() => {
                doc.insert("statement", Item::ArrayOfTables(tables));
            }
            None => {}
        }

        transactions_into(&mut doc, f);
        let relations: Vec<&str> = f.created_relations.iter().map(String::as_str).collect();
        let in_doc: Option<Vec<&str>> = doc
            .get("created_relations")
            .and_then(Item::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect());
        if in_doc.as_deref() != Some(&relations[..]) && !(in_doc.is_none() && relations.is_empty())
        {
            set(
                doc.as_table_mut(),
                "created_relations",
                Some(Value::Array(relations.iter().copied().collect())),
            );
        }

        let read = f.source.as_ref().map(|s| &s.observed);
        if read != Some(&f.observed) {
            if f.observed.is_empty() {
                doc.remove("observed");
            } else {
                doc.insert("observed", Item::Table(observed_table(&f.observed)));
            }
        }

        clear_positions(doc.as_table_mut());
        doc.to_string()
    }
}

/// `[observed]`, one inline table a column, in key order.
fn observed_table(o: &Observed) -> Table {
    let mut t = Table::new();
    t.decor_mut().set_prefix("\n");
    for (key, c) in &o.columns {
        t.insert(key, Item::Value(Value::InlineTable(observed_column(c))));
    }
    t
}

fn observed_column(c: &ObservedColumn) -> InlineTable {
    let mut t = InlineTable::new();
    if !c.values.is_empty() {
        let mut values = InlineTable::new();
        for (v, n) in &c.values {
            values.insert(v, Value::from(*n as i64));
        }
        t.insert("values", Value::InlineTable(values));
    }
    if c.null_tests > 0 {
        t.insert("null_tests", Value::from(c.null_tests as i64));
    }
    if c.not_null_tests > 0 {
        t.insert("not_null_tests", Value::from(c.not_null_tests as i64));
    }
    t
}

/// Hand-written transactions are kept as written; recorded ones (`recorded
/// = true`, not made `manual`) are replaced by the file's recorded ones, in
/// its order. A file made in memory writes all of its own.
fn transactions_into(doc: &mut DocumentMut, f: &QueryFile) {
    let recorded = |t: &Table| {
        t.get("recorded").and_then(Item::as_bool) == Some(true)
            && t.get("manual").and_then(Item::as_bool) != Some(true)
    };
    let mut tables = ArrayOfTables::new();
    let had = match doc.get_mut("transaction") {
        Some(Item::ArrayOfTables(a)) => {
            for t in std::mem::take(a) {
                if !recorded(&t) {
                    tables.push(t);
                }
            }
            true
        }
        _ => false,
    };
    for t in &f.transactions {
        if (t.recorded && !t.manual) || !had {
            tables.push(transaction_table(t));
        }
    }
    if tables.is_empty() {
        doc.remove("transaction");
    } else {
        doc.insert("transaction", Item::ArrayOfTables(tables));
    }
}

fn set_version(doc: &mut DocumentMut) {
    let v = Value::from(i64::from(FORMAT_VERSION));
    set(doc.as_table_mut(), "format_version", Some(v));
}

/// Sets (or removes) one key, keeping its place and formatting when only
/// the value changes. A new key goes before `query`, which comes last.
fn set(t: &mut Table, key: &str, v: Option<Value>) {
    let Some(mut v) = v else {
        t.remove(key);
        return;
    };
    if let Some(Item::Value(old)) = t.get_mut(key) {
        if same(old, &v) {
            return;
        }
        *v.decor_mut() = old.decor().clone();
        *old = v;
        return;
    }
    let query = t.remove_entry("query");
    t.insert(key, Item::Value(v));
    if let Some((k, item)) = query {
        t.insert_formatted(&k, item);
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Integer(x), Value::Integer(y)) => x.value() == y.value(),
        (Value::Boolean(x), Value::Boolean(y)) => x.value() == y.value(),
        (Value::String(x), Value::String(y)) => x.value() == y.value(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
        }
        (Value::InlineTable(x), Value::InlineTable(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => false,
    }
}

/// The facts a recording measures, set on a statement's table from the file.
fn set_facts(t: &mut Table, s: &Statement) {
    set(t, "bypass_rls", s.bypass_rls.map(Value::from));
    set(t, "database", s.database.as_deref().map(Value::from));
    set(t, "queryid", s.queryid.map(Value::from));
    set(t, "calls", s.calls.map(|c| Value::from(c as i64)));
    set(t, "rows", s.rows.map(|r| Value::from(r as i64)));
    set(t, "contexts", contexts(s));
    set(t, "sent", s.sent.map(|x| Value::from(x.name())));
    set(t, "shapes", shapes(s));
}

/// `shapes = { 1 = "prefix", 3 = "limit 21" }`, by parameter number.
fn shapes(s: &Statement) -> Option<Value> {
    (!s.shapes.is_empty()).then(|| {
        let mut t = InlineTable::new();
        for (n, shape) in &s.shapes {
            t.insert(n.to_string(), Value::from(shape.to_string()));
        }
        Value::InlineTable(t)
    })
}

fn contexts(s: &Statement) -> Option<Value> {
    (!s.contexts.is_empty()).then(|| Value::Array(s.contexts.iter().map(|c| c.name()).collect()))
}

/// A table for a statement new in the file, laid out as planck writes them.
fn new_statement(s: &Statement) -> Table {
    let mut out = String::from("[[statement]]\n");
    out.push_str(&format!("id = {}\n", toml_string(&s.id)));
    if let Some(r) = &s.role {
        out.push_str(&format!("role = {}\n", toml_string(r)));
    }
    if let Some(b) = s.bypass_rls {
        out.push_str(&format!("bypass_rls = {b}\n"));
    }
    if let Some(d) = &s.database {
        out.push_str(&format!("database = {}\n", toml_string(d)));
    }
    if let Some(q) = s.queryid {
        out.push_str(&format!("queryid = {q}\n"));
    }
    if let Some(c) = s.calls {
        out.push_str(&format!("calls = {c}\n"));
    }
    if let Some(r) = s.rows {
        out.push_str(&format!("rows = {r}\n"));
    }
    if let Some(c) = contexts(s) {
        out.push_str(&format!("contexts = {c}\n"));
    }
    if let Some(x) = s.sent {
        out.push_str(&format!("sent = \"{}\"\n", x.name()));
    }
    if let Some(x) = shapes(s) {
        out.push_str(&format!("shapes = {x}\n"));
    }
    if s.manual {
        out.push_str("manual = true\n");
    }
    if let Some(i) = &s.ignore {
        out.push_str(&format!("ignore = {}\n", toml_string(i)));
    }
    out.push_str(&format!("query = {}\n", toml_multiline(&s.query)));
    let mut doc: DocumentMut = out.parse().expect("a statement entry planck wrote parses");
    let mut t = match doc.remove("statement") {
        Some(Item::ArrayOfTables(a)) => a.into_iter().next().expect("one table"),
        _ => unreachable!("an array of tables was written"),
    };
    t.decor_mut().set_prefix("\n");
    t
}

fn transaction_table(t: &Transaction) -> Table {
    let mut out = Table::new();
    out.decor_mut().set_prefix("\n");
    out.insert("id", Item::Value(t.id.as_str().into()));
    if let Some(n) = &t.name {
        out.insert("name", Item::Value(n.as_str().into()));
    }
    let ids: Array = t.statements.iter().map(String::as_str).collect();
    out.insert("statements", Item::Value(Value::Array(ids)));
    if t.repeat != 1 {
        out.insert("repeat", Item::Value(i64::from(t.repeat).into()));
    }
    if let Some(c) = t.calls {
        out.insert("calls", Item::Value((c as i64).into()));
    }
    if t.think_ms != 0.0 {
        out.insert("think_ms", Item::Value(t.think_ms.into()));
    }
    if let Some(r) = &t.role {
        out.insert("role", Item::Value(r.as_str().into()));
    }
    if !t.settings.is_empty() {
        let mut s = InlineTable::new();
        for (k, v) in &t.settings {
            let v = match v {
                SettingValue::Text(x) => Value::from(x.as_str()),
                SettingValue::Json(j) => json_value(j),
            };
            s.insert(k, v);
        }
        out.insert("settings", Item::Value(Value::InlineTable(s)));
    }
    if let Some(i) = t.isolation {
        out.insert("isolation", Item::Value(i.sql().into()));
    }
    if t.outcome == TxOutcome::Rollback {
        out.insert("outcome", Item::Value("rollback".into()));
    }
    if !t.local_settings.is_empty() {
        let names: Array = t.local_settings.iter().map(String::as_str).collect();
        out.insert("local_settings", Item::Value(Value::Array(names)));
    }
    if t.manual {
        out.insert("manual", Item::Value(true.into()));
    }
    if t.recorded {
        out.insert("recorded", Item::Value(true.into()));
    }
    if !t.bind.is_empty() {
        let mut a = ArrayOfTables::new();
        for b in &t.bind {
            let mut bt = Table::new();
            bt.insert("statement", Item::Value(b.statement.as_str().into()));
            bt.insert("param", Item::Value(i64::from(b.param).into()));
            let (k, v) = match &b.source {
                BindSource::Value(v) => ("value", v.clone()),
                BindSource::Column(c) => ("column", c.clone()),
                BindSource::Result { statement, column } => {
                    ("result", format!("{statement}.{column}"))
                }
            };
            bt.insert(k, Item::Value(v.into()));
            a.push(bt);
        }
        out.insert("bind", Item::ArrayOfTables(a));
    }
    out
}

fn json_value(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Null => Value::from(""),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(json_value).collect()),
        serde_json::Value::Object(o) => {
            let mut t = InlineTable::new();
            for (k, v) in o {
                t.insert(k, json_value(v));
            }
            Value::InlineTable(t)
        }
    }
}

/// Positions keep tables where they were parsed; without them tables are
/// written in key order (each after its parent), which is what a rewrite wants.
fn clear_positions(t: &mut Table) {
    for (_, item) in t.iter_mut() {
        match item {
            Item::Table(sub) => {
                sub.set_position(None);
                clear_positions(sub);
            }
            Item::ArrayOfTables(a) => {
                for sub in a.iter_mut() {
                    sub.set_position(None);
                    clear_positions(sub);
                }
            }
            _ => {}
        }
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML multi-line basic string, the SQL on its own lines.
fn toml_multiline(s: &str) -> String {
    let mut out = String::from("\"\"\"\n");
    let mut quotes = 0;
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            // Never three quotes in a row: that would close the string.
            '"' if quotes == 2 => {
                out.push_str("\\\"");
                quotes = 0;
                continue;
            }
            '"' => out.push('"'),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
        quotes = if ch == '"' { quotes + 1 } else { 0 };
    }
    // A closing quote right before the delimiter would merge with it.
    if s.ends_with('"') {
        out.push_str("\\\n");
    }
    out.push_str("\n\"\"\"");
    out
}
