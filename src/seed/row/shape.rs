//! Text shapes and NULL patterns that CHECK constraints ask for, applied on
//! top of a column's generated value (issue 9, point 1, native forms).
//!
//! A column's generator knows its type, name and bounds; some CHECKs ask
//! for more than that: a regex (`code ~ '^[A-Z]{3}-[0-9]{4}$'`), lower case
//! (`email = lower(email)`), no surrounding blanks (`name = btrim(name)`),
//! not empty (`length(btrim(name)) > 0`, `name <> ''`), or a NULL pattern
//! over several columns (`(a IS NOT NULL) <> (b IS NOT NULL)`,
//! `num_nonnulls(a, b, c) = 1`, `a IS NULL OR b IS NULL`,
//! `(a IS NULL) = (b IS NULL)`). A [`CheckDemands`] holds what the column's CHECKs
//! ask, and `row::eval::apply_shape` turns the generated value into one that satisfies
//! them, from the row's own hash: deterministic like every generator.
//!
//! Regexes are compiled for generation in `seed::regex`, only in
//! the subset whose meaning PostgreSQL and Rust share; anything else is left
//! to the server (see `seed::server_check`).

use std::sync::Arc;

use crate::seed::row::generate::Val;
use crate::seed::row::rng::{self, ValueRng};
use crate::seed::row::solved::Solved;

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
pub struct CheckDemands {
    pub regex: Option<Arc<rand_regex::Regex>>,
    /// The regex's source, for messages.
    pub pattern: Option<String>,
    pub lower: bool,
    pub trim: bool,
    pub nonempty: bool,
    /// varchar(n)/char(n) or `char_length(col) <= n`.
    pub max_len: Option<usize>,
    /// `length(col) >= n` (`char_length`, `octet_length`, `BETWEEN`): a
    /// shorter value is extended.
    pub min_len: Option<usize>,
    /// `max_len` counts bytes (`octet_length(col) <= n`).
    pub len_bytes: bool,
    pub nulls: Option<NullGroup>,
    /// Values a CHECK excludes (`col <> 0`): a draw that hits one moves off it.
    pub not_eq: Vec<Val>,
    /// Always NULL (koji's `... OR (active IS NOT NULL AND revoker_id IS NULL)`).
    pub null: bool,
    /// A CHECK solved row by row that decides this column (see
    /// `seed::check_solve`): applied last.
    pub solved: Option<Arc<Solved>>,
    /// The column is a unique key alone: regex draws favour long values.
    pub unique: bool,
}

impl CheckDemands {
    pub fn is_empty(&self) -> bool {
        self.regex.is_none()
            && !self.lower
            && !self.trim
            && !self.nonempty
            && self.nulls.is_none()
            && self.not_eq.is_empty()
            && !self.null
            && self.solved.is_none()
            && self.min_len.is_none()
            && !self.len_bytes
    }
}

