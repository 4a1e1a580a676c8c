//! Text shapes and NULL patterns that CHECK constraints ask for, applied on
//! top of a column's generated value (issue 9, point 1, native forms).
//!
//! A column's generator knows its type, name and bounds; some CHECKs ask
//! for more than that: a regex (`code ~ '^[A-Z]{3}-[0-9]{4}$'`), lower case
//! (`email = lower(email)`), no surrounding blanks (`name = btrim(name)`),
//! not empty (`length(btrim(name)) > 0`, `name <> ''`), or a NULL pattern
//! over several columns (`(a IS NOT NULL) <> (b IS NOT NULL)`,
//! `num_nonnulls(a, b, c) = 1`, `a IS NULL OR b IS NULL`,
//! `(a IS NULL) = (b IS NULL)`). A [`Shape`] holds what the column's CHECKs
//! ask, and [`apply`] turns the generated value into one that satisfies
//! them, from the row's own hash: deterministic like every generator.
//!
//! Regexes are generated with `rand_regex` (over `regex-syntax`), only in the
//! subset whose meaning PostgreSQL and Rust share (see [`native_regex`]);
//! anything else is left to the server (see [`crate::seed::server_check`]).

use std::sync::Arc;

use crate::seed::generate::{Gen, Val};
use crate::seed::layout::{Plan, RowCtx};
use crate::seed::rng::{self, ValueRng};

/// How a group of columns shares NULLs, row by row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullRule {
    /// Exactly one of the group is not NULL.
    ExactlyOne,
    /// At most one of the group is not NULL.
    AtMostOne,
    /// All NULL or none.
    AllOrNone,
}

/// A column's place in a NULL group.
#[derive(Debug, Clone, PartialEq)]
pub struct NullGroup {
    pub rule: NullRule,
    /// Identifies the group (the same for every member).
    pub key: u64,
    pub index: usize,
    pub size: usize,
}

/// What a column's CHECKs ask of its values beyond the generator's bounds.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    pub regex: Option<Arc<rand_regex::Regex>>,
    /// The regex's source, for messages.
    pub pattern: Option<String>,
    pub lower: bool,
    pub trim: bool,
    pub nonempty: bool,
    /// varchar(n)/char(n) or `char_length(col) <= n`.
    pub max_len: Option<usize>,
    pub nulls: Option<NullGroup>,
    /// Values a CHECK excludes (`col <> 0`): a draw that hits one moves off it.
    pub not_eq: Vec<Val>,
    /// Always NULL (koji's `... OR (active IS NOT NULL AND revoker_id IS NULL)`).
    pub null: bool,
    /// A CHECK solved row by row that decides this column (see
    /// [`crate::seed::check_solve`]): applied last.
    pub solved: Option<Arc<crate::seed::check_solve::Solved>>,
    /// The column is a unique key alone: regex draws favour long values.
    pub unique: bool,
}

impl Shape {
    pub fn is_empty(&self) -> bool {
        self.regex.is_none()
            && !self.lower
            && !self.trim
            && !self.nonempty
            && self.nulls.is_none()
            && self.not_eq.is_empty()
            && !self.null
            && self.solved.is_none()
    }
}

/// Whether the group decides that member `g.index` is NULL in this row.
fn null_in_group(g: &NullGroup, seed: u64, row: u64) -> bool {
    let h = rng::mix(rng::mix(seed ^ g.key) ^ row);
    match g.rule {
        NullRule::ExactlyOne => rng::below(h, g.size as u64) as usize != g.index,
        // One in (size + 1) rows has none set.
        NullRule::AtMostOne => rng::below(h, g.size as u64 + 1) as usize != g.index,
        NullRule::AllOrNone => rng::unit(h) < 0.1,
    }
}

