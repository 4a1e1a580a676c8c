//! What every plan check is written against: the [`Check`] trait, the
//! context a check reads ([`Ctx`]) and the helpers checks share (plans
//! judged, where a node sits, rows read, bookkeeping tables, report order).
//! Apart from `rules/mod.rs` so that the check files, which use all this,
//! sit between it and the list of checks ([`super::ALL`]) that uses them:
//! nothing here knows any one check.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;

use super::knob::{CheckKnobs, Knob, KnobSpec, KnobType};
use crate::catalog::planner::Catalog;
use crate::explain::data::{NotJudgedObject, Why};
use crate::explain::engine::{Explained, Status};
use crate::explain::options::GenericPlans;
use crate::explain::plan_tree::{Mode, Plan, PlanKind};
use crate::explain::probes::{Measure, Measuring, Probes};
use crate::findings::{CheckId, Finding, Severity};
use crate::tenancy::Tenancy;

/// A finding on `e` that only its generic plan shows, `kinds` being the
/// kinds of plan that show it. Only when `e` has a judged custom plan in the
/// finding's mode that could have shown it. Where the recording knows how
/// the application sent `e` (`sent`, issue 13 §1), that evidence decides: a
/// prepared statement can run the generic plan, so the finding is judged
/// and says so; one sent with literals never does, so it is dropped.
/// Without evidence, `ctx.generic` decides (None: dropped).
pub fn generic_only(
    ctx: &Ctx,
    e: &Explained,
    mode: Mode,
    kinds: &[PlanKind],
    mut f: Finding,
) -> Option<Finding> {
    use crate::queries::Sent;
    let only_generic = !kinds.is_empty() && kinds.iter().all(|k| *k == PlanKind::Generic);
    let has_custom = judged_plans(e).any(|p| p.mode == mode && p.kind == PlanKind::Custom);
    if !(only_generic && has_custom) {
        return Some(f);
    }
    match (e.stmt.sent, ctx.generic) {
        (Some(Sent::Prepared), _) => {
            f.message.push_str(
                "; only the generic plan shows it, and the recording saw the application \
                 prepare the statement (sent = \"prepared\"): the server can switch it to \
                 that plan",
            );
            Some(f)
        }
        (Some(Sent::Unprepared), _) => None,
        (None, GenericPlans::Judge) => Some(f),
        (None, GenericPlans::Ignore) => None,
        (None, GenericPlans::Warn) => {
            if f.severity == Severity::Error {
                f.severity = Severity::Warning;
            }
            f.message.push_str(
                "; only the generic plan shows it (the custom plans, with values bound, do \
                 not): it counts where the application prepares the statement",
            );
            Some(f)
        }
    }
}

/// What a check sees.
pub struct Ctx<'a> {
    pub catalog: &'a Catalog,
    pub results: &'a [Explained],
    pub tenancy: Option<&'a Tenancy>,
    pub min_rows: u64,
    /// A table with fewer rows shows no plan reading an index: no verdict on
    /// its indexes or on it (see [`Ctx::table_not_judged`]).
    pub min_table_rows: u64,
    /// The tables statements not judged read
    /// ([`crate::explain::data::unjudged_tables`] of `results`).
    pub unjudged: BTreeSet<String>,
    /// The checks' own knobs as planck.toml set them ([`Ctx::knob`]).
    pub knobs: &'a CheckKnobs,
    pub source: Option<&'a Path>,
    pub probes: &'a Probes,
    pub generic: GenericPlans,
    /// The verdicts the checks withheld for want of data ([`Ctx::withhold`]);
    /// a cell because checks see the context shared, as they do the catalog.
    pub withheld: RefCell<Vec<NotJudgedObject>>,
}

