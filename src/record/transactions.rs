//! From what the relay saw to `[[transaction]]` entries: each relayed text
//! matched to its pg_stat_statements entry, then each shape written with
//! the ids the file gives those statements.
//!
//! Matching goes by the server's own queryid: after the run, each distinct
//! relayed text is explained once, as the role that ran it (`EXPLAIN
//! (VERBOSE, FORMAT JSON)` prints "Query Identifier" when query ids are
//! computed; a text with `$n` is PREPAREd first and explained with NULLs;
//! nothing is executed), and joined on (role, queryid). The raw text is
//! needed for that (literals give another queryid than parameters): it is
//! held in memory only, and dropped once matched. A text the server will not
//! explain (utility statements, unknown parameter types) is compared by its
//! normalized text instead; a text matched neither way leaves the shapes it
//! is in, counted in the summary.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sha2::{Digest, Sha256};

use super::relay::session;
use super::relay::shapes::{self, Capture, Outcome};
use crate::db::{ConnInfo, quote_ident, quote_literal};
use crate::output::Log;
use crate::queries::{self, Bind, BindSource, Isolation, SettingValue, Transaction, TxOutcome};

/// How each relayed text was matched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matching {
    /// The file's statement id per text index (`None`: not in the file).
    pub ids: Vec<Option<String>>,
    pub by_queryid: usize,
    pub by_text: usize,
    pub unmatched: usize,
    /// Texts left out as noise (catalog queries, planck's own).
    pub noise: usize,
}

/// What was written, for the summary.
#[derive(Debug, Clone, Default)]
pub struct Written {
    pub transactions: Vec<Transaction>,
    /// Shapes beyond `--max-transactions`, and their calls.
    pub over_limit: usize,
    pub over_limit_calls: u64,
    /// Shapes left out because none of their statements is in the file.
    pub empty: usize,
    /// Exact median pause per written transaction id (ms).
    pub think_ms: BTreeMap<String, f64>,
}

/// The server's queryid of each text of `database` (index into
/// `capture.texts`), explained as its role.
pub async fn queryids(
    conn: &ConnInfo,
    database: &str,
    capture: &Capture,
    log: Log,
) -> HashMap<usize, i64> {
    let mut out = HashMap::new();
    let mut by_role: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, t) in capture.texts.iter().enumerate() {
        if t.database == database {
            by_role.entry(t.role.as_str()).or_default().push(i);
        }
    }
    if by_role.is_empty() {
        return out;
    }
    let mut info = conn.with_database(database);
    info.config.application_name("planck record");
    let client = match info.connect().await {
        Ok(c) => c,
        Err(e) => {
            log.warn(&format!(
                "could not connect to match the relayed statements by queryid ({e}); matching by text"
            ));
            return out;
        }
    };
    let _ = crate::session::untrack(&client).await;
    let _ = client.batch_execute("SET statement_timeout = '10s'").await;
    for (role, texts) in by_role {
        let set = format!("SET ROLE {}", quote_ident(role));
        if client.batch_execute(&set).await.is_err() {
            log.debug("could not take a role the command used: its statements are matched by text");
            continue;
        }
        for i in texts {
            let t = &capture.texts[i];
            if let Some(id) = explain_as_run(&client, t).await {
                out.insert(i, id);
            }
        }
        let _ = client.batch_execute("RESET ROLE").await;
    }
    out
}

/// Settings a text ran with that planck leaves out when it plans it: its
/// own timeouts stay, and the role is set apart.
const NOT_REPLAYED: &[&str] = &[
    "role",
    "session_authorization",
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "transaction_timeout",
    "transaction_isolation",
    "transaction_read_only",
    "transaction_deferrable",
    "default_transaction_read_only",
    "pg_stat_statements.track",
];