/// Applies column `c`'s shape to its generated value `v` (`h`: the row's
/// hash, `at`: the server's attempt, see [`crate::seed::server_check`]).
pub fn apply(plan: &Plan, t: usize, c: usize, ctx: &RowCtx, h: u64, v: Val, at: u8) -> Val {
    let Some(s) = plan.tables[t].cols[c].shape.as_deref() else {
        return v;
    };
    if s.null {
        return Val::Null;
    }
    let mut v = v;
    if let Some(g) = &s.nulls {
        if null_in_group(g, plan.seed, ctx.row) {
            return Val::Null;
        }
        if v == Val::Null {
            // Set in this row: a nullable generator's inner value.
            if let Gen::Nullable { inner, .. } = &plan.tables[t].cols[c].generator {
                v = inner.eval(plan, t, c, ctx);
            }
        }
    }
    let mut v = match v {
        Val::Text(text) => Val::Text(shape_text(s, text, h)),
        other => other,
    };
    if let Some(sv) = &s.solved {
        v = sv.apply(plan, t, c, ctx, h, v, at);
    }
    // Off an excluded value: the next integer, or one more character.
    for _ in 0..s.not_eq.len() + 1 {
        if !s.not_eq.contains(&v) {
            break;
        }
        v = match v {
            Val::Int(i) => Val::Int(if i == i64::MAX { i - 1 } else { i + 1 }),
            Val::Text(mut t) => {
                t.push('x');
                Val::Text(t)
            }
            other => other,
        };
    }
    v
}

fn shape_text(s: &Shape, mut text: String, h: u64) -> String {
    if let Some(re) = &s.regex {
        let mut r = ValueRng::new(rng::mix(h ^ 0x0072_6567_6578));
        let mut best: Option<String> = None;
        // A draw longer than the column allows is drawn again (a few times).
        for _ in 0..8 {
            let cand: String = rand::RngExt::sample(&mut r, &**re);
            let fits = s.max_len.is_none_or(|m| cand.chars().count() <= m);
            // A unique column keeps the longest draw that fits: short
            // draws repeat (supabase-auth's `identifier`, unique, matches
            // `^[a-z0-9][a-z0-9:-]{0,48}[a-z0-9]$`: one row in 49 is two
            // characters long, 1,296 values for 40 rows of 2,000).
            if fits && s.unique {
                let longer = best.as_ref().is_none_or(|b| {
                    s.max_len.is_some_and(|m| b.chars().count() > m)
                        || cand.chars().count() > b.chars().count()
                });
                if longer {
                    best = Some(cand);
                }
                continue;
            }
            if fits {
                best = Some(cand);
                break;
            }
            if best
                .as_ref()
                .is_none_or(|b| cand.chars().count() < b.chars().count())
            {
                best = Some(cand);
            }
        }
        // A regex decides the whole value: case and blanks are the regex's.
        return best.unwrap_or_default();
    }
    if s.lower {
        text = text.to_lowercase();
    }
    if s.trim {
        text = text.trim_matches(|c: char| c == ' ').to_string();
    }
    if s.nonempty && text.trim_matches(' ').is_empty() {
        text = "x".to_string();
    }
    text
}

