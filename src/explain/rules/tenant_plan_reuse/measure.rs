//! The measurement of `tenant-plan-reuse` (the check, [`super`], reports
//! what it found): does a prepared statement, as the drivers
//! that keep named statements on pooled connections use it, serve the
//! heaviest tenant the plan estimated for another?
//!
//! The method (nothing executed but EXPLAIN, in a transaction always rolled
//! back): `PREPARE` as the median tenant, `EXPLAIN EXECUTE` six times (the
//! sixth builds the generic plan of a statement with parameters; one without
//! uses its generic plan from the first), switch the setting to the heaviest
//! tenant, `EXPLAIN EXECUTE` again; `pg_prepared_statements.generic_plans`
//! before and after says whether that was the generic plan; then a fresh
//! plan as the heaviest tenant. A differing shape is the finding.
//!
//! A screen runs first (two plans where the method takes nine): the generic
//! plan made as the median tenant and the heaviest tenant's fresh plan; the
//! method runs only where their shapes differ, since it can report nothing
//! else (see [`Batch::screen`]).

use serde_json::Value;
use tokio_postgres::Client;

use crate::db::quote_literal;
use crate::error::{Error, Result};
use crate::explain::engine::{Explained, Status};
use crate::explain::plan_tree::{Mode, PlanKind};
use crate::explain::probes::Measure;
use crate::output::Log;
use crate::session::{self, StatsMode, tag};
use crate::tenancy::{Tenancy, TenantContext};

/// A statement whose kept plan differs from a fresh one for the heaviest tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct Reuse {
    pub statement: String,
    pub params: usize,
    pub median: String,
    pub heaviest: String,
    /// The plan the prepared statement served the heaviest tenant, and a fresh one.
    pub kept: String,
    pub fresh: String,
}

const NAME: &str = "planck_reuse";

/// Runs the method on every tenant statement that reads a tenant table,
/// over the measurement's connection and up to `jobs - 1` more (each
/// statement's batch is one round trip, but nine plans of server work:
/// spread over connections like the plans themselves).
pub async fn reuse(on: &Measure<'_>, tenancy: &Tenancy) -> Result<Vec<Reuse>> {
    let (client, conn, jobs, results) = (on.client, on.conn, on.jobs, on.results);
    let (timeout_ms, stats, log) = (on.timeout_ms, on.stats, on.log);
    let (Some(median), Some(heaviest)) = (&tenancy.median, &tenancy.heaviest) else {
        return Ok(Vec::new());
    };
    if median == heaviest {
        return Ok(Vec::new());
    }
    let mut todo = Vec::new();
    // Statements not judged yield no finding (issue 47, 3): not probed.
    for e in results.iter().filter(|e| e.status == Status::Explained) {
        let custom = |id: &str| {
            e.plans.iter().find(|p| {
                p.mode == Mode::Tenant
                    && p.kind == PlanKind::Custom
                    && p.tenant_id.as_deref() == Some(id)
            })
        };
        let (Some(pm), Some(ph)) = (custom(median), custom(heaviest)) else {
            continue;
        };
        let reads_tenant_table = ph
            .nodes()
            .iter()
            .filter_map(|n| n.relation.as_ref())
            .any(|r| tenancy.keys.contains_key(r));
        if !e.judged.contains(&Mode::Tenant) || !reads_tenant_table {
            continue;
        }
        todo.push((e, (median, &pm.params), (heaviest, &ph.params)));
    }
    // More connections only where there is work for them (a few dozen
    // statements or more: opening one costs about as much as a few batches).
    let wanted = jobs.clamp(1, todo.len().div_ceil(32).max(1));
    let mut extra = Vec::new();
    for _ in 1..wanted {
        let c = conn.connect().await?;
        session::quiet_stats(&c, log).await?;
        extra.push(c);
    }
    let clients: Vec<&Client> = std::iter::once(client).chain(extra.iter()).collect();
    let n = clients.len();
    let lanes = clients.iter().enumerate().map(|(lane, c)| {
        let mine: Vec<_> = todo.iter().skip(lane).step_by(n).collect();
        async move {
            let mut found = Vec::new();
            for (e, m, h) in mine {
                if let Some(x) = one(c, tenancy, e, *m, *h, timeout_ms, stats, log).await? {
                    found.push(x);
                }
            }
            Ok::<_, Error>(found)
        }
    });
    let mut out = Vec::new();
    for lane in futures_util::future::join_all(lanes).await {
        out.extend(lane?);
    }
    // The statements' order, whichever lane measured them.
    let order = |r: &Reuse| results.iter().position(|e| e.stmt.id == r.statement);
    out.sort_by_key(order);
    Ok(out)
}

