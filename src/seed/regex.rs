//! PostgreSQL regexes and LIKE patterns read for generation: the planner
//! gives a column whose CHECK asks for a pattern a [`rand_regex::Regex`]
//! (see [`crate::seed::row::shape::CheckDemands`]) when PostgreSQL and Rust read
//! the pattern alike, and leaves it to the server otherwise (see
//! `seed::server_check`).

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
    use crate::seed::row::rng::ValueRng;

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
