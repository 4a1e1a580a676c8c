//! What is checked before a replay starts: the refusals ([`check_workload`]),
//! the server's connection limit ([`check_connections`]), the recorded roles
//! ([`check_roles`]), and the parameters typed and their values found
//! ([`type_parameters`], [`unbound`]).

use tokio_postgres::Client;

use crate::db::quote_ident;
use crate::error::{Error, Result};
use crate::replay::exec::param_count;
use crate::replay::options::Options;
use crate::replay::workload::Workload;

/// The refusals that hold before anything runs.
pub fn check_workload(w: &Workload, opts: &Options, managed: bool) -> Result<()> {
    if w.units.is_empty() {
        return Err(Error::usage_hint(
            "no statements to replay",
            "record some with `planck record -- <tests>`, or write [[statement]] entries by hand",
        ));
    }
    if opts.ladder.is_empty() || opts.ladder.contains(&0) {
        return Err(Error::usage(
            "--ladder takes client counts above 0, e.g. 1,2,4,8",
        ));
    }
    if opts.commit && !managed && !opts.force {
        return Err(Error::usage_hint(
            "--commit refused: this database is not planck's own managed one, and the writes would stay",
            "replay without --commit (every unit is rolled back), or add --force if this database is disposable",
        ));
    }
    if !opts.allow_side_effects
        && let Some((s, why)) = w.side_effects().first()
    {
        return Err(Error::usage_hint(
            format!(
                "statement {} has an effect a rollback does not undo: {why}",
                s.id
            ),
            "add --allow-side-effects to replay it anyway, or mark it ignore = \"...\" in the queries file",
        ));
    }
    Ok(())
}

/// Parameters nothing binds and whose type has no value to send (so they
/// go as NULL): (unit, statement id, $n). `defaults` as in
/// [`type_parameters`].
pub fn unbound(w: &Workload, defaults: &[Vec<Option<String>>]) -> Vec<(String, String, u32)> {
    let mut out = Vec::new();
    for (u, _) in &w.units {
        let own = match u {
            crate::replay::workload::Unit::Transaction(t) => w.transactions[*t].bind.as_slice(),
            crate::replay::workload::Unit::Lone(_) => &[],
        };
        for s in w.unit_statements(*u) {
            let st = &w.statements[s];
            for p in 1..=param_count(&st.sql) {
                let typed = defaults
                    .get(s)
                    .and_then(|d| d.get(p as usize - 1))
                    .is_some_and(Option::is_some);
                let bound = typed
                    || st.auto_bind.iter().any(|b| b.param == p)
                    || own.iter().any(|b| b.statement == st.id && b.param == p);
                let entry = (w.unit_name(*u), st.id.clone(), p);
                if !bound && !out.contains(&entry) {
                    out.push(entry);
                }
            }
        }
    }
    out
}

/// SQLSTATEs of a text the server cannot type on its own (normalized
/// literals: `$1 + $2`, `coalesce(max(n), $1)`).
const UNTYPED: [&str; 4] = ["42P18", "42725", "42883", "42804"];

/// Prepares every statement once, on `client` outside any transaction, for
/// its parameters' types, and returns per statement a value of each type
/// (the shared params layer's [`fill_defaults`](crate::params::values::fill_defaults), as explain plans them):
/// what a parameter no bind or sample feeds is sent (a normalized literal:
/// `interval $3` of a rate limit's window, `coalesce(max(number), $7) + $8`).
/// A text the server cannot type gets the casts of the first of the params
/// layer's typing attempts that prepares (`sql` becomes that text). A
/// statement that does not prepare keeps NULLs: its executions fail and
/// are counted with their error.
pub async fn type_parameters(client: &Client, w: &mut Workload) -> Vec<Vec<Option<String>>> {
    use crate::params::typing;
    use crate::params::values::fill_defaults;
    let mut out = Vec::with_capacity(w.statements.len());
    for s in &mut w.statements {
        let n = param_count(&s.sql) as usize;
        let types = match client.prepare(&s.sql).await {
            Ok(p) => Some(p.params().to_vec()),
            Err(e) if e.code().is_some_and(|c| UNTYPED.contains(&c.code())) => {
                let u = typing::untyped(&s.sql);
                let loose = if u.loose.is_empty() {
                    typing::uncast(&s.sql)
                } else {
                    u.loose
                };
                let mut found = None;
                for a in typing::attempts(&loose, &Default::default()) {
                    let text = typing::apply(&s.sql, &a.casts);
                    if let Ok(p) = client.prepare(&text).await {
                        s.sql = text;
                        found = Some(p.params().to_vec());
                        break;
                    }
                }
                found
            }
            Err(_) => None,
        };
        let mut d = match types {
            Some(t) => fill_defaults(Vec::new(), &t),
            None => Vec::new(),
        };
        d.resize(n, None);
        out.push(d);
    }
    out
}