impl Ctx<'_> {
    /// `check`'s own `knob` ([`Check::knobs`]): as `[explain.checks.<id>]`
    /// in planck.toml sets it, else its default.
    pub fn knob<T: KnobType>(&self, check: CheckId, knob: &Knob<T>) -> T {
        self.knobs.value(check, knob)
    }

    /// The rows of the check's own probe ([`Check::probe`]), each a JSON
    /// object keyed by the SELECT's column names; none when it did not run.
    pub fn probed(&self, check: CheckId) -> &[serde_json::Value] {
        self.probes.declared.get(&check).map_or(&[], Vec::as_slice)
    }

    /// What the check's own measurement ([`Check::measure`]) found, of its
    /// own type `T`; None when it did not run or found nothing to measure.
    pub fn evidence<T: std::any::Any>(&self, check: CheckId) -> Option<&T> {
        self.probes.evidence(check)
    }

    pub fn explained(&self) -> impl Iterator<Item = &Explained> {
        self.results
            .iter()
            .filter(|e| e.status == Status::Explained)
    }

    /// Tables some explained statement touches and no statement not judged
    /// reads (how such a statement would use their indexes is unknown, so
    /// none of them is judged unused).
    pub fn touched(&self) -> BTreeSet<String> {
        let mut s = self.tables_of(self.explained());
        s.retain(|t| !self.unjudged.contains(t));
        s
    }

    /// Tables some planned statement touches, judged or not: the tables
    /// whose indexes the object checks look at, a verdict drawn or withheld.
    pub fn planned_tables(&self) -> BTreeSet<String> {
        self.tables_of(
            self.results
                .iter()
                .filter(|e| matches!(e.status, Status::Explained | Status::NotJudged(_))),
        )
    }

    fn tables_of<'e>(&self, statements: impl Iterator<Item = &'e Explained>) -> BTreeSet<String> {
        let mut s = BTreeSet::new();
        for e in statements {
            s.extend(
                e.analysis
                    .tables
                    .iter()
                    .filter_map(|t| self.catalog.resolve(t))
                    .map(str::to_string),
            );
            for p in &e.plans {
                s.extend(p.nodes().iter().filter_map(|n| n.relation.clone()));
            }
        }
        s
    }

    /// Why the data cannot show whether `table`'s indexes are worth their
    /// keep, or None when it can (issue 47, 3): the table holds fewer than
    /// `min_table_rows` (no plan reads an index of a table of a few rows,
    /// whatever the workload), or a statement not judged reads it. A table
    /// the catalog does not know is judged (nothing is said of it either way).
    pub fn table_not_judged(&self, table: &str) -> Option<Why> {
        let rows = self.catalog.tables.get(table)?.rows;
        if rows < self.min_table_rows || rows == 0 {
            Some(Why::BelowMinTableRows)
        } else if self.unjudged.contains(table) {
            Some(Why::ReadByUnjudged)
        } else {
            None
        }
    }

    /// [`Ctx::table_not_judged`] for a verdict about reading `table` whole
    /// (a foreign key's delete, a policy column with no index): its size
    /// alone decides, and below `min_rows` it says nothing, as for the scan
    /// checks.
    pub fn table_too_small_to_read_whole(&self, table: &str) -> Option<Why> {
        let rows = self.catalog.tables.get(table)?.rows;
        if rows < self.min_table_rows || rows == 0 {
            Some(Why::BelowMinTableRows)
        } else if rows < self.min_rows {
            Some(Why::BelowMinRows)
        } else {
            None
        }
    }

    /// Records that `check` drew no verdict on `table` (or its `index`)
    /// because of `why`: the report lists it as not judged.
    pub fn withhold(&self, check: CheckId, table: &str, index: Option<&str>, why: Why) {
        self.withheld.borrow_mut().push(NotJudgedObject {
            table: table.to_string(),
            index: index.map(str::to_string),
            check,
            rows: self.catalog.rows(table),
            why,
        });
    }
}

/// "in any mode", or "in admin mode" when only one mode was planned.
pub fn modes_phrase(ctx: &Ctx) -> String {
    let modes: std::collections::BTreeSet<Mode> = ctx
        .results
        .iter()
        .flat_map(|e| e.plans.iter().map(|p| p.mode))
        .collect();
    match modes.iter().next() {
        Some(m) if modes.len() == 1 => format!("in {} mode", m.as_str()),
        _ => "in any mode".to_string(),
    }
}

/// The judged plans of a statement (literal re-plans excluded).
pub fn judged_plans(e: &Explained) -> impl Iterator<Item = &Plan> {
    e.plans
        .iter()
        .filter(|p| p.kind != PlanKind::Literal && e.judged.contains(&p.mode))
}

/// `generic plan` / `custom plan (heaviest tenant)`.
pub fn describe(p: &Plan) -> String {
    match (&p.kind, &p.tenant) {
        (PlanKind::Generic, _) => "generic plan".to_string(),
        (_, Some(t)) => format!("{} plan ({t} tenant)", p.kind.as_str()),
        (_, None) => format!("{} plan", p.kind.as_str()),
    }
}