/// Whether the group decides that member `g.index` is NULL in this row.
pub(crate) fn null_in_group(g: &NullGroup, seed: u64, row: u64) -> bool {
    let h = rng::mix(rng::mix(seed ^ g.key) ^ row);
    match g.rule {
        NullRule::ExactlyOne => rng::below(h, g.size as u64) as usize != g.index,
        // One in (size + 1) rows has none set.
        NullRule::AtMostOne => rng::below(h, g.size as u64 + 1) as usize != g.index,
        NullRule::AllOrNone => rng::unit(h) < 0.1,
    }
}
pub(crate) fn shape_text(s: &CheckDemands, mut text: String, h: u64) -> String {
    if let Some(re) = &s.regex {
        let mut r = ValueRng::new(rng::mix(h ^ 0x0072_6567_6578));
        let mut best: Option<String> = None;
        // A draw longer than the column allows is drawn again (a few times;
        // more with a minimum length, which a pattern's optional parts
        // reach only together: one draw in 16 for four of them).
        let tries = if s.min_len.is_some() { 256 } else { 8 };
        for _ in 0..tries {
            let cand: String = rand::RngExt::sample(&mut r, &**re);
            let fits = s.max_len.is_none_or(|m| len_of(s, &cand) <= m)
                && s.min_len.is_none_or(|m| cand.chars().count() >= m);
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
        // A regex decides the value: case and blanks are the regex's.
        let mut v = best.unwrap_or_default();
        after_unanchored(s, &mut v, &text);
        return v;
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
    if let Some(m) = s.min_len
        && text.chars().count() < m
    {
        lengthen(&mut text, m, h);
    }
    if let Some(m) = s.max_len
        && len_of(s, &text) > m
    {
        shorten(&mut text, m, s.len_bytes);
        // A cut that leaves a blank at the end: trimmed text ends in a letter.
        if s.trim && text.ends_with(' ') {
            text.pop();
            text.push('x');
        }
    }
    text
}

/// A pattern with no end anchor matches whatever follows a match: the
/// generator's own value goes after the draw (its end, as much as the
/// column's length leaves room for), so the row number a unique key ends
/// in and the column's variety survive the regex. `source ~* '^https?://'`
/// in a unique `(image_id, source)` drew `http://` or `https://` alone.
fn after_unanchored(s: &CheckDemands, v: &mut String, text: &str) {
    if s.pattern.as_deref().is_none_or(|p| p.contains('$')) || text.is_empty() {
        return;
    }
    let room = s
        .max_len
        .map_or(usize::MAX, |m| m.saturating_sub(len_of(s, v)));
    let n = text.chars().count();
    let tail: String = text.chars().skip(n.saturating_sub(room)).collect();
    let before = v.len();
    v.push_str(&tail);
    if s.max_len.is_some_and(|m| len_of(s, v) > m) {
        v.truncate(before);
    }
}

/// The length the column's bounds count: characters, or bytes.
fn len_of(s: &CheckDemands, text: &str) -> usize {
    if s.len_bytes {
        text.len()
    } else {
        text.chars().count()
    }
}

/// `text` cut to `max` characters (bytes: at a character's boundary).
fn shorten(text: &mut String, max: usize, bytes: bool) {
    let at = if bytes {
        (0..=max.min(text.len()))
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0)
    } else {
        text.char_indices().nth(max).map_or(text.len(), |(i, _)| i)
    };
    text.truncate(at);
}

/// `text` extended with lorem words to at least `min` characters (ASCII, so
/// bytes too), in the text's own style: an email's local part before its
/// `@` (words joined by dots), a slug or any text without blanks joined by
/// `-`, other text by blanks. The words are letters only, so a value that
/// ends in a unique row number stays unique. Drawn from the row's hash `h`.
pub(crate) fn lengthen(text: &mut String, min: usize, h: u64) {
    use crate::seed::row::generate::WORDS;
    let mut r = ValueRng::new(rng::mix(h ^ 0x0000_6c65_6e67_7468));
    let (at, sep) = match text.find('@') {
        Some(i) => (i, '.'),
        None if !text.is_empty() && !text.contains(' ') => (text.len(), '-'),
        None => (text.len(), ' '),
    };
    let mut pad = String::new();
    let have = text.chars().count();
    while have + pad.len() < min {
        if !(pad.is_empty() && at == 0) {
            pad.push(sep);
        }
        pad.push_str(WORDS[r.below(WORDS.len() as u64) as usize]);
    }
    text.insert_str(at, &pad);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demands(min: Option<usize>, max: Option<usize>) -> CheckDemands {
        CheckDemands {
            min_len: min,
            max_len: max,
            ..CheckDemands::default()
        }
    }

    /// Issue 46: a pattern with no end anchor keeps the generator's value
    /// (its end, when the column is short) after the draw; one anchored at
    /// its end decides the whole value.
    #[test]
    fn an_unanchored_pattern_keeps_the_value_after_its_draw() {
        let with = |p: &str, max_len| CheckDemands {
            regex: crate::seed::regex::native_regex(p, true, max_len).map(std::sync::Arc::new),
            pattern: Some(p.to_string()),
            max_len,
            ..CheckDemands::default()
        };
        let url = with("^https?://", None);
        let out = shape_text(&url, "lorem ipsum 1z".into(), 7);
        // `~*`: the draw's case is the regex's.
        assert!(
            out.to_lowercase().starts_with("http") && out.ends_with("://lorem ipsum 1z"),
            "{out:?}"
        );
        let short = with("^https?://", Some(11));
        let out = shape_text(&short, "lorem ipsum 1z".into(), 7);
        assert!(out.ends_with("1z") && out.chars().count() <= 11, "{out:?}");
        let anchored = with("^https?://[a-z]+$", None);
        let out = shape_text(&anchored, "lorem ipsum 1z".into(), 7);
        assert!(!out.contains("1z"), "{out:?}");
    }

    /// Issue 46: a text shorter than a CHECK's minimum grows in its own
    /// style, and is cut to the maximum.
    #[test]
    fn text_grows_to_its_minimum_in_its_own_style() {
        let s = demands(Some(30), Some(40));
        for (text, sep) in [
            ("ann-7@example.com", '.'),
            ("red-fox", '-'),
            ("lorem ipsum", ' '),
            ("", ' '),
        ] {
            for h in 0..50 {
                let out = shape_text(&s, text.to_string(), h);
                let n = out.chars().count();
                assert!((30..=40).contains(&n), "{out:?}");
                if let Some((local, host)) = text.split_once('@') {
                    assert!(out.ends_with(&format!("@{host}")), "{out:?}");
                    assert!(out.starts_with(&format!("{local}{sep}")), "{out:?}");
                } else if !text.is_empty() {
                    assert!(out.starts_with(&format!("{text}{sep}")), "{out:?}");
                }
            }
        }
        let long = "x".repeat(100);
        assert_eq!(shape_text(&s, long, 1).len(), 40);
        // Bytes: cut at a character's boundary.
        let b = CheckDemands {
            len_bytes: true,
            ..demands(None, Some(5))
        };
        assert_eq!(shape_text(&b, "aéééé".into(), 1), "aéé");
    }
}