/// The top step, the sampler and the connections in use must fit the
/// server's limit (`max_connections` less the reserved ones).
pub async fn check_connections(client: &Client, top: u32, sampler: bool, rate: bool) -> Result<()> {
    let r = client
        .query_one(
            "SELECT current_setting('max_connections')::int \
                  - current_setting('superuser_reserved_connections')::int \
                  - coalesce(nullif(current_setting('reserved_connections', true), '')::int, 0), \
                    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int",
            &[],
        )
        .await
        .map_err(|e| Error::db("reading max_connections", e))?;
    let limit = i64::from(r.get::<_, i32>(0));
    let in_use = i64::from(r.get::<_, i32>(1));
    // In 64 bits: a ladder of 2^31 clients wrapped around in 32.
    let need = i64::from(top) + i64::from(sampler);
    if need + in_use > limit {
        return Err(Error::usage_hint(
            format!(
                "the top step needs {need} connections and {in_use} are in use, but the server takes {limit} \
                 (max_connections less the reserved ones)"
            ),
            if rate {
                "lower --clients, or raise max_connections on the server"
            } else {
                "lower the top of --ladder, or raise max_connections on the server"
            },
        ));
    }
    Ok(())
}

/// Every role the units run as exists and the connecting user may `SET
/// ROLE` to it (PostgreSQL 16+: the membership's SET option; 14 and 15:
/// membership), checked before the run rather than failing every unit.
pub async fn check_roles(
    client: &Client,
    w: &Workload,
    tenant: Option<&crate::replay::tenant::TenantRun>,
) -> Result<()> {
    let mut roles: Vec<&str> = w
        .units
        .iter()
        .filter_map(|(u, _)| crate::replay::tenant::unit_role(w, *u))
        .chain(tenant.map(|t| t.role.as_str()))
        .collect();
    roles.sort_unstable();
    roles.dedup();
    for role in roles {
        let row = client
            .query_one(
                "SELECT session_user::text, \
                        current_setting('server_version_num')::int >= 160000, \
                        EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1), \
                        CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) \
                             THEN session_user = $1::name OR pg_has_role(session_user, $1::name, \
                                  CASE WHEN current_setting('server_version_num')::int >= 160000 \
                                       THEN 'SET' ELSE 'MEMBER' END) END",
                &[&role],
            )
            .await
            .map_err(|e| Error::db("reading the recorded roles", e))?;
        let (user, sixteen, exists, may): (String, bool, bool, Option<bool>) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let grant = format!(
            "GRANT {} TO {}{}",
            quote_ident(role),
            quote_ident(&user),
            if sixteen { " WITH SET TRUE" } else { "" }
        );
        if !exists {
            return Err(Error::usage_hint(
                format!(
                    "the workload was recorded as role {role}, which does not exist on this server"
                ),
                format!(
                    "create it (CREATE ROLE {}) and let {user} use it ({grant}), or re-record as a role this server has",
                    quote_ident(role)
                ),
            ));
        }
        if may != Some(true) {
            return Err(Error::usage_hint(
                format!(
                    "the workload was recorded as role {role}, and {user} may not SET ROLE to it"
                ),
                format!("grant it: {grant}"),
            ));
        }
    }
    Ok(())
}