/// Declares a check: its struct, its kebab-case id and its help, the doc
/// comment (what to do about a finding; every renderer shows it). build.rs
/// reads these to write [`CheckId`], so the id and help live in the check's
/// own file. `also Name => "id";` declares a second id the check emits.
///
/// ```text
/// declare_check! {
///     /// add an index that leads with the filtered columns
///     pub struct SeqScan => "seq-scan";
/// }
/// ```
macro_rules! declare_check {
    () => {};
    ($(#[$doc:meta])* pub struct $name:ident => $id:literal; $($rest:tt)*) => {
        $(#[$doc])*
        pub struct $name;
        $crate::explain::rules::check::declare_check! { $($rest)* }
    };
    ($(#[$doc:meta])* also $name:ident => $id:literal; $($rest:tt)*) => {
        $crate::explain::rules::check::declare_check! { $($rest)* }
    };
}
pub(crate) use declare_check;

/// One plan check. Its id and help are declared with [`declare_check!`].
pub trait Check: Sync {
    fn id(&self) -> CheckId;

    /// What this check needs the server to answer beyond the catalog and the
    /// plans: one SELECT ([`Probe`]), run once as the admin role before the
    /// checks (when the check is not disabled and its guard holds), its rows
    /// reaching [`Check::run`] as JSON objects through [`Ctx::probed`]. None
    /// (the default): the check reads the plans and the catalog only.
    fn probe(&self) -> Option<Probe> {
        None
    }

    /// The check's own settings ([`Knob`]s, declared in its file), set in
    /// planck.toml under `[explain.checks.<id>]` and read in [`Check::run`]
    /// with [`Ctx::knob`]. None (the default): the check has none.
    fn knobs(&self) -> Vec<KnobSpec> {
        Vec::new()
    }

    /// The check's own measurement on the server, where one SELECT
    /// ([`Check::probe`]) is not enough: code of the check's (beside it, in
    /// its folder: `rules/<check>/measure.rs`), run by the engine after
    /// planning and before the checks, when the check is not disabled. Its
    /// evidence, of the check's own type, reaches [`Check::run`] through
    /// [`Ctx::evidence`]. None (the default): the check measures nothing.
    fn measure<'a>(&'a self, _on: &'a Measure<'a>) -> Option<Measuring<'a>> {
        None
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>);
}

/// What a check asks the server ([`Check::probe`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Probe {
    /// One SELECT; its rows reach the check as JSON objects.
    pub sql: &'static str,
    /// A SELECT of one boolean run first: when false the probe is not run
    /// and the check gets no rows (a Citus probe on a server without Citus,
    /// whose catalog tables do not exist there).
    pub guard: Option<&'static str>,
    /// `sql` reads the heaviest tenant's id as `$1` (text; NULL when the run
    /// resolved no tenancy).
    pub tenant: bool,
}

impl Probe {
    /// A probe of `sql` alone: no guard, no parameter.
    pub const fn sql(sql: &'static str) -> Probe {
        Probe {
            sql,
            guard: None,
            tenant: false,
        }
    }
}

/// A help text written for one finding from its own tables, columns and
/// settings (issue 48 §5), as the `&'static str` a [`Finding`]'s help is
/// (the rule-level help, which SARIF's rule table lists, is static).
/// Each distinct text is kept once for the life of the process: a run
/// writes a bounded number of them (at most one per finding), so this
/// costs little and keeps `Finding` as every renderer reads it.
pub fn own_help(text: String) -> &'static str {
    static TEXTS: std::sync::Mutex<BTreeSet<&'static str>> = std::sync::Mutex::new(BTreeSet::new());
    let mut texts = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = texts.get(text.as_str()) {
        return t;
    }
    let t: &'static str = Box::leak(text.into_boxed_str());
    texts.insert(t);
    t
}