/// The queryid of a text planned with the settings it ran with (a policy
/// reading `current_setting('app.tenant')` fails to plan without them,
/// and search_path names its tables), inside a transaction that is rolled
/// back. A setting the server refuses is left out.
async fn explain_as_run(client: &tokio_postgres::Client, t: &shapes::Text) -> Option<i64> {
    let settings: Vec<&(String, String)> = t
        .settings
        .iter()
        .filter(|(k, _)| !NOT_REPLAYED.contains(&k.as_str()))
        .collect();
    if settings.is_empty() {
        return explain(client, &t.sample, t.params).await;
    }
    client.batch_execute("BEGIN").await.ok()?;
    for (k, v) in settings {
        let set = format!(
            "SAVEPOINT planck_setting; SELECT set_config({}, {}, true); RELEASE planck_setting",
            quote_literal(k),
            quote_literal(v)
        );
        if client.batch_execute(&set).await.is_err() {
            let _ = client
                .batch_execute("ROLLBACK TO SAVEPOINT planck_setting; RELEASE planck_setting")
                .await;
        }
    }
    let id = explain(client, &t.sample, t.params).await;
    let _ = client.batch_execute("ROLLBACK").await;
    // A PREPARE outlives the transaction it ran in.
    let _ = client.batch_execute("DEALLOCATE planck_match").await;
    id
}

/// The "Query Identifier" of one text, or `None` when it cannot be explained.
async fn explain(client: &tokio_postgres::Client, sample: &str, params: u32) -> Option<i64> {
    let plan = if params > 0 {
        client
            .batch_execute(&format!("PREPARE planck_match AS {sample}"))
            .await
            .ok()?;
        let nulls = vec!["NULL"; params as usize].join(", ");
        let r = client
            .simple_query(&format!(
                "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE planck_match({nulls})"
            ))
            .await;
        let _ = client.batch_execute("DEALLOCATE planck_match").await;
        r.ok()?
    } else {
        client
            .simple_query(&format!("EXPLAIN (VERBOSE, FORMAT JSON) {sample}"))
            .await
            .ok()?
    };
    let json = plan.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    })?;
    let v: serde_json::Value = serde_json::from_str(&json).ok()?;
    v.get(0)?.get("Query Identifier")?.as_i64()
}

/// Matches each text of `databases` to a statement id of the file: by
/// queryid through `by_queryid` ((role, queryid) -> id), else by
/// normalized text through `by_text` ((role, text key) -> id).
pub fn match_texts(
    capture: &Capture,
    databases: &BTreeSet<String>,
    queryids: &HashMap<usize, i64>,
    by_queryid: &HashMap<(String, i64), String>,
    by_text: &HashMap<(String, String), String>,
) -> Matching {
    let mut m = Matching::default();
    for (i, t) in capture.texts.iter().enumerate() {
        if !databases.contains(&t.database) {
            m.ids.push(None);
            continue;
        }
        let q = queryids
            .get(&i)
            .and_then(|q| by_queryid.get(&(t.role.clone(), *q)));
        let id = match q {
            Some(id) => {
                m.by_queryid += 1;
                Some(id.clone())
            }
            None => match by_text.get(&(t.role.clone(), queries::text_key(&t.text))) {
                Some(id) => {
                    m.by_text += 1;
                    Some(id.clone())
                }
                None => {
                    m.unmatched += 1;
                    None
                }
            },
        };
        m.ids.push(id);
    }
    m
}

