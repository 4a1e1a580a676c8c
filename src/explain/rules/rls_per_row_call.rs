//! `rls-per-row-call`: a policy `using (user_id = auth.uid())` calls
//! `auth.uid()` for every row it filters, where `(select auth.uid())` is an
//! InitPlan evaluated once. Judged on the plan, not the policy text: the call
//! sits in a per-row `Filter`/`Join Filter` of a scan of the policy's table,
//! including calls hidden in the helpers a policy calls (a SECURITY DEFINER
//! function is never inlined; an inlined SQL helper leaves its body, and
//! its `current_setting()`, in the filter). With `--analyze` the calls are
//! counted exactly (see `explain::per_row_call`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{
    Check, CheckId, Ctx, Finding, Severity, declare_check, finding, judged_plans, plan_index,
};
use crate::catalog::planner::Catalog;
use crate::explain::engine::Explained;
use crate::explain::plan_tree::{Mode, PlanKind};
use crate::explain::per_row_call::{self, Counted, PerRowCalls, UserFn};
use crate::explain::probes::{Measure, Measuring};

declare_check! {
    /// wrap the call in a scalar subquery, `(select auth.uid())`, so it runs once per statement
    /// as an InitPlan (the message gives the rewritten policy); inside a helper, pass the
    /// per-request value in as a (select ...) argument
    pub struct RlsPerRowCall => "rls-per-row-call";
}

/// One function a tenant plan calls per row because a policy does.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub statement: String,
    pub plan: usize,
    pub path: Vec<usize>,
    pub table: String,
    pub policy: String,
    /// The function as the plan shows it (`auth.uid()`), or the policy's
    /// call whose inlined body is in the filter.
    pub shown: String,
    /// Its bare name (for counting) and whether it takes no arguments.
    pub bare: String,
    pub zero_arg: bool,
    pub inlined: bool,
    /// The functions it reaches through bodies, itself first.
    pub reaches: Vec<String>,
    /// `ALTER POLICY ... USING (...)` with the calls wrapped, when one can be written.
    pub rewrite: Option<String>,
}

impl Check for RlsPerRowCall {
    fn id(&self) -> CheckId {
        CheckId::RlsPerRowCall
    }

    /// The user functions, and with `--analyze` the calls counted
    /// (`explain::per_row_call`), in tenant mode.
    fn measure<'a>(&'a self, on: &'a Measure<'a>) -> Option<Measuring<'a>> {
        let tenancy = on.tenancy?;
        let per_row = |e: &Explained, functions: &[UserFn]| {
            let found = detect(on.catalog, e, functions).into_iter();
            found.filter(|c| !c.inlined).map(|c| (c.bare, c.table)).collect()
        };
        Some(Box::pin(per_row_call::measure(on, tenancy, calls, per_row)))
    }

    fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
        let measured = ctx.evidence::<PerRowCalls>(self.id());
        let functions = measured.map_or(&[][..], |m| m.functions.as_slice());
        for e in ctx.explained() {
            for c in detect(ctx.catalog, e, functions) {
                // Issue 47, 3: on a table of a few rows the plan filters
                // every row whatever the policy; with rows, an index can
                // take the comparison and call it once. Not judged there.
                if let Some(why) = ctx.table_not_judged(&c.table) {
                    ctx.withhold(self.id(), &c.table, None, why);
                    continue;
                }
                let counted = measured
                    .into_iter()
                    .flat_map(|m| &m.calls)
                    .find(|k| k.statement == c.statement && k.function == c.bare);
                out.push(
                    finding(self, Severity::Warning, message(&c, counted))
                        .statement(&e.stmt, Mode::Tenant)
                        .relation(&c.table)
                        .node(c.plan, &c.path),
                );
            }
        }
    }
}

fn message(c: &Call, counted: Option<&Counted>) -> String {
    let through = if c.reaches.len() > 1 {
        format!(" (which calls {})", c.reaches[1..].join(", "))
    } else {
        String::new()
    };
    let mut m = if c.inlined {
        format!(
            "policy {} on {} calls {}, inlined into a per-row filter: its body is evaluated for every row scanned",
            c.policy, c.table, c.shown
        )
    } else {
        format!(
            "policy {} on {} calls {}{through} once per row, in a per-row filter (not an InitPlan)",
            c.policy, c.table, c.shown
        )
    };
    if let Some(k) = counted {
        let per_row = if k.rows > 0.0 {
            k.calls as f64 / k.rows
        } else {
            0.0
        };
        m.push_str(&format!(
            "; measured for the heaviest tenant: {} calls for {} rows ({per_row:.2} per row), {:.1} ms",
            k.calls,
            crate::output::count(k.rows as u64),
            k.ms
        ));
    }
    match &c.rewrite {
        Some(r) => m.push_str(&format!("; rewrite it as: {r}")),
        None => m.push_str(&format!(
            "; {} takes row values, so pass what it reads per request in as a \
             (select ...) argument, or wrap the zero-argument calls inside it",
            c.shown
        )),
    }
    m
}