/// The method on one statement; a server error is logged and skipped.
#[allow(clippy::too_many_arguments)]
async fn one(
    client: &Client,
    tenancy: &Tenancy,
    e: &Explained,
    median: Values<'_>,
    heaviest: Values<'_>,
    timeout_ms: u64,
    stats: StatsMode,
    log: Log,
) -> Result<Option<Reuse>> {
    let r = method(client, tenancy, e, median, heaviest, timeout_ms, stats).await;
    if r.is_err() {
        // The batch stopped at the error: end what it left open.
        let _ = client.batch_execute("ROLLBACK").await;
        for name in [NAME, FRESH] {
            let _ = client.batch_execute(&format!("DEALLOCATE {name}")).await;
        }
    }
    match r {
        Ok(x) => Ok(x),
        Err(err) if err.as_db_error().is_some() => {
            log.debug(&format!(
                "statement {}: plan reuse not measured: {err}",
                e.stmt.id
            ));
            Ok(None)
        }
        Err(err) => Err(Error::db("measuring prepared-plan reuse", err)),
    }
}

type Values<'a> = (&'a String, &'a Vec<Option<String>>);

async fn method(
    client: &Client,
    tenancy: &Tenancy,
    e: &Explained,
    (median, mv): Values<'_>,
    (heaviest, hv): Values<'_>,
    timeout_ms: u64,
    stats: StatsMode,
) -> std::result::Result<Option<Reuse>, tokio_postgres::Error> {
    let n = e.param_types.len();
    let contexts = (
        &tenancy.context(Mode::Tenant, Some(median)),
        &tenancy.context(Mode::Tenant, Some(heaviest)),
    );
    let args = (execute_args(n, mv), execute_args(n, hv));
    // The screen first: two plans, where the method takes nine; the same
    // shape there means the method cannot find a difference.
    let s = Batch::screen(contexts, &e.text, args.clone(), timeout_ms, stats);
    let rows = first_columns(client.simple_query(&s.sql()).await?);
    let json = |rows: &[String], i: usize| {
        serde_json::from_str::<Value>(rows.get(i).map(String::as_str).unwrap_or_default())
            .unwrap_or(Value::Null)
    };
    if shape(&json(&rows, s.kept)) == shape(&json(&rows, s.fresh)) {
        return Ok(None);
    }
    let b = Batch::new(contexts.0, contexts.1, &e.text, args, timeout_ms, stats);
    let rows = first_columns(client.simple_query(&b.sql()).await?);
    let at = |i: usize| rows.get(i).map(String::as_str).unwrap_or_default();
    let json = |i: usize| serde_json::from_str::<Value>(at(i)).unwrap_or(Value::Null);
    let (before, after): (i64, i64) = (
        at(b.before).parse().unwrap_or(0),
        at(b.after).parse().unwrap_or(0),
    );
    if after <= before {
        // A custom plan: made for the heaviest tenant's values and setting.
        return Ok(None);
    }
    let (kept, fresh) = (json(b.kept), json(b.fresh));
    if shape(&kept) == shape(&fresh) {
        return Ok(None);
    }
    Ok(Some(Reuse {
        statement: e.stmt.id.clone(),
        params: n,
        median: median.clone(),
        heaviest: heaviest.clone(),
        kept: summary(&kept),
        fresh: summary(&fresh),
    }))
}

/// The prepared statement a fresh plan for the heaviest tenant is made with.
const FRESH: &str = "planck_reuse_fresh";

