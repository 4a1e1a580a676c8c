//! What a file keeps of production's values (`--values`): everything
//! (`keep`), nothing (`none`: the counts and frequencies stay), or, by
//! default, their shape (`shape`).
//!
//! A shaped value is a token: as many characters as the value, each ASCII
//! letter or digit replaced by one of its own class (lowercase, uppercase,
//! digit), every other character kept (an e-mail's `@` and `.`, a code's
//! `-`). Tokens keep the order of the values they replace, so a histogram
//! is still a histogram: the values of one column, sorted (byte order), are
//! given in turn the smallest token of their shape greater than the one
//! before. That always succeeds (the values themselves are such a
//! sequence, and each smallest token is no greater than its value), and it
//! reveals no more than each value's shape and its rank among the column's
//! values. Equal values get equal tokens, in every list of the column
//! (most common values, histogram bounds, element lists, extended
//! statistics' value lists).
//!
//! Kept as they are, in every mode but `none`: values of numeric, date and
//! time, boolean and enum types (and arrays and ranges of them), which the
//! planner's comparisons need exactly and which say little on their own.

use std::collections::{BTreeMap, BTreeSet};

use crate::wire::stats::{ColumnStats, StatsFile, ValuesMode};

/// `pg_type.typcategory` of the types whose values are kept in mode
/// `shape`: numeric, date/time, boolean, enum, timespan.
pub(crate) fn kept_category(category: &str) -> bool {
    matches!(category, "N" | "D" | "B" | "E" | "T")
}

/// Rewrites every value list of `file` for `mode` (the capture reads them
/// whole; this is the one place any is dropped or replaced).
pub(crate) fn apply(file: &mut StatsFile, mode: ValuesMode) {
    file.values = mode;
    match mode {
        ValuesMode::Keep => {}
        ValuesMode::None => {
            for t in &mut file.tables {
                for c in &mut t.columns {
                    drop_values(c);
                }
                for e in &mut t.extended {
                    e.most_common_vals = None;
                    for c in &mut e.expression_stats {
                        drop_values(c);
                    }
                }
            }
        }
        ValuesMode::Shape => {
            for t in &mut file.tables {
                // One token map per column, from every list it appears in.
                let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                for c in t.columns.iter().filter(|c| !c.values_kept) {
                    let set = seen.entry(c.name.clone()).or_default();
                    for v in value_lists(c).flatten().flatten().flatten() {
                        set.insert(v.clone());
                    }
                }
                for e in &t.extended {
                    for row in e.most_common_vals.iter().flatten() {
                        for (name, v) in e.columns.iter().zip(row) {
                            if let (Some(set), Some(v)) = (seen.get_mut(name), v) {
                                set.insert(v.clone());
                            }
                        }
                    }
                }
                let maps: BTreeMap<String, BTreeMap<String, String>> = seen
                    .into_iter()
                    .map(|(name, values)| (name, tokens(values)))
                    .collect();
                for c in t.columns.iter_mut().filter(|c| !c.values_kept) {
                    let map = &maps[&c.name];
                    for list in value_lists_mut(c) {
                        replace(list, map);
                    }
                }
                for e in &mut t.extended {
                    let width = e.columns.len() + e.expressions.len();
                    // Expression values: a token map per position.
                    let mut exprs: Vec<BTreeSet<String>> = vec![BTreeSet::new(); width];
                    for row in e.most_common_vals.iter().flatten() {
                        for (i, v) in row.iter().enumerate().skip(e.columns.len()) {
                            if let (Some(set), Some(v)) = (exprs.get_mut(i), v) {
                                set.insert(v.clone());
                            }
                        }
                    }
                    let exprs: Vec<BTreeMap<String, String>> =
                        exprs.into_iter().map(tokens).collect();
                    for row in e.most_common_vals.iter_mut().flatten() {
                        for (i, v) in row.iter_mut().enumerate() {
                            let map = match e.columns.get(i) {
                                Some(name) => maps.get(name),
                                None => exprs.get(i),
                            };
                            if let (Some(map), Some(v)) = (map, v.as_mut()) {
                                *v = map[v.as_str()].clone();
                            }
                        }
                    }
                    for c in &mut e.expression_stats {
                        let map = tokens(
                            value_lists(c)
                                .flatten()
                                .flatten()
                                .flatten()
                                .cloned()
                                .collect(),
                        );
                        for list in value_lists_mut(c) {
                            replace(list, &map);
                        }
                    }
                }
            }
        }
    }
}

fn drop_values(c: &mut ColumnStats) {
    for list in value_lists_mut(c) {
        *list = None;
    }
}

fn value_lists(c: &ColumnStats) -> impl Iterator<Item = &Option<Vec<Option<String>>>> {
    [
        &c.most_common_vals,
        &c.histogram_bounds,
        &c.most_common_elems,
        &c.range_length_histogram,
        &c.range_bounds_histogram,
    ]
    .into_iter()
}