/// Every call a tenant plan of `e` makes per row because of a policy.
pub fn detect(catalog: &Catalog, e: &Explained, functions: &[UserFn]) -> Vec<Call> {
    let mut out: Vec<Call> = Vec::new();
    let mut seen = BTreeSet::new();
    let plans = judged_plans(e).filter(|p| p.mode == Mode::Tenant && p.kind != PlanKind::Literal);
    for p in plans {
        for n in p.nodes() {
            let Some(table) = &n.relation else { continue };
            let Some(raw) = p.root().and_then(|r| at(r, &n.path)) else {
                continue;
            };
            let filters: Vec<&str> = ["Filter", "Join Filter"]
                .iter()
                .filter_map(|k| raw.get(*k).and_then(Value::as_str))
                .collect();
            if filters.is_empty() {
                continue;
            }
            let filter = filters.join(" AND ");
            let in_filter = calls(&filter);
            for pol in catalog.policies.iter().filter(|x| x.table == *table) {
                let Some(qual) = &pol.qual else { continue };
                for (shown, bare, zero_arg, wrapped) in calls(qual) {
                    let Some(f) = find(functions, &bare) else {
                        continue;
                    };
                    if wrapped {
                        continue;
                    }
                    let reaches = reach(functions, f);
                    let direct = in_filter
                        .iter()
                        .find(|c| !c.3 && reaches.contains(&c.1))
                        .cloned();
                    let inlined = direct.is_none()
                        && zero_arg
                        && filter.contains("current_setting(")
                        && reaches
                            .iter()
                            .any(|r| find(functions, r).is_some_and(|f| f.reads_setting));
                    let (shown, bare, zero_arg) = match direct {
                        Some(d) => (d.0, d.1, d.2),
                        None if inlined => (shown, bare, zero_arg),
                        None => continue,
                    };
                    let f = find(functions, &bare).unwrap_or(f);
                    let reaches = reach(functions, f);
                    // A call with row arguments is this check's only when it
                    // hides a per-request call inside.
                    let hides = reaches[1..].iter().any(|r| {
                        find(functions, r).is_some_and(|g| g.nargs == 0 || g.reads_setting)
                    });
                    if !zero_arg && !hides {
                        continue;
                    }
                    if !seen.insert((table.clone(), bare.clone())) {
                        continue;
                    }
                    out.push(Call {
                        statement: e.stmt.id.clone(),
                        plan: plan_index(e, p),
                        path: n.path.clone(),
                        table: table.clone(),
                        policy: pol.name.clone(),
                        shown,
                        bare,
                        zero_arg,
                        inlined,
                        reaches,
                        rewrite: rewrite(&pol.name, table, qual, functions),
                    });
                }
            }
        }
    }
    out
}

/// The raw node at `path` from `root`.
fn at<'a>(root: &'a Value, path: &[usize]) -> Option<&'a Value> {
    let mut v = root;
    for i in path {
        v = v.get("Plans")?.get(*i)?;
    }
    Some(v)
}

fn find<'a>(functions: &'a [UserFn], bare: &str) -> Option<&'a UserFn> {
    functions.iter().find(|f| f.name == bare)
}

/// `f` and the user functions its body reaches, depth-first, bounded.
fn reach(functions: &[UserFn], f: &UserFn) -> Vec<String> {
    let mut out = vec![f.name.clone()];
    let mut i = 0;
    while i < out.len() && out.len() < 16 {
        if let Some(g) = find(functions, &out[i]) {
            for c in &g.calls {
                if !out.contains(c) {
                    out.push(c.clone());
                }
            }
        }
        i += 1;
    }
    out
}

/// Function calls in an expression's text: (as written, bare name, takes
/// no arguments, wrapped in a scalar subquery `(SELECT f())`).
pub fn calls(text: &str) -> Vec<(String, String, bool, bool)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    while i < b.len() {
        if b[i] == b'\'' {
            // Skip string literals.
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
            continue;
        }
        if (b[i].is_ascii_alphabetic() || b[i] == b'_') && (i == 0 || !ident(b[i - 1])) {
            let start = i;
            while i < b.len() && (ident(b[i]) || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && b[i] == b'(' {
                let written = &text[start..i];
                let bare = written.rsplit('.').next().unwrap_or(written).to_string();
                let zero_arg = b.get(i + 1) == Some(&b')');
                let before = text[..start].trim_end().to_ascii_uppercase();
                let wrapped = before.ends_with("SELECT");
                out.push((
                    format!("{written}({})", if zero_arg { "" } else { "..." }),
                    bare,
                    zero_arg,
                    wrapped,
                ));
            }
            continue;
        }
        i += 1;
    }
    out
}