/// The whole method as one simple-protocol batch (one round trip, where
/// it took about fifteen one statement at a time): BEGIN as the median
/// tenant, PREPARE, six `EXPLAIN EXECUTE`, the generic-plan counter, the
/// heaviest tenant's setting, `EXPLAIN EXECUTE` again, the counter again,
/// then a fresh plan for the heaviest tenant (a custom plan of its own
/// prepared statement, which is what binding the values plans), ROLLBACK.
/// The indexes say which answered row (first column) is which.
#[derive(Debug, Default)]
struct Batch {
    statements: Vec<String>,
    rows: usize,
    before: usize,
    kept: usize,
    after: usize,
    fresh: usize,
}

impl Batch {
    fn new(
        median: &TenantContext,
        heaviest: &TenantContext,
        text: &str,
        (median_args, heaviest_args): (String, String),
        timeout_ms: u64,
        stats: StatsMode,
    ) -> Batch {
        let mut b = Batch::default();
        b.push(session::begin_sql(median, timeout_ms), false);
        b.set(median, stats);
        // The `;` on a line of its own: the text may end in a `--` comment.
        b.push(tag(stats, &format!("PREPARE {NAME} AS {text}\n")), false);
        let explain = |name: &str, args: &str| explain(stats, name, args);
        for _ in 0..6 {
            b.push(explain(NAME, &median_args), true);
        }
        let counter = tag(
            stats,
            &format!("SELECT generic_plans FROM pg_prepared_statements WHERE name = '{NAME}'"),
        );
        b.before = b.push(counter.clone(), true);
        b.set(heaviest, stats);
        b.kept = b.push(explain(NAME, &heaviest_args), true);
        b.after = b.push(counter, true);
        b.push(format!("DEALLOCATE {NAME}"), false);
        b.push(tag(stats, &format!("PREPARE {FRESH} AS {text}\n")), false);
        b.push(
            "SET LOCAL plan_cache_mode = force_custom_plan".to_string(),
            false,
        );
        b.fresh = b.push(explain(FRESH, &heaviest_args), true);
        b.push(format!("DEALLOCATE {FRESH}"), false);
        b.push("ROLLBACK".to_string(), false);
        b
    }

    /// The screen, one batch of two plans: the generic plan made as the
    /// median tenant (what the method's prepared statement keeps when it
    /// keeps one: the server builds a generic plan from no values, so
    /// forcing it builds the same), and the heaviest tenant's fresh plan,
    /// exactly as the method makes it. The method can only report a
    /// difference between these two plans: where their shapes agree it
    /// need not run (deterministic planning on the same statistics).
    fn screen(
        (median, heaviest): (&TenantContext, &TenantContext),
        text: &str,
        (median_args, heaviest_args): (String, String),
        timeout_ms: u64,
        stats: StatsMode,
    ) -> Batch {
        let mut b = Batch::default();
        b.push(session::begin_sql(median, timeout_ms), false);
        b.set(median, stats);
        b.push(tag(stats, &format!("PREPARE {NAME} AS {text}\n")), false);
        b.push(
            "SET LOCAL plan_cache_mode = force_generic_plan".to_string(),
            false,
        );
        b.kept = b.push(explain(stats, NAME, &median_args), true);
        b.push(format!("DEALLOCATE {NAME}"), false);
        b.set(heaviest, stats);
        b.push(tag(stats, &format!("PREPARE {FRESH} AS {text}\n")), false);
        b.push(
            "SET LOCAL plan_cache_mode = force_custom_plan".to_string(),
            false,
        );
        b.fresh = b.push(explain(stats, FRESH, &heaviest_args), true);
        b.push(format!("DEALLOCATE {FRESH}"), false);
        b.push("ROLLBACK".to_string(), false);
        b
    }

    /// Adds a statement; returns the index of its row among the answered rows.
    fn push(&mut self, sql: String, answers_a_row: bool) -> usize {
        self.statements.push(sql);
        let at = self.rows;
        if answers_a_row {
            self.rows += 1;
        }
        at
    }

    /// The context's settings, as `set_config(name, value, true)` literals.
    fn set(&mut self, ctx: &TenantContext, stats: StatsMode) {
        if ctx.settings.is_empty() {
            return;
        }
        let calls: Vec<String> = ctx
            .settings
            .iter()
            .map(|(name, v)| {
                format!(
                    "set_config({}, {}, true)",
                    quote_literal(name),
                    quote_literal(&v.as_text())
                )
            })
            .collect();
        self.push(tag(stats, &format!("SELECT {}", calls.join(", "))), true);
    }

