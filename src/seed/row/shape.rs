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
