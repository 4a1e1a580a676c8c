//! Statements a migration made stale since the recording: their text (or a
//! bind's `table.column`) names a table, column, schema or type the
//! database no longer has. Found before the run by preparing each statement
//! once and reading each bound column once; the units that would run one
//! are skipped, each with one warning, and the rest replays. Only a
//! workload with nothing left is an error.

use std::collections::HashMap;

use tokio_postgres::Client;

use super::workload::{BindSource, Unit, Workload};
use crate::db::quote_ident;
use crate::error::{Error, Result};
use crate::wire::replay::SkippedJson;

/// SQLSTATEs of a name the server does not know: undefined table, column,
/// schema, object (a type). A statement the server merely cannot type
/// (normalized literals) is not stale: the run types it.
const STALE: [&str; 4] = ["42P01", "42703", "3F000", "42704"];

/// What the server said about a name that is gone.
#[derive(Debug, Clone, PartialEq)]
struct Gone {
    sqlstate: String,
    error: String,
}

/// `Some` when `e` says a name is gone; `Err` when the connection failed.
fn gone(e: tokio_postgres::Error) -> std::result::Result<Option<Gone>, tokio_postgres::Error> {
    match e.as_db_error() {
        Some(db) if STALE.contains(&db.code().code()) => Ok(Some(Gone {
            sqlstate: db.code().code().to_string(),
            error: db.message().to_string(),
        })),
        Some(_) => Ok(None),
        None => Err(e),
    }
}

/// Every statement a unit runs, once, in file order.
fn used(w: &Workload) -> Vec<usize> {
    let mut out: Vec<usize> = w
        .units
        .iter()
        .flat_map(|(u, _)| w.unit_statements(*u))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The `column` binds of a unit's statement `s`: its own text's and the
/// transaction's.
fn column_binds(w: &Workload, unit: Unit, s: usize) -> Vec<(String, String)> {
    let st = &w.statements[s];
    let own = match unit {
        Unit::Transaction(t) => w.transactions[t].bind.as_slice(),
        Unit::Lone(_) => &[],
    };
    st.auto_bind
        .iter()
        .chain(own.iter().filter(|b| b.statement == st.id))
        .filter_map(|b| match &b.source {
            BindSource::Column { table, column } => Some((table.clone(), column.clone())),
            _ => None,
        })
        .collect()
}

/// Finds the stale statements and binds of the units that run, removes
/// those units from `w`, and returns what was skipped, one entry per
/// statement (and bind) with the units skipped for it.
pub async fn skip(client: &Client, w: &mut Workload) -> Result<Vec<SkippedJson>> {
    let ctx = |e| Error::db("preparing the recorded statements", e);
    let mut text: HashMap<usize, Gone> = HashMap::new();
    for s in used(w) {
        if let Err(e) = client.prepare(&w.statements[s].sql).await
            && let Some(g) = gone(e).map_err(ctx)?
        {
            text.insert(s, g);
        }
    }
    let mut columns: HashMap<(String, String), Option<Gone>> = HashMap::new();
    let mut out: Vec<SkippedJson> = Vec::new();
    let mut keep = Vec::with_capacity(w.units.len());
    for &(unit, weight) in &w.units {
        let mut why: Option<(usize, Option<String>, Gone)> = None;
        for s in w.unit_statements(unit) {
            if let Some(g) = text.get(&s) {
                why = Some((s, None, g.clone()));
                break;
            }
        }
        if why.is_none() {
            'find: for s in w.unit_statements(unit) {
                for (table, column) in column_binds(w, unit, s) {
                    let key = (table, column);
                    if !columns.contains_key(&key) {
                        let g = probe(client, &key.0, &key.1).await.map_err(ctx)?;
                        columns.insert(key.clone(), g);
                    }
                    if let Some(g) = &columns[&key] {
                        why = Some((s, Some(format!("{}.{}", key.0, key.1)), g.clone()));
                        break 'find;
                    }
                }
            }
        }
        let Some((s, bind, g)) = why else {
            keep.push((unit, weight));
            continue;
        };
        let name = w.unit_name(unit);
        let st = &w.statements[s];
        match out
            .iter_mut()
            .find(|k| k.statement_id == st.id && k.bind == bind)
        {
            Some(k) => k.units.push(name),
            None => out.push(SkippedJson {
                statement_id: st.id.clone(),
                query: st.query.clone(),
                location: st.location.clone(),
                bind,
                sqlstate: g.sqlstate,
                error: g.error,
                units: vec![name],
            }),
        }
    }
    w.units = keep;
    Ok(out)
}