    fn sql(&self) -> String {
        self.statements.join(";\n")
    }
}

/// `EXPLAIN (FORMAT JSON) EXECUTE name(args)`, as the method sends it.
fn explain(stats: StatsMode, name: &str, args: &str) -> String {
    tag(
        stats,
        &format!("EXPLAIN (FORMAT JSON) EXECUTE {name}{args}"),
    )
}

/// `(v1, NULL, ...)` for `EXECUTE`: the values as literals (none: nothing).
fn execute_args(n: usize, values: &[Option<String>]) -> String {
    if n == 0 {
        return String::new();
    }
    let lits: Vec<String> = (0..n)
        .map(|i| match values.get(i).cloned().flatten() {
            Some(s) => quote_literal(&s),
            None => "NULL".to_string(),
        })
        .collect();
    format!("({})", lits.join(", "))
}

/// The first column of every row a simple-protocol batch answered, in order.
fn first_columns(msgs: Vec<tokio_postgres::SimpleQueryMessage>) -> Vec<String> {
    msgs.into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some(r.get(0).unwrap_or_default().to_string())
            }
            _ => None,
        })
        .collect()
}

/// Scan types, join methods and their order: what makes two plans differ.
pub fn shape(json: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        out.push(format!(
            "{}|{}|{}",
            s("Node Type"),
            s("Relation Name"),
            s("Index Name")
        ));
        for c in v
            .get("Plans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(c, out);
        }
    }
    if let Some(p) = json.get(0).and_then(|r| r.get("Plan")) {
        walk(p, &mut out);
    }
    out
}

