//! The databases a run used besides the target (issue 12, 4): test runners
//! (Django, Rails, pytest-postgresql) create their own database, use it and
//! drop it. pg_stat_statements keeps the entries of a dropped database
//! under its oid, so the databases created during the run are the oids its
//! entries carry after the run that neither `pg_database` nor
//! pg_stat_statements knew before. Their names come from `pg_database`
//! while they exist, else from the relay (the connections name them).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tokio_postgres::Client;

use crate::error::{Error, Result};
use crate::queries;

/// What the server knew before the run.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Databases by name.
    pub names: BTreeSet<String>,
    /// Oids of the databases and of every pg_stat_statements entry.
    pub oids: BTreeSet<u32>,
}

/// A database created during the run that left pg_stat_statements entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    pub oid: u32,
    /// `None` when it was dropped before the run ended (named later from
    /// the relay, if it saw the connections).
    pub name: Option<String>,
    /// Whether it still exists (its statements can be explained there).
    pub exists: bool,
}

impl Created {
    /// How the summary names it.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => format!("oid {} (dropped)", self.oid),
        }
    }
}

fn pg(context: &str, e: tokio_postgres::Error) -> Error {
    Error::db(context, e)
}

/// The databases and pg_stat_statements' database oids before the run.
pub async fn known(client: &Client, schema: &str) -> Result<Known> {
    let rows = client
        .query(
            &format!(
                "SELECT /* planck */ oid, datname::text FROM pg_database \
                 UNION SELECT DISTINCT dbid, NULL FROM {schema}.pg_stat_statements"
            ),
            &[],
        )
        .await
        .map_err(|e| pg("listing the databases before the run", e))?;
    let mut k = Known::default();
    for r in rows {
        k.oids.insert(r.get(0));
        if let Some(n) = r.get::<_, Option<String>>(1) {
            k.names.insert(n);
        }
    }
    Ok(k)
}

/// The databases whose entries appeared during the run, by oid.
pub async fn created(client: &Client, schema: &str, known: &Known) -> Result<Vec<Created>> {
    let before: Vec<u32> = known.oids.iter().copied().collect();
    let rows = client
        .query(
            &format!(
                "SELECT /* planck */ s.dbid, d.datname::text FROM \
                 (SELECT DISTINCT dbid FROM {schema}.pg_stat_statements) s \
                 LEFT JOIN pg_database d ON d.oid = s.dbid \
                 WHERE s.dbid <> ALL($1) ORDER BY 1"
            ),
            &[&before],
        )
        .await
        .map_err(|e| pg("listing the databases created during the run", e))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let name: Option<String> = r.get(1);
            Created {
                oid: r.get(0),
                exists: name.is_some(),
                name,
            }
        })
        .collect())
}

/// Names the dropped databases from the relay: each takes the relayed
/// database (created during the run, not named otherwise) whose texts
/// share the most texts ([`queries::text_key`]) with its entries.
pub fn name_dropped(
    created: &mut [Created],
    entries: &HashMap<u32, BTreeSet<String>>,
    relayed: &BTreeMap<String, BTreeSet<String>>,
) {
    let named: BTreeSet<String> = created.iter().filter_map(|c| c.name.clone()).collect();
    let mut free: Vec<&String> = relayed.keys().filter(|n| !named.contains(*n)).collect();
    for c in created.iter_mut().filter(|c| c.name.is_none()) {
        let Some(keys) = entries.get(&c.oid) else {
            continue;
        };
        let best = free
            .iter()
            .enumerate()
            .map(|(i, n)| (relayed[*n].intersection(keys).count(), i))
            .filter(|(shared, _)| *shared > 0)
            .max();
        if let Some((_, i)) = best {
            c.name = Some(free.remove(i).clone());
        }
    }
}

/// A looser key than [`queries::text_key`], for texts matched neither by
/// queryid nor by that key: `$n`, `NULL`, `true` and `false` all read `?`
/// (pg_stat_statements replaces NULL and boolean constants by `$n`, a
/// client that interpolates them leaves them in the relayed text).
pub fn loose_key(text: &str) -> String {
    let key = queries::text_key(text);
    let mut out = String::with_capacity(key.len());
    let b = key.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'"' || c == b'.';
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            out.push('?');
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            continue;
        }
        if i == 0 || !word(b[i - 1]) {
            let rest = &key[i..];
            let hit = ["null", "true", "false"].into_iter().find(|w| {
                rest.len() >= w.len()
                    && rest[..w.len()].eq_ignore_ascii_case(w)
                    && !rest.as_bytes().get(w.len()).is_some_and(|&c| word(c))
            });
            if let Some(w) = hit {
                out.push('?');
                i += w.len();
                continue;
            }
        }
        let ch = key[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The text keys of a set of texts, for [`name_dropped`].
pub fn keys<'a>(texts: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    texts.map(queries::text_key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        keys(items.iter().copied())
    }

    #[test]
    fn loose_keys_read_parameters_nulls_and_booleans_alike() {
        assert_eq!(
            loose_key("INSERT INTO t VALUES ($1, NULL, false) RETURNING \"t\".\"id\""),
            loose_key("INSERT INTO t VALUES ($1, $2, $3) RETURNING \"t\".\"id\"")
        );
        // Not inside a word or an identifier.
        assert_ne!(
            loose_key("SELECT nullif(a, $1)"),
            loose_key("SELECT ?if(a, $1)")
        );
        assert_eq!(
            loose_key("SELECT nullable FROM t"),
            "SELECT nullable FROM t"
        );
        assert_ne!(loose_key("SELECT $1"), loose_key("SELECT 1"));
    }

    #[test]
    fn a_dropped_database_is_named_by_the_relayed_texts_it_shares() {
        let mut created = vec![
            Created {
                oid: 7,
                name: None,
                exists: false,
            },
            Created {
                oid: 8,
                name: Some("kept".into()),
                exists: true,
            },
            Created {
                oid: 9,
                name: None,
                exists: false,
            },
        ];
        let entries = HashMap::from([
            (7, set(&["SELECT a FROM t", "SELECT 1"])),
            (9, set(&["SELECT z FROM u"])),
        ]);
        let relayed = BTreeMap::from([
            ("kept".to_string(), set(&["SELECT a FROM t"])),
            ("test_x".to_string(), set(&["SELECT a FROM t"])),
            ("other".to_string(), set(&["SELECT q"])),
        ]);
        name_dropped(&mut created, &entries, &relayed);
        assert_eq!(created[0].name.as_deref(), Some("test_x"));
        assert_eq!(created[1].name.as_deref(), Some("kept"));
        // Nothing shared: it stays unnamed rather than take a wrong name.
        assert_eq!(created[2].name, None);
        assert_eq!(created[2].label(), "oid 9 (dropped)");
    }
}