/// A PostgreSQL regex (`~`, or `~*` when `icase`) compiled for generation,
/// when its meaning is the same in Rust: anchors, classes, POSIX brackets,
/// quantifiers, alternation, groups. Refused (None): back-references,
/// lookaround and other `(?...)` groups, embedded options, `***` directors,
/// the word-boundary and anchor escapes PostgreSQL alone has (`\m \M \y \Y
/// \A \Z`), octal/hex escapes, and anything `regex-syntax` rejects. `\d \w
/// \s` stand for their ASCII classes (PostgreSQL's are locale-dependent).
pub fn native_regex(
    pattern: &str,
    icase: bool,
    max_len: Option<usize>,
) -> Option<rand_regex::Regex> {
    if pattern.starts_with("***") || pattern.contains("(?") || pattern.contains("[[.") {
        return None;
    }
    let mut out = String::new();
    let mut cs = pattern.chars().peekable();
    let mut in_bracket = false;
    while let Some(ch) = cs.next() {
        match ch {
            '\\' => {
                let e = cs.next()?;
                match e {
                    'd' if !in_bracket => out.push_str("[0-9]"),
                    'w' if !in_bracket => out.push_str("[0-9A-Za-z_]"),
                    's' if !in_bracket => out.push_str("[ \\t\\n\\r]"),
                    'd' => out.push_str("0-9"),
                    'w' => out.push_str("0-9A-Za-z_"),
                    's' => out.push_str(" \\t\\n\\r"),
                    // Escaped punctuation means itself in both dialects.
                    e if e.is_ascii_punctuation() => {
                        out.push('\\');
                        out.push(e);
                    }
                    'n' | 't' | 'r' => {
                        out.push('\\');
                        out.push(e);
                    }
                    _ => return None,
                }
            }
            '[' if !in_bracket => {
                in_bracket = true;
                out.push('[');
                // `[]a]` and `[^]a]`: a leading `]` is a member.
                if cs.peek() == Some(&'^') {
                    out.push(cs.next()?);
                }
                if cs.peek() == Some(&']') {
                    cs.next();
                    out.push_str("\\]");
                }
            }
            '[' if cs.peek() == Some(&':') => {
                // A POSIX class inside a bracket, copied whole.
                out.push('[');
                for c2 in cs.by_ref() {
                    out.push(c2);
                    if c2 == ']' {
                        break;
                    }
                }
            }
            '[' => out.push_str("\\["),
            ']' if in_bracket => {
                in_bracket = false;
                out.push(']');
            }
            // In a bracket, Rust's class syntax reads `&&`, `--`, `~~` as operators.
            '&' | '~' | '-' if in_bracket && cs.peek() == Some(&ch) => {
                out.push('\\');
                out.push(ch);
            }
            // PostgreSQL's `.` also matches a newline: printable ASCII is a subset.
            '.' if !in_bracket => out.push_str("[\\x20-\\x7e]"),
            c => out.push(c),
        }
    }
    if in_bracket {
        return None;
    }
    let mut pb = regex_syntax::ParserBuilder::new();
    pb.case_insensitive(icase).utf8(true);
    let hir = pb.build().parse(&out).ok()?;
    let cap = max_len.map_or(u32::MAX, |m| m.min(u32::MAX as usize) as u32);
    rand_regex::Regex::with_hir(unanchored(printable(&hir, cap)?)?, 8).ok()
}

/// `hir` with every class narrowed to printable ASCII: what is drawn stays
/// inside the class (so PostgreSQL matches it too) and within any database
/// encoding, whatever Unicode classes mean under the server's locale. None
/// when a class holds no printable ASCII.
fn printable(hir: &regex_syntax::hir::Hir, cap: u32) -> Option<regex_syntax::hir::Hir> {
    use regex_syntax::hir::{
        Capture, Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Repetition,
    };
    Some(match hir.kind() {
        HirKind::Class(Class::Unicode(u)) => {
            let mut c = u.clone();
            c.intersect(&ClassUnicode::new([ClassUnicodeRange::new(' ', '~')]));
            if c.ranges().is_empty() {
                return None;
            }
            Hir::class(Class::Unicode(c))
        }
        HirKind::Class(Class::Bytes(_)) => return None,
        // No repetition longer than the column holds (a varchar(12) under `{1,100}`).
        HirKind::Repetition(r) if r.min > cap => return None,
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            min: r.min,
            // Unbounded (`+`, `*`): eight more at most, as rand_regex would.
            max: Some(r.max.unwrap_or(r.min.saturating_add(8)).min(cap.max(r.min))),
            greedy: r.greedy,
            sub: Box::new(printable(&r.sub, cap)?),
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            index: c.index,
            name: c.name.clone(),
            sub: Box::new(printable(&c.sub, cap)?),
        }),
        HirKind::Concat(v) => {
            Hir::concat(v.iter().map(|h| printable(h, cap)).collect::<Option<_>>()?)
        }
        HirKind::Alternation(v) => {
            Hir::alternation(v.iter().map(|h| printable(h, cap)).collect::<Option<_>>()?)
        }
        _ => hir.clone(),
    })
}