/// `Nested Loop (24 rows) > Index Scan using t_tenant on tickets (24 rows) > ...`
pub fn summary(json: &Value) -> String {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        let mut node = s("Node Type").unwrap_or_default().to_string();
        if s("Node Type") == Some("Hash") || s("Parent Relationship") == Some("InitPlan") {
            // Hash nodes repeat their child; InitPlans are not the shape.
        } else {
            if let Some(i) = s("Index Name") {
                node.push_str(&format!(" using {i}"));
            }
            if let Some(r) = s("Relation Name") {
                node.push_str(&format!(" on {r}"));
            }
            let rows = v.get("Plan Rows").and_then(Value::as_f64).unwrap_or(0.0);
            node.push_str(&format!(" ({} rows)", crate::output::count(rows as u64)));
            out.push(node);
        }
        for c in v
            .get("Plans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(c, out);
        }
    }
    if let Some(p) = json.get(0).and_then(|r| r.get("Plan")) {
        walk(p, &mut out);
    }
    out.join(" > ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SettingValue;
    use serde_json::json;

    /// The batch's answered rows, in order, are the ones its indexes name:
    /// one row per set_config, EXPLAIN and counter, none for the rest.
    #[test]
    fn the_batch_names_the_rows_it_answers() {
        let ctx = |id: &str| TenantContext {
            role: Some("app".into()),
            settings: vec![("app.tenant".into(), SettingValue::Text(id.into()))],
        };
        let b = Batch::new(
            &ctx("7"),
            &ctx("1"),
            "SELECT * FROM t WHERE a = $1 -- c",
            (
                execute_args(1, &[Some("it's".into())]),
                execute_args(1, &[None]),
            ),
            250,
            StatsMode::Untracked,
        );
        let sql = b.sql();
        let answering: Vec<&String> = b
            .statements
            .iter()
            .filter(|s| {
                s.contains("SELECT set_config")
                    || s.starts_with("EXPLAIN")
                    || s.contains("generic_plans")
            })
            .collect();
        assert_eq!(answering.len(), b.rows, "{sql}");
        assert_eq!(b.rows, 12, "{sql}");
        let row = |i: usize| answering[i].as_str();
        assert!(row(0).contains("'app.tenant', '7'"), "{sql}");
        assert_eq!(
            row(1),
            "EXPLAIN (FORMAT JSON) EXECUTE planck_reuse('it''s')"
        );
        assert!(row(b.before).contains("generic_plans"), "{sql}");
        assert!(row(b.before + 1).contains("'app.tenant', '1'"), "{sql}");
        assert_eq!(
            row(b.kept),
            "EXPLAIN (FORMAT JSON) EXECUTE planck_reuse(NULL)"
        );
        assert!(row(b.after).contains("generic_plans"), "{sql}");
        assert_eq!(
            row(b.fresh),
            "EXPLAIN (FORMAT JSON) EXECUTE planck_reuse_fresh(NULL)"
        );
        assert!(
            sql.starts_with("BEGIN; SET LOCAL statement_timeout = 250; SET LOCAL ROLE \"app\"")
        );
        // A `--` comment cannot swallow the statement after the text.
        assert!(sql.contains("-- c\n;\n"), "{sql}");
        assert!(
            sql.ends_with("DEALLOCATE planck_reuse_fresh;\nROLLBACK"),
            "{sql}"
        );
        assert_eq!(execute_args(0, &[]), "");
    }

    /// The screen makes the two plans the method compares, in two rows:
    /// the generic plan (forced) as the median tenant, the fresh custom
    /// plan as the heaviest, each after its own tenant's setting.
    #[test]
    fn the_screen_plans_the_median_generic_and_the_heaviest_fresh() {
        let ctx = |id: &str| TenantContext {
            role: Some("app".into()),
            settings: vec![("app.tenant".into(), SettingValue::Text(id.into()))],
        };
        let b = Batch::screen(
            (&ctx("7"), &ctx("1")),
            "SELECT * FROM t WHERE a = $1 -- c",
            (
                execute_args(1, &[Some("m".into())]),
                execute_args(1, &[Some("h".into())]),
            ),
            250,
            StatsMode::Untracked,
        );
        let answering: Vec<&String> = b
            .statements
            .iter()
            .filter(|s| s.contains("SELECT set_config") || s.starts_with("EXPLAIN"))
            .collect();
        assert_eq!(answering.len(), b.rows, "{}", b.sql());
        assert_eq!(b.rows, 4, "{}", b.sql());
        assert!(answering[b.kept - 1].contains("'app.tenant', '7'"));
        assert_eq!(
            answering[b.kept],
            "EXPLAIN (FORMAT JSON) EXECUTE planck_reuse('m')"
        );
        assert!(answering[b.fresh - 1].contains("'app.tenant', '1'"));
        assert_eq!(
            answering[b.fresh],
            "EXPLAIN (FORMAT JSON) EXECUTE planck_reuse_fresh('h')"
        );
        // Forced generic before the median's plan, forced custom before the fresh one.
        let at = |needle: &str| b.statements.iter().position(|s| s.contains(needle));
        let kept_at = at("EXECUTE planck_reuse(").unwrap();
        let fresh_at = at("EXECUTE planck_reuse_fresh").unwrap();
        assert!(at("force_generic_plan").unwrap() < kept_at);
        let custom = at("force_custom_plan").unwrap();
        assert!(kept_at < custom && custom < fresh_at);
        assert!(
            b.sql()
                .ends_with("DEALLOCATE planck_reuse_fresh;\nROLLBACK")
        );
    }

    #[test]
    fn shapes_differ_by_scan_and_join_and_summaries_carry_the_estimates() {
        let a = json!([{"Plan": {"Node Type": "Nested Loop", "Plan Rows": 24.0, "Plans": [
            {"Node Type": "Index Scan", "Relation Name": "tickets", "Index Name": "t_tenant", "Plan Rows": 24.0},
            {"Node Type": "Index Scan", "Relation Name": "comments", "Index Name": "c_ticket", "Plan Rows": 3.0}]}}]);
        let b = json!([{"Plan": {"Node Type": "Hash Join", "Plan Rows": 60574.0, "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "comments", "Plan Rows": 200000.0},
            {"Node Type": "Hash", "Plan Rows": 60574.0, "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "tickets", "Plan Rows": 60574.0}]}]}}]);
        assert_ne!(shape(&a), shape(&b));
        assert_eq!(shape(&a), shape(&a.clone()));
        assert_eq!(
            summary(&a),
            "Nested Loop (24 rows) > Index Scan using t_tenant on tickets (24 rows) > \
             Index Scan using c_ticket on comments (3 rows)"
        );
        assert!(
            summary(&b).contains("Seq Scan on tickets (60,574 rows)"),
            "{}",
            summary(&b)
        );
    }
}
