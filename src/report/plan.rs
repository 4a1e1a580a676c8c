//! A plan as rows of a tree: what the HTML draws and what JUnit's failure
//! body shows, from EXPLAIN's JSON as PostgreSQL wrote it.

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub depth: usize,
    /// `Seq Scan on items`, `Index Scan using items_pkey on items`.
    pub label: String,
    pub cost: Option<f64>,
    pub rows: Option<f64>,
    /// `Filter: ...`, `Index Cond: ...`.
    pub details: Vec<String>,
    /// The node a finding was read from.
    pub marked: bool,
}

const DETAILS: &[&str] = &[
    "Index Cond",
    "Recheck Cond",
    "Filter",
    "Join Filter",
    "Hash Cond",
    "Merge Cond",
    "Rows Removed by Filter",
    "Sort Key",
    "Group Key",
];

/// The root node of EXPLAIN (FORMAT JSON) output: `[{"Plan": {...}}]`.
fn root(plan: &Value) -> &Value {
    plan.get(0)
        .and_then(|r| r.get("Plan"))
        .or_else(|| plan.get("Plan"))
        .unwrap_or(plan)
}

/// The plan's rows in order; `marked` paths (child indexes from the root) are flagged.
pub fn rows(plan: &Value, marked: &[&[usize]]) -> Vec<Row> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(root(plan), 0, &mut path, marked, &mut out);
    out
}

fn walk(
    node: &Value,
    depth: usize,
    path: &mut Vec<usize>,
    marked: &[&[usize]],
    out: &mut Vec<Row>,
) {
    let s = |k: &str| node.get(k).and_then(Value::as_str);
    let mut label = s("Node Type").unwrap_or("?").to_string();
    if let Some(j) = s("Join Type").filter(|j| *j != "Inner") {
        label = format!("{label} ({j})");
    }
    if let Some(i) = s("Index Name") {
        label.push_str(&format!(" using {i}"));
    }
    if let Some(r) = s("Relation Name") {
        label.push_str(&format!(" on {r}"));
        if let Some(a) = s("Alias").filter(|a| *a != r) {
            label.push_str(&format!(" {a}"));
        }
    }
    let details = DETAILS
        .iter()
        .filter_map(|k| {
            let v = node.get(*k)?;
            let text = match v {
                Value::String(t) => t.clone(),
                Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            Some(format!("{k}: {text}"))
        })
        .collect();
    out.push(Row {
        depth,
        label,
        cost: node.get("Total Cost").and_then(Value::as_f64),
        rows: node.get("Plan Rows").and_then(Value::as_f64),
        details,
        marked: marked.contains(&path.as_slice()),
    });
    if let Some(children) = node.get("Plans").and_then(Value::as_array) {
        for (i, c) in children.iter().enumerate() {
            path.push(i);
            walk(c, depth + 1, path, marked, out);
            path.pop();
        }
    }
}

/// The tree as indented text, the marked node flagged with `>>`.
pub fn text(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        let mark = if r.marked { ">> " } else { "   " };
        let indent = "  ".repeat(r.depth);
        let cost = r
            .cost
            .map(|c| format!("  (cost {c:.2}"))
            .unwrap_or_default();
        let n = match (r.cost, r.rows) {
            (Some(_), Some(n)) => format!(" rows {n:.0})"),
            (Some(_), None) => ")".to_string(),
            _ => String::new(),
        };
        out.push_str(&format!("{mark}{indent}{}{cost}{n}\n", r.label));
        for d in &r.details {
            out.push_str(&format!("   {indent}    {d}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_follow_the_tree_and_mark_the_node_by_path() {
        let plan = json!([{"Plan": {"Node Type": "Hash Join", "Join Type": "Left", "Total Cost": 10.0,
            "Hash Cond": "(a.id = b.a_id)", "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "a", "Alias": "a", "Total Cost": 1.0, "Plan Rows": 5},
            {"Node Type": "Hash", "Total Cost": 2.0, "Plans": [
                {"Node Type": "Index Scan", "Relation Name": "b", "Alias": "bb",
                 "Index Name": "b_pkey", "Total Cost": 2.0}]}]}}]);
        let r = rows(&plan, &[&[1, 0]]);
        let labels: Vec<(usize, &str, bool)> = r
            .iter()
            .map(|r| (r.depth, r.label.as_str(), r.marked))
            .collect();
        assert_eq!(
            labels,
            vec![
                (0, "Hash Join (Left)", false),
                (1, "Seq Scan on a", false),
                (1, "Hash", false),
                (2, "Index Scan using b_pkey on b bb", true),
            ]
        );
        assert_eq!(r[0].details, vec!["Hash Cond: (a.id = b.a_id)".to_string()]);
        let t = text(&r);
        assert!(
            t.contains(">>     Index Scan using b_pkey on b bb  (cost 2.00)"),
            "{t}"
        );
        assert!(
            t.contains("\n     Seq Scan on a  (cost 1.00 rows 5)\n"),
            "{t}"
        );
    }
}