/// The policy with every unwrapped zero-argument user function call
/// wrapped as `(SELECT f())`; None when nothing can be wrapped.
fn rewrite(policy: &str, table: &str, qual: &str, functions: &[UserFn]) -> Option<String> {
    let mut text = qual.to_string();
    let mut changed = false;
    for (written, bare, zero_arg, wrapped) in calls(qual) {
        if !zero_arg || wrapped || find(functions, &bare).is_none() {
            continue;
        }
        let wrapped_call = format!("(SELECT {written})");
        text = wrap_unwrapped(&text, &written, &wrapped_call);
        changed = true;
    }
    changed.then(|| {
        format!(
            "ALTER POLICY {} ON {} USING ({text})",
            crate::db::quote_ident(policy),
            crate::catalog::sql_name(table)
        )
    })
}

/// Replaces `call` with `with` where it is not already inside `(SELECT ...)`.
fn wrap_unwrapped(text: &str, call: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(call) {
        let before = format!("{out}{}", &rest[..i]);
        let already = before.trim_end().to_ascii_uppercase().ends_with("SELECT");
        out.push_str(&rest[..i]);
        out.push_str(if already { call } else { with });
        rest = &rest[i + call.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::planner::Policy;
    use crate::explain::rules::testing::{catalog, explained};
    use serde_json::json;

    fn uid() -> Vec<UserFn> {
        vec![
            UserFn {
                name: "uid".into(),
                nargs: 0,
                calls: vec![],
                reads_setting: true,
            },
            UserFn {
                name: "me".into(),
                nargs: 0,
                calls: vec!["uid".into()],
                reads_setting: false,
            },
        ]
    }

    fn with_policy(qual: &str) -> Catalog {
        let mut c = catalog(&[("notes", 50_000)], vec![]);
        c.policies.push(Policy {
            table: "notes".into(),
            name: "own".into(),
            roles: vec!["authenticated".into()],
            qual: Some(qual.into()),
            with_check: None,
        });
        c
    }

    fn scan(filter: &str, init: bool) -> Explained {
        let mut node = json!({"Node Type": "Seq Scan", "Relation Name": "notes", "Schema": "public",
            "Filter": filter});
        if init {
            node["Plans"] = json!([{"Node Type": "Result", "Parent Relationship": "InitPlan",
                "Output": ["auth.uid()"]}]);
        }
        explained(
            "SELECT * FROM notes",
            vec![(Mode::Tenant, PlanKind::Custom, json!([{"Plan": node}]))],
        )
    }

    #[test]
    fn a_bare_call_in_a_per_row_filter_is_flagged_with_the_rewrite() {
        let c = with_policy("(user_id = auth.uid())");
        let e = scan("(notes.user_id = auth.uid())", false);
        let found = detect(&c, &e, &uid());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].shown, "auth.uid()");
        let r = found[0].rewrite.as_deref().unwrap();
        assert!(r.starts_with("ALTER POLICY \"own\" ON "), "{r}");
        assert!(
            r.ends_with("USING ((user_id = (SELECT auth.uid())))"),
            "{r}"
        );
        assert!(
            found[0]
                .rewrite
                .as_deref()
                .unwrap()
                .contains("(SELECT auth.uid())")
        );
    }

    #[test]
    fn the_initplan_form_is_not_flagged() {
        let c = with_policy("(user_id = ( SELECT auth.uid() AS uid))");
        let e = scan("(notes.user_id = $0)", true);
        assert!(detect(&c, &e, &uid()).is_empty());
    }

    #[test]
    fn a_call_hidden_in_a_helper_is_flagged_with_what_it_reaches() {
        let c = with_policy("(user_id = app.me())");
        let e = scan("(notes.user_id = app.me())", false);
        let found = detect(&c, &e, &uid());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].reaches, vec!["me", "uid"]);
        let m = message(&found[0], None);
        assert!(m.contains("which calls uid"), "{m}");
    }

    #[test]
    fn calls_skip_literals_and_see_wrapping() {
        let c = calls("(a = ( SELECT auth.uid() AS uid)) AND f(x) AND 'g()' = b");
        assert_eq!(
            c,
            vec![
                ("auth.uid()".into(), "uid".into(), true, true),
                ("f(...)".into(), "f".into(), false, false)
            ]
        );
    }
}