/// A display name as SQL: each part bare when it is lowercase letters,
/// digits and underscores, quoted otherwise (`audit.events_kind`).
pub fn plain_name(display: &str) -> String {
    display
        .split('.')
        .map(|p| {
            let plain = p.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if plain {
                p.to_string()
            } else {
                crate::db::quote_ident(p)
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// [`Finding`]'s builder, with the help a check wrote for this finding.
pub trait WithHelp {
    fn with_help(self, help: &'static str) -> Self;
}

impl WithHelp for Finding {
    fn with_help(mut self, help: &'static str) -> Finding {
        self.help = help;
        self
    }
}

/// A finding of check `c` (what `Finding::new(self, ...)` reads as in a check).
pub fn finding(c: &(impl Check + ?Sized), severity: Severity, message: String) -> Finding {
    Finding::new(c.id(), severity, message)
}

/// Whether `name` (as written or displayed, perhaps schema-qualified) is a
/// migration tool's bookkeeping table or planck's own.
pub fn is_bookkeeping(name: &str) -> bool {
    let (schema, bare) = match name.rsplit_once('.') {
        Some((s, t)) => (Some(s), t),
        None => (None, name),
    };
    let bare = bare.trim_matches('"');
    schema == Some(crate::bookkeeping::SCHEMA)
        || crate::catalog::schema::is_migration_bookkeeping(bare)
        || crate::catalog::schema::OWN_TABLES.contains(&bare)
}

/// Whether `f` is about a bookkeeping table, or a statement that reads one.
pub(super) fn on_bookkeeping(f: &Finding, results: &[Explained]) -> bool {
    if f.relation.as_deref().is_some_and(is_bookkeeping) {
        return true;
    }
    results
        .iter()
        .filter(|e| f.statement.as_deref() == Some(e.stmt.id.as_str()))
        .any(|e| e.analysis.tables.iter().any(|t| is_bookkeeping(t)))
}

/// Where a node of `p` (one of `e`'s plans) sits: the plan's index among the
/// statement's plans.
pub fn plan_index(e: &Explained, p: &Plan) -> usize {
    e.plans
        .iter()
        .position(|q| std::ptr::eq(q, p))
        .unwrap_or_default()
}

/// The JSON object of the node at `path` (child indexes from the root) in `p`.
pub fn node_json<'a>(p: &'a Plan, path: &[usize]) -> Option<&'a serde_json::Value> {
    let mut v = p.root()?;
    for &i in path {
        v = v.get("Plans")?.get(i)?;
    }
    Some(v)
}

/// Nodes that consume all their input before returning a first row: a
/// Limit above them stops nothing below them.
const BLOCKING: &[&str] = &[
    "Sort",
    "Incremental Sort",
    "Aggregate",
    "Hash",
    "WindowAgg",
    "Materialize",
    "SetOp",
    "Recursive Union",
    "Bitmap Heap Scan",
    "BitmapAnd",
    "BitmapOr",
];

/// The rows a scan at `path` in `p` is estimated to read in one execution,
/// of a relation of `rows` rows (issue 13 §4): all of them, unless a Limit
/// above it stops early, with only streaming nodes between (no Sort,
/// aggregate, hash or bitmap; through the outer side of joins only, since an
/// inner side is read again per outer row). Then the Limit's share, as the
/// planner costs it: `(limit total - input startup) / (input total - input
/// startup)` is the fraction of its input the Limit pulls.
pub fn rows_read(p: &Plan, path: &[usize], rows: u64) -> f64 {
    rows_read_limited(p, path, rows, None)
}

/// [`rows_read`] of a scan of `e`'s plan `p`. A generic plan of `LIMIT $n`
/// costs the Limit at a guess (a tenth of its input), which no execution
/// meets: there the Limit pulls the rows the custom plans bind for `$n`.
pub fn rows_read_in(e: &Explained, p: &Plan, path: &[usize], rows: u64) -> f64 {
    let limit = e
        .analysis
        .bindings
        .iter()
        .find(|(_, b)| **b == crate::params::binding::Binding::Limit)
        .map(|(n, _)| *n as usize);
    let (Some(n), PlanKind::Generic) = (limit, p.kind) else {
        return rows_read(p, path, rows);
    };
    let bound = e
        .plans
        .iter()
        .filter(|q| q.kind == PlanKind::Custom && q.mode == p.mode)
        .find_map(|q| q.params.get(n.wrapping_sub(1)).cloned().flatten())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(20.0);
    rows_read_limited(p, path, rows, Some(bound))
}

/// [`rows_read`], the Limit pulling `limit` rows of its input when given.
fn rows_read_limited(p: &Plan, path: &[usize], rows: u64, limit: Option<f64>) -> f64 {
    let all = rows as f64;
    if node_json(p, path)
        .and_then(|n| n.get("Node Type"))
        .and_then(serde_json::Value::as_str)
        == Some("Bitmap Index Scan")
    {
        return all;
    }
    for k in (0..path.len()).rev() {
        let Some(parent) = node_json(p, &path[..k]) else {
            return all;
        };
        let Some(child) = node_json(p, &path[..=k]) else {
            return all;
        };
        let kind = parent.get("Node Type").and_then(serde_json::Value::as_str);
        let relationship = child
            .get("Parent Relationship")
            .and_then(serde_json::Value::as_str);
        if matches!(relationship, Some("InitPlan" | "SubPlan")) {
            return all;
        }
        match kind {
            Some("Limit") => {
                let f = |v: &serde_json::Value, k: &str| {
                    v.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0)
                };
                if let Some(n) = limit {
                    let input = f(child, "Plan Rows");
                    return if input > 0.0 {
                        all * (n / input).clamp(0.0, 1.0)
                    } else {
                        all
                    };
                }
                let (startup, total) = (f(child, "Startup Cost"), f(child, "Total Cost"));
                let span = total - startup;
                if span <= 0.0 {
                    return all;
                }
                let share = ((f(parent, "Total Cost") - startup) / span).clamp(0.0, 1.0);
                return all * share;
            }
            Some(k) if BLOCKING.contains(&k) => return all,
            Some("Nested Loop" | "Hash Join" | "Merge Join") if path[k] != 0 => return all,
            _ => {}
        }
    }
    all
}

/// Whether `text` reads whole tables by design: one statement with no WHERE
/// and no LIMIT, so every row of what it reads is asked for: a SELECT
/// (`SELECT count(*) FROM t`, a full-table aggregate, the same over joins),
/// an UPDATE or DELETE of every row (`UPDATE t SET c = $1`, issue 47), an
/// INSERT of such a SELECT. No index can make such a statement read fewer
/// rows. A subquery's own scans are not covered (see the checks using it).
pub fn reads_all_by_design(text: &str) -> bool {
    use sqlparser::ast::Statement;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;
    let Ok(statements) = Parser::parse_sql(&PostgreSqlDialect {}, text) else {
        return false;
    };
    match statements.as_slice() {
        [Statement::Query(q)] => query_reads_all(q),
        [
            Statement::Update {
                selection: None,
                limit: None,
                ..
            },
        ] => true,
        [Statement::Delete(d)] => d.selection.is_none() && d.limit.is_none(),
        [Statement::Insert(i)] => i.source.as_deref().is_some_and(query_reads_all),
        _ => false,
    }
}

/// A query with no WHERE, no LIMIT and no CTE, reading some table.
fn query_reads_all(q: &sqlparser::ast::Query) -> bool {
    use sqlparser::ast::SetExpr;
    if q.limit_clause.is_some() || q.fetch.is_some() || q.with.is_some() {
        return false;
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return false;
    };
    s.selection.is_none() && !s.from.is_empty()
}

/// Whether the node at `path` in `p` runs inside a subquery of its own (a
/// SubPlan, once per outer row when correlated, or an InitPlan): its rows
/// are not the statement's, so the statement's having no WHERE says nothing
/// of them (`UPDATE threads SET last = (SELECT max(id) FROM posts WHERE
/// thread_id = threads.id)` reads posts per thread, which an index serves).
pub fn in_subquery(p: &Plan, path: &[usize]) -> bool {
    (1..=path.len()).any(|k| {
        node_json(p, &path[..k])
            .and_then(|n| n.get("Parent Relationship"))
            .and_then(serde_json::Value::as_str)
            .is_some_and(|r| matches!(r, "SubPlan" | "InitPlan"))
    })
}

/// How much an error weighs in the report order (issue 13 §4): the estimated
/// cost of its statement's heaviest judged plan in its mode, times the calls
/// the recording counted (1 when it counted none). 0 for findings on no
/// statement.
pub fn weight(f: &Finding, results: &[Explained]) -> f64 {
    let Some(e) = results
        .iter()
        .find(|e| f.statement.as_deref() == Some(e.stmt.id.as_str()))
    else {
        return 0.0;
    };
    let cost = judged_plans(e)
        .filter(|p| f.mode.is_none_or(|m| m == p.mode))
        .map(Plan::total_cost)
        .fold(0.0, f64::max);
    cost * e.stmt.calls.unwrap_or(1).max(1) as f64
}

/// The report order: errors first, the heaviest first (see [`weight`]), then
/// a stable order by check, relation, index, statement and mode.
pub fn sort_for_report(findings: &mut Vec<Finding>, results: &[Explained]) {
    let mut keyed: Vec<(f64, Finding)> = std::mem::take(findings)
        .into_iter()
        .map(|f| {
            let w = if f.severity == Severity::Error {
                weight(&f, results)
            } else {
                0.0
            };
            (w, f)
        })
        .collect();
    keyed.sort_by(|(wa, a), (wb, b)| {
        a.severity
            .cmp(&b.severity)
            .then(wb.total_cmp(wa))
            .then_with(|| {
                (a.check, &a.relation, &a.index, &a.statement, &a.mode).cmp(&(
                    b.check,
                    &b.relation,
                    &b.index,
                    &b.statement,
                    &b.mode,
                ))
            })
    });
    findings.extend(keyed.into_iter().map(|(_, f)| f));
}
