//! A statement whose parameters the server cannot type: typed from the
//! expression around each (a column, a sibling, a function's argument), or
//! by the fixed order of guesses, and prepared again (see `params::typing`).

use std::collections::BTreeMap;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::outcome::Explained;
use super::shared::{Failure, Shared, begin, explain_prefix, failure};
use crate::explain::plan_tree::Mode;
use crate::params::typing;

/// What the server answers when a parameter has no type it can settle on:
/// the statement is typed from its context and tried again.
pub(super) const RETYPED: [SqlState; 4] = [
    SqlState::INDETERMINATE_DATATYPE,
    SqlState::DATATYPE_MISMATCH,
    SqlState::AMBIGUOUS_FUNCTION,
    SqlState::UNDEFINED_FUNCTION,
];

/// Types the loose parameters of `e` from the expression around them
/// (see `params::typing`) and prepares again, attempt by attempt, each in a
/// fresh transaction; keeps the first that plans: its text becomes the
/// statement's, its casts its repairs (fixed-order guesses in `guesses`).
/// The caller has rolled back; on success the transaction is open.
pub(super) async fn type_by_context(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    mode: Mode,
    tenant: Option<&str>,
) -> Result<Option<tokio_postgres::Statement>, Failure> {
    let u = typing::untyped(&e.text);
    if u.loose.is_empty() {
        // No context at all (`$1 IS NULL`): text, as the server reads an
        // unknown literal, then the fixed order.
        let all = typing::uncast(&e.text);
        let text = typing::Attempt {
            casts: all.iter().map(|n| (*n, "text".to_string())).collect(),
            guessed: all.clone(),
        };
        let attempts: Vec<typing::Attempt> = std::iter::once(text)
            .chain(typing::attempts(&all, &BTreeMap::new()))
            .collect();
        return try_attempts(client, shared, e, mode, tenant, attempts).await;
    }
    let mut hinted: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (n, hints) in &u.hints {
        for h in hints {
            if let Some(ty) = hint_type(client, shared, e, &u, h).await?
                && !hinted.get(n).is_some_and(|v| v.contains(&ty))
            {
                hinted.entry(*n).or_default().push(ty);
            }
        }
    }
    let attempts = typing::attempts(&u.loose, &hinted);
    try_attempts(client, shared, e, mode, tenant, attempts).await
}

/// Prepares with each attempt's casts in a fresh transaction; keeps the first that plans.
async fn try_attempts(
    client: &Client,
    shared: &Shared,
    e: &mut Explained,
    mode: Mode,
    tenant: Option<&str>,
    attempts: Vec<typing::Attempt>,
) -> Result<Option<tokio_postgres::Statement>, Failure> {
    for attempt in attempts {
        if attempt.casts.is_empty() {
            continue;
        }
        let text = typing::apply(&e.text, &attempt.casts);
        begin(client, shared, mode, tenant).await?;
        match client
            .prepare(&shared.tag(&format!("{}{}", explain_prefix(false), text)))
            .await
        {
            Ok(stmt) => {
                let notes = attempt.describe();
                e.guesses
                    .extend(notes.iter().filter(|n| n.contains("guessed as")).cloned());
                e.repairs.extend(notes);
                e.text = text;
                return Ok(Some(stmt));
            }
            Err(err)
                if err
                    .as_db_error()
                    .is_some_and(|d| !d.code().code().starts_with("08")) =>
            {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            Err(err) => return Err(failure(err, "preparing the statement")),
        }
    }
    Ok(None)
}

/// The type a hint stands for: a column's (from the server), a literal's,
/// the only signature's argument type.
async fn hint_type(
    client: &Client,
    shared: &Shared,
    e: &Explained,
    u: &typing::Untyped,
    h: &typing::Hint,
) -> Result<Option<String>, Failure> {
    use typing::Hint;
    let column_type = |table: &Option<String>, column: &String| {
        let t = match table {
            Some(q) => {
                let t = u.aliases.get(q).cloned().unwrap_or_else(|| q.clone());
                shared.catalog.resolve(&t).map(str::to_string)
            }
            None => shared
                .catalog
                .table_with_column(&e.analysis.tables, column)
                .or_else(|| {
                    shared
                        .catalog
                        .table_with_column(&u.aliases.values().cloned().collect::<Vec<_>>(), column)
                }),
        };
        t.map(|t| (crate::catalog::sql_name(&t), column.clone()))
    };
    let rows = match h {
        Hint::Clock => return Ok(Some("interval".to_string())),
        Hint::Sibling(ty) | Hint::Aggregate(ty) => return Ok(Some(ty.clone())),
        Hint::Column { table, column } | Hint::SiblingColumn { table, column } => {
            let Some((t, c)) = column_type(table, column) else {
                return Ok(None);
            };
            client
                .query(
                    &shared.tag(
                        "SELECT format_type(atttypid, NULL) FROM pg_attribute
                          WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped",
                    ),
                    &[&t, &c],
                )
                .await
        }
        // The argument type, when every function of that name and arity agrees
        // (the numbers are spliced: they are counts, not text).
        Hint::Argument { name, nargs, pos } => {
            client
                .query(
                    &shared.tag(&format!(
                        "SELECT min(t) FROM (SELECT DISTINCT format_type(proargtypes[{pos}], NULL) AS t
                                             FROM pg_proc WHERE proname = $1 AND pronargs = {nargs}) s
                          HAVING count(*) = 1"
                    )),
                    &[name],
                )
                .await
        }
    }
    .map_err(|err| failure(err, "reading a parameter's context type"))?;
    Ok(rows
        .first()
        .and_then(|r| r.get::<_, Option<String>>(0))
        // Polymorphic signatures say nothing.
        .filter(|t| !t.starts_with("any")))
}