/// The entries to write: shapes of `databases` with the file's ids, merged
/// where they became one, the `max` most frequent.
pub fn build(
    capture: &Capture,
    databases: &BTreeSet<String>,
    matching: &Matching,
    max: usize,
) -> Written {
    struct Entry {
        tx: Transaction,
        think: Vec<f64>,
    }
    let mut merged: BTreeMap<String, Entry> = BTreeMap::new();
    let mut w = Written::default();
    for (key, shape) in &capture.shapes {
        if !databases.contains(&key.database) {
            continue;
        }
        // The unit, expanded, with the index of each item in the shape.
        let mut items: Vec<(usize, String)> = Vec::new();
        let mut pos = 0;
        for (text, n) in &key.unit {
            for _ in 0..*n {
                if let Some(id) = matching.ids.get(*text as usize).cloned().flatten() {
                    items.push((pos, id));
                }
                pos += 1;
            }
        }
        if items.is_empty() {
            w.empty += 1;
            continue;
        }
        let ids: Vec<String> = items.iter().map(|(_, id)| id.clone()).collect();
        let (statements, repeat) = if ids.iter().all(|i| *i == ids[0]) {
            (vec![ids[0].clone()], key.repeat * ids.len() as u32)
        } else {
            (ids.clone(), key.repeat)
        };
        let unique = {
            let mut s = statements.clone();
            s.sort();
            s.dedup();
            s.len() == statements.len()
        };
        let mut bind = Vec::new();
        if unique && repeat == 1 {
            let at: HashMap<usize, &String> = items.iter().map(|(p, id)| (*p, id)).collect();
            // Each slot takes its value from the earliest place it had.
            let mut earliest: BTreeMap<(usize, u32), &shapes::SeenBind> = BTreeMap::new();
            // Sources outside the file (a set_config) cannot be named.
            for b in shape
                .binds
                .iter()
                .flatten()
                .filter(|b| at.contains_key(&b.from_item))
            {
                let e = earliest.entry((b.item, b.param)).or_insert(b);
                if (b.from_item, b.from_param) < (e.from_item, e.from_param) {
                    *e = b;
                }
            }
            for b in earliest.into_values() {
                let (Some(&to), Some(&from)) = (at.get(&b.item), at.get(&b.from_item)) else {
                    continue;
                };
                bind.push(Bind {
                    statement: to.clone(),
                    param: b.param,
                    source: BindSource::Result {
                        statement: from.clone(),
                        column: format!("${}", b.from_param),
                    },
                });
            }
        }
        // A value each call bound (a tenant id) is not fixed in the file:
        // the name alone goes to local_settings, the value to the replay.
        let settings: Vec<(String, SettingValue)> = key
            .settings
            .iter()
            .filter(|s| s.value != session::BOUND)
            .map(|s| (s.name.clone(), SettingValue::Text(s.value.clone())))
            .collect();
        let local_settings: Vec<String> = key
            .settings
            .iter()
            .filter(|s| s.local)
            .map(|s| s.name.clone())
            .collect();
        let isolation = key.isolation.as_deref().and_then(Isolation::parse);
        let outcome = match key.outcome {
            Outcome::Commit => TxOutcome::Commit,
            Outcome::Rollback => TxOutcome::Rollback,
        };
        let id = shape_id(
            &statements,
            repeat,
            &key.role,
            &key.settings,
            isolation,
            outcome,
        );
        let e = merged.entry(id.clone()).or_insert_with(|| Entry {
            tx: Transaction {
                id,
                name: None,
                statements,
                repeat,
                calls: Some(0),
                think_ms: 0.0,
                role: Some(key.role.clone()),
                settings,
                isolation,
                bind: bind.clone(),
                outcome,
                manual: false,
                line: None,
                recorded: true,
                local_settings,
            },
            think: Vec::new(),
        });
        // Two shapes made one (a statement not in the file between them):
        // keep only the bindings both had.
        if e.tx.calls != Some(0) {
            e.tx.bind.retain(|b| bind.contains(b));
        }
        e.tx.calls = Some(e.tx.calls.unwrap_or(0) + shape.calls);
        e.think.extend(&shape.think);
    }
    let mut all: Vec<Entry> = merged.into_values().collect();
    // Most frequent first; ties by id, so the order is stable.
    all.sort_by(|a, b| b.tx.calls.cmp(&a.tx.calls).then(a.tx.id.cmp(&b.tx.id)));
    for (i, mut e) in all.into_iter().enumerate() {
        if i >= max {
            w.over_limit += 1;
            w.over_limit_calls += e.tx.calls.unwrap_or(0);
            continue;
        }
        let exact = shapes::median(&e.think);
        e.tx.think_ms = shapes::quantise_ms(exact);
        w.think_ms.insert(e.tx.id.clone(), exact);
        w.transactions.push(e.tx);
    }
    w
}

/// A shape's id: `tx-` and 12 hex digits over what makes it, so the same
/// run writes the same ids.
fn shape_id(
    statements: &[String],
    repeat: u32,
    role: &str,
    settings: &[shapes::Setting],
    isolation: Option<Isolation>,
    outcome: TxOutcome,
) -> String {
    let mut h = Sha256::new();
    for s in statements {
        h.update(s.as_bytes());
        h.update([0]);
    }
    h.update(repeat.to_be_bytes());
    h.update(role.as_bytes());
    h.update([0]);
    for s in settings {
        h.update(format!("{}={}{}\0", s.name, s.value, if s.local { "L" } else { "" }).as_bytes());
    }
    h.update(isolation.map(Isolation::sql).unwrap_or("").as_bytes());
    h.update([u8::from(outcome == TxOutcome::Rollback)]);
    let hex: String = h
        .finalize()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("tx-{hex}")
}

