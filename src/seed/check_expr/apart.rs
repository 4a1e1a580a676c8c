//! Columns a CHECK keeps apart (issue 46): `entity0 <> entity1`, the
//! self-relation shape of two foreign keys into one parent. A generator
//! cannot honour it alone (each column draws its own value), so the
//! planner decides the two keys together ([`crate::seed::planner`]'s
//! foreign-key picks: the second key is drawn among the parent's keys
//! minus the first). The server still evaluates the CHECK.

use super::{Ex, col_of, parse};

/// The pairs of columns a CHECK requires to differ in every row it
/// accepts with both set: `a <> b` (or `NOT (a = b)`) as a conjunct at
/// the top, or as the one branch of an OR whose other branches only say
/// `a IS NULL` or `b IS NULL` (a NULL makes `a <> b` NULL, which passes
/// anyway). Each pair in the order the CHECK writes it.
pub fn apart_columns(def: &str) -> Vec<(String, String)> {
    let Some(e) = parse(def) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    conjuncts(&e, &mut out);
    out
}

fn conjuncts(e: &Ex, out: &mut Vec<(String, String)>) {
    match e {
        Ex::And(v) => v.iter().for_each(|x| conjuncts(x, out)),
        Ex::Or(v) => {
            let pairs: Vec<(String, String)> = v.iter().filter_map(differ).collect();
            let [(a, b)] = &pairs[..] else { return };
            let null_of_pair = |x: &Ex| match x {
                Ex::IsNull(c, true) => col_of(c, None).is_some_and(|c| c == *a || c == *b),
                _ => false,
            };
            if v.iter().all(|x| differ(x).is_some() || null_of_pair(x)) {
                out.push((a.clone(), b.clone()));
            }
        }
        e => out.extend(differ(e)),
    }
}

/// `a <> b` (`a != b`, `NOT (a = b)`) between two distinct columns.
fn differ(e: &Ex) -> Option<(String, String)> {
    let (l, r) = match e {
        Ex::Cmp(l, op, r) if op == "<>" || op == "!=" => (l, r),
        Ex::Not(x) => match &**x {
            Ex::Cmp(l, op, r) if op == "=" => (l, r),
            _ => return None,
        },
        _ => return None,
    };
    let (a, b) = (col_of(l, None)?, col_of(r, None)?);
    (a != b).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn conjuncts_and_null_branches_keep_columns_apart() {
        assert_eq!(
            apart_columns("CHECK ((entity0 <> entity1))"),
            vec![pair("entity0", "entity1")]
        );
        assert_eq!(
            apart_columns("CHECK (((a <> b) AND (b <> c) AND (x > 0)))"),
            vec![pair("a", "b"), pair("b", "c")]
        );
        assert_eq!(
            apart_columns("CHECK (((a IS NULL) OR (a <> b)))"),
            vec![pair("a", "b")]
        );
        assert_eq!(apart_columns("CHECK ((NOT (a = b)))"), vec![pair("a", "b")]);
    }

    #[test]
    fn other_shapes_keep_nothing_apart() {
        // An OR whose other branch lets the columns be equal.
        assert!(apart_columns("CHECK (((kind = 1) OR (a <> b)))").is_empty());
        assert!(apart_columns("CHECK (((c IS NULL) OR (a <> b)))").is_empty());
        // A literal, the same column, an order.
        assert!(apart_columns("CHECK ((a <> 3))").is_empty());
        assert!(apart_columns("CHECK ((a <> a))").is_empty());
        assert!(apart_columns("CHECK ((a < b))").is_empty());
    }
}