fn value_lists_mut(c: &mut ColumnStats) -> [&mut Option<Vec<Option<String>>>; 5] {
    [
        &mut c.most_common_vals,
        &mut c.histogram_bounds,
        &mut c.most_common_elems,
        &mut c.range_length_histogram,
        &mut c.range_bounds_histogram,
    ]
}

fn replace(list: &mut Option<Vec<Option<String>>>, map: &BTreeMap<String, String>) {
    for v in list.iter_mut().flatten().flatten() {
        *v = map[v.as_str()].clone();
    }
}

/// A position of a value's shape: a class, or a character kept as it is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    Lower,
    Upper,
    Digit,
    Literal(char),
}

impl Slot {
    fn of(c: char) -> Slot {
        if c.is_ascii_lowercase() || (!c.is_ascii() && c.is_alphabetic()) {
            Slot::Lower
        } else if c.is_ascii_uppercase() {
            Slot::Upper
        } else if c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric()) {
            Slot::Digit
        } else {
            Slot::Literal(c)
        }
    }

    fn range(self) -> (char, char) {
        match self {
            Slot::Lower => ('a', 'z'),
            Slot::Upper => ('A', 'Z'),
            Slot::Digit => ('0', '9'),
            Slot::Literal(c) => (c, c),
        }
    }

    fn accepts(self, c: char) -> bool {
        let (lo, hi) = self.range();
        (lo..=hi).contains(&c)
    }

    /// The smallest character of the slot greater than `c`.
    fn above(self, c: char) -> Option<char> {
        let (lo, hi) = self.range();
        if c < lo {
            Some(lo)
        } else if c < hi {
            char::from_u32(c as u32 + 1)
        } else {
            None
        }
    }
}

/// The token of each value: sorted values, each given the smallest token of
/// its shape above the previous token.
fn tokens(values: BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut prev: Option<Vec<char>> = None;
    for v in values {
        let shape: Vec<Slot> = v.chars().map(Slot::of).collect();
        let t = match &prev {
            None => smallest(&shape),
            Some(p) => above(&shape, p).unwrap_or_else(|| smallest(&shape)),
        };
        out.insert(v, t.iter().collect());
        prev = Some(t);
    }
    out
}

fn smallest(shape: &[Slot]) -> Vec<char> {
    shape.iter().map(|s| s.range().0).collect()
}

/// The smallest string of `shape` greater than `prev`, if there is one.
fn above(shape: &[Slot], prev: &[char]) -> Option<Vec<char>> {
    // How long a prefix of `prev` the shape can copy.
    let k = shape
        .iter()
        .zip(prev)
        .take_while(|(s, c)| s.accepts(**c))
        .count();
    if k == prev.len() && shape.len() > prev.len() {
        // `prev` itself, continued: the smallest string above it.
        let mut t = prev.to_vec();
        t.extend(smallest(&shape[prev.len()..]));
        return Some(t);
    }
    // Otherwise the first difference, as late as possible, goes up.
    for i in (0..=k.min(shape.len().saturating_sub(1))).rev() {
        let Some(&c) = prev.get(i) else { continue };
        if let Some(up) = shape[i].above(c) {
            let mut t = prev[..i].to_vec();
            t.push(up);
            t.extend(smallest(&shape[i + 1..]));
            return Some(t);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(values: &[&str]) -> Vec<String> {
        let map = tokens(values.iter().map(|s| s.to_string()).collect());
        values.iter().map(|v| map[*v].clone()).collect()
    }

    #[test]
    fn tokens_keep_length_classes_and_order() {
        let values = [
            "alice@example.com",
            "bob@example.org",
            "Carol-7",
            "carol",
            "zz",
            "zzz",
            "2024-A",
            "CANARY_SECRET_42",
            "ünïcode",
        ];
        let t = toks(&values);
        let mut sorted: Vec<&str> = values.to_vec();
        sorted.sort();
        let map: BTreeMap<&str, &String> = values.iter().copied().zip(&t).collect();
        for w in sorted.windows(2) {
            assert!(
                map[w[0]] < map[w[1]],
                "{} -> {} !< {} -> {}",
                w[0],
                map[w[0]],
                w[1],
                map[w[1]]
            );
        }
        for (v, tok) in values.iter().zip(&t) {
            assert_eq!(v.chars().count(), tok.chars().count(), "{v} -> {tok}");
            for (a, b) in v.chars().zip(tok.chars()) {
                assert_eq!(Slot::of(a), Slot::of(b), "{v} -> {tok}");
            }
            assert_ne!(v, tok);
        }
        assert_eq!(map["alice@example.com"], "aaaaa@aaaaaaa.aaa");
        assert!(
            !t.iter()
                .any(|x| x.contains("CANARY") || x.contains("SECRET"))
        );
    }

    #[test]
    fn a_value_whose_shape_leaves_no_room_still_gets_a_larger_token() {
        // "b" after "a0": the same first letter cannot follow, the next one can.
        assert_eq!(toks(&["a9", "b"]), ["a0", "b"]);
        assert_eq!(toks(&["a", "a-"]), ["a", "a-"]);
        assert_eq!(toks(&["x", "y", "z"]), ["a", "b", "c"]);
    }
}