/// `hir` without its leading `^` and trailing `$` (at the top, in each
/// top-level branch, or in a group around it all), which generation cannot
/// draw; None when an anchor sits anywhere else. A string that matches the
/// rest whole matches the pattern anchored or not (`~` searches).
fn unanchored(hir: regex_syntax::hir::Hir) -> Option<regex_syntax::hir::Hir> {
    use regex_syntax::hir::{Capture, Hir, HirKind, Look};
    fn has_look(h: &Hir) -> bool {
        match h.kind() {
            HirKind::Look(_) => true,
            HirKind::Repetition(r) => has_look(&r.sub),
            HirKind::Capture(c) => has_look(&c.sub),
            HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(has_look),
            _ => false,
        }
    }
    match hir.kind() {
        HirKind::Concat(v) => {
            let mut v = v.clone();
            if v.first()
                .is_some_and(|h| matches!(h.kind(), HirKind::Look(Look::Start)))
            {
                v.remove(0);
            }
            if v.last()
                .is_some_and(|h| matches!(h.kind(), HirKind::Look(Look::End)))
            {
                v.pop();
            }
            (!v.iter().any(has_look)).then(|| Hir::concat(v))
        }
        HirKind::Alternation(v) => {
            let v: Option<Vec<Hir>> = v.iter().cloned().map(unanchored).collect();
            Some(Hir::alternation(v?))
        }
        HirKind::Capture(c) => Some(Hir::capture(Capture {
            index: c.index,
            name: c.name.clone(),
            sub: Box::new(unanchored((*c.sub).clone())?),
        })),
        HirKind::Look(Look::Start | Look::End) => Some(Hir::empty()),
        _ => (!has_look(&hir)).then_some(hir),
    }
}

/// A LIKE pattern (no escapes) as a regex.
pub fn like_regex(pattern: &str) -> Option<String> {
    if pattern.contains('\\') {
        return None;
    }
    let mut out = String::from("^");
    for ch in pattern.chars() {
        match ch {
            '%' => out.push_str(".*"),
            '_' => out.push('.'),
            c if c.is_ascii_alphanumeric() || c == ' ' => out.push(c),
            c if c.is_ascii() => {
                out.push('\\');
                out.push(c);
            }
            _ => return None,
        }
    }
    out.push('$');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(re: &rand_regex::Regex, n: u64) -> Vec<String> {
        (0..n)
            .map(|i| rand::RngExt::sample(&mut ValueRng::new(i), re))
            .collect()
    }

    #[test]
    fn the_shared_subset_compiles_and_matches_in_rust() {
        for (p, icase) in [
            ("^[a-z0-9_]{1,100}$", false),
            ("^[[:alpha:]][[:alnum:]_]*$", false),
            ("^(foo|bar)-\\d{3}$", false),
            ("^[A-Z]{3}$", true),
            ("^.+@.+\\..+$", false),
            ("^[^@ ]+@[^@ ]+$", false),
            ("[0-9]", false),
        ] {
            let re = native_regex(p, icase, None).unwrap_or_else(|| panic!("{p} refused"));
            let check = regex::RegexBuilder::new(p)
                .case_insensitive(icase)
                .build()
                .unwrap();
            for s in sample(&re, 50) {
                assert!(check.is_match(&s), "{s:?} does not match {p}");
                assert!(s.is_ascii(), "{s:?}");
            }
        }
    }

    #[test]
    fn what_postgres_reads_otherwise_is_refused() {
        for p in [
            "^(a)\\1$",
            "\\mword\\M",
            "\\yx",
            "(?i)abc",
            "***=a.b",
            "^a(?=b)",
            "[[.space.]]",
            "\\Aabc\\Z",
        ] {
            assert!(native_regex(p, false, None).is_none(), "{p} accepted");
        }
    }

    #[test]
    fn like_prefixes() {
        assert_eq!(like_regex("ab_%").as_deref(), Some("^ab..*$"));
        assert_eq!(like_regex("a\\%"), None);
    }
}