/// Reads a bound column the way the parameter pools sample it; `Some` when
/// its table or the column is gone.
async fn probe(
    client: &Client,
    table: &str,
    column: &str,
) -> std::result::Result<Option<Gone>, tokio_postgres::Error> {
    let qualified: Vec<String> = table.split('.').map(quote_ident).collect();
    let sql = format!(
        "SELECT {}::text FROM {} LIMIT 0",
        quote_ident(column),
        qualified.join(".")
    );
    match client.query(&sql, &[]).await {
        Ok(_) => Ok(None),
        Err(e) => gone(e),
    }
}

/// The warning for one skipped statement: its id, where the file holds it,
/// the server's error, and what was skipped with it.
pub fn warning(k: &SkippedJson) -> String {
    let at = k
        .location
        .as_deref()
        .map_or(String::new(), |l| format!(" ({l})"));
    let what = match &k.bind {
        None => format!("statement {}{at} is stale", k.statement_id),
        Some(b) => format!(
            "statement {}{at} binds a parameter from {b}, which is stale",
            k.statement_id
        ),
    };
    format!(
        "{what}: {} ({}): skipped {}",
        k.error,
        k.sqlstate,
        skipped_units(k)
    )
}

/// `it (run alone)`, `transaction tx-a`, `it (run alone) and transactions tx-a, tx-b`.
pub fn skipped_units(k: &SkippedJson) -> String {
    let alone = k.units.contains(&k.statement_id);
    let txs: Vec<&str> = k
        .units
        .iter()
        .filter(|u| **u != k.statement_id)
        .map(String::as_str)
        .collect();
    let txs = match txs.len() {
        0 => String::new(),
        1 => format!("transaction {}", txs[0]),
        _ => format!("transactions {}", txs.join(", ")),
    };
    match (alone, txs.is_empty()) {
        (true, true) => "it (run alone)".into(),
        (true, false) => format!("it (run alone) and {txs}"),
        (false, _) => txs,
    }
}

/// The error when nothing is left to replay.
pub fn all_stale(skipped: &[SkippedJson]) -> Error {
    let first = skipped
        .first()
        .map_or(String::new(), |k| format!(" (first: {})", warning(k)));
    Error::usage_hint(
        format!(
            "every statement of the workload is stale: the database no longer has what they name{first}"
        ),
        "re-record the queries file against this schema (`planck record -- <tests>`), or migrate the database to the schema it was recorded on",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped(units: &[&str], bind: Option<&str>) -> SkippedJson {
        SkippedJson {
            statement_id: "s2".into(),
            query: "SELECT c FROM t".into(),
            location: Some("q.toml:8".into()),
            bind: bind.map(str::to_string),
            sqlstate: "42703".into(),
            error: "column \"c\" does not exist".into(),
            units: units.iter().map(|u| u.to_string()).collect(),
        }
    }

    #[test]
    fn warning_names_the_id_the_line_the_error_and_the_units() {
        assert_eq!(
            warning(&skipped(&["s2", "tx-a"], None)),
            "statement s2 (q.toml:8) is stale: column \"c\" does not exist (42703): skipped it (run alone) and transaction tx-a"
        );
        assert_eq!(
            warning(&skipped(&["tx-a", "tx-b"], Some("t.c"))),
            "statement s2 (q.toml:8) binds a parameter from t.c, which is stale: column \"c\" does not exist (42703): skipped transactions tx-a, tx-b"
        );
        assert_eq!(skipped_units(&skipped(&["s2"], None)), "it (run alone)");
        let e = all_stale(&[skipped(&["s2"], None)]).to_string();
        assert!(
            e.starts_with("every statement of the workload is stale"),
            "{e}"
        );
    }
}
