//! The SQL and plpgsql functions of the database, with their source
//! (`pg_proc.prosrc`), their parameters and, for trigger functions, the
//! tables whose triggers call them: what `explain` needs to find the
//! function a statement recorded inside a function came from, and to bind
//! the names it uses (parameters, variables, `NEW`/`OLD`).

use tokio_postgres::Client;

use crate::error::{Error, Result};
use crate::session::{StatsMode, tag};

/// One input or output parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionArg {
    /// Lowercase; None for an unnamed parameter (reachable as `$n` only).
    pub name: Option<String>,
    /// `format_type` of its type.
    pub ty: String,
    /// An input (IN, INOUT, VARIADIC): numbered `$1`, `$2`, ... in the body.
    pub input: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// `schema.name(argtypes)`, as `regprocedure` prints it.
    pub signature: String,
    /// The bare name, lowercase (`f.param` qualifies a parameter with it).
    pub name: String,
    pub plpgsql: bool,
    pub src: String,
    pub args: Vec<FunctionArg>,
    /// SECURITY DEFINER: its statements run as the function's owner.
    pub security_definer: bool,
    /// For a trigger function: the tables (`regclass` text) whose triggers call it.
    pub trigger_tables: Vec<String>,
}

impl Function {
    /// The input parameters in `$n` order.
    pub fn inputs(&self) -> impl Iterator<Item = &FunctionArg> {
        self.args.iter().filter(|a| a.input)
    }
}

/// Every SQL and plpgsql function outside the system schemas.
pub async fn load(client: &Client, stats: StatsMode) -> Result<Vec<Function>> {
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT p.oid::regprocedure::text, lower(p.proname::text), l.lanname = 'plpgsql',
                    p.prosrc, p.prosecdef,
                    coalesce(p.proargnames, ARRAY[]::text[]),
                    coalesce(p.proargmodes::text[], ARRAY[]::text[]),
                    ARRAY(SELECT format_type(t, NULL)
                            FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]))
                                 WITH ORDINALITY u(t, i) ORDER BY i),
                    ARRAY(SELECT DISTINCT tg.tgrelid::regclass::text FROM pg_trigger tg
                           WHERE tg.tgfoid = p.oid AND NOT tg.tgisinternal ORDER BY 1)
               FROM pg_proc p
               JOIN pg_language l ON l.oid = p.prolang
               JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE l.lanname IN ('sql', 'plpgsql')
                AND n.nspname NOT IN ('pg_catalog', 'information_schema')
              ORDER BY 1",
            ),
            &[],
        )
        .await
        .map_err(|e| Error::db("reading the functions' source (pg_proc)", e))?;
    Ok(rows
        .iter()
        .map(|r| {
            let names: Vec<String> = r.get(5);
            let modes: Vec<String> = r.get(6);
            let types: Vec<String> = r.get(7);
            let args = types
                .into_iter()
                .enumerate()
                .map(|(i, ty)| FunctionArg {
                    name: names
                        .get(i)
                        .filter(|n| !n.is_empty())
                        .map(|n| n.to_lowercase()),
                    ty,
                    input: modes
                        .get(i)
                        .is_none_or(|m| matches!(m.as_str(), "i" | "b" | "v")),
                })
                .collect();
            Function {
                signature: r.get(0),
                name: r.get(1),
                plpgsql: r.get(2),
                src: r.get(3),
                security_definer: r.get(4),
                args,
                trigger_tables: r.get(8),
            }
        })
        .collect())
}