#[cfg(test)]
mod tests {
    use super::super::relay::shapes::{Closed, SeenBind, ShapeKey};
    use super::*;
    use std::time::Duration;

    fn one(database: &str) -> BTreeSet<String> {
        BTreeSet::from([database.to_string()])
    }

    fn capture() -> Capture {
        let mut c = Capture::default();
        let upd = c
            .text("d", "app", "UPDATE a SET b = $1 WHERE id = $2", "x", 0)
            .unwrap();
        let sel = c
            .text("d", "app", "SELECT b FROM a WHERE id = $1", "y", 0)
            .unwrap();
        let set = c
            .text("d", "app", "SELECT set_config($1, $2, $3)", "z", 0)
            .unwrap();
        let key = |unit: Vec<(u32, u32)>, outcome| ShapeKey {
            database: "d".into(),
            role: "app".into(),
            isolation: None,
            settings: vec![],
            outcome,
            unit,
            repeat: 1,
        };
        let bind = SeenBind {
            item: 1,
            param: 1,
            from_item: 0,
            from_param: 2,
        };
        for (unit, outcome, n) in [
            (vec![(upd, 1), (sel, 1)], Outcome::Commit, 3),
            // The same once the unmatched set_config is left out.
            (vec![(set, 1), (upd, 1), (sel, 1)], Outcome::Commit, 1),
            (vec![(upd, 1)], Outcome::Rollback, 1),
            (vec![(sel, 7)], Outcome::Commit, 2),
        ] {
            for _ in 0..n {
                c.close(Closed {
                    key: key(unit.clone(), outcome),
                    think_ms: 3.0,
                    binds: match unit.len() {
                        2 => vec![bind],
                        // Shifted by the set_config in front.
                        3 => vec![SeenBind {
                            item: 2,
                            from_item: 1,
                            ..bind
                        }],
                        _ => vec![],
                    },
                    duration: Duration::from_millis(1),
                    statements: 2,
                    opener: None,
                    migration: false,
                });
            }
        }
        c
    }

    #[test]
    fn shapes_are_written_with_the_files_ids() {
        let c = capture();
        let by_text: HashMap<(String, String), String> = [
            ("UPDATE a SET b = $1 WHERE id = $2", "u"),
            ("SELECT b FROM a WHERE id = $1", "s"),
        ]
        .into_iter()
        .map(|(t, id)| (("app".to_string(), queries::text_key(t)), id.to_string()))
        .collect();
        let m = match_texts(&c, &one("d"), &HashMap::new(), &HashMap::new(), &by_text);
        assert_eq!((m.by_text, m.unmatched), (2, 1));
        let w = build(&c, &one("d"), &m, 200);
        let got: Vec<_> = w
            .transactions
            .iter()
            .map(|t| {
                (
                    t.statements.clone(),
                    t.repeat,
                    t.calls,
                    t.outcome,
                    t.bind.len(),
                    t.think_ms,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    vec!["u".into(), "s".into()],
                    1,
                    Some(4),
                    TxOutcome::Commit,
                    1,
                    2.0
                ),
                (vec!["s".into()], 7, Some(2), TxOutcome::Commit, 0, 2.0),
                (vec!["u".into()], 1, Some(1), TxOutcome::Rollback, 0, 2.0),
            ]
        );
        assert_eq!(
            w.transactions[0].bind[0].source,
            BindSource::Result {
                statement: "u".into(),
                column: "$2".into()
            }
        );
        let w = build(&c, &one("d"), &m, 1);
        assert_eq!(
            (w.transactions.len(), w.over_limit, w.over_limit_calls),
            (1, 2, 3)
        );
        // The same capture gives the same ids.
        assert_eq!(
            build(&c, &one("d"), &m, 1).transactions[0].id,
            w.transactions[0].id
        );
    }
}
