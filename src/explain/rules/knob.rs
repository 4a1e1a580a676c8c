//! A check's own settings, its knobs: declared in the check's file, set in
//! planck.toml under `[explain.checks.<id>]`, written by `planck init` from
//! the list of checks ([`super::ALL`]). A knob is one file's business: the
//! check declares it as a constant, lists it in [`super::Check::knobs`] and
//! reads it with [`super::Ctx::knob`]; settings (parsing, checking the name
//! and the type, the error at planck.toml:line) and the template read the
//! declarations, so neither names any one knob.
//!
//! ```text
//! const COST_RATIO: Knob<f64> = Knob::new(
//!     "cost_ratio",
//!     10.0,
//!     "A tenant plan this many times costlier than the admin plan is an RLS trap.",
//! );
//!
//! impl Check for RlsPolicy {
//!     fn knobs(&self) -> Vec<KnobSpec> {
//!         vec![COST_RATIO.spec()]
//!     }
//!     fn run(&self, ctx: &Ctx, out: &mut Vec<Finding>) {
//!         let ratio = ctx.knob(self.id(), &COST_RATIO);
//!         ...
//! ```

use std::collections::BTreeMap;

use crate::findings::CheckId;

/// A knob's value: a number, a whole number or a flag (what a threshold
/// needs; a knob taking text would add a variant here).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KnobValue {
    Number(f64),
    Count(u64),
    Flag(bool),
}

impl KnobValue {
    /// `v` read as a value of the same kind as `self` (a whole number is a
    /// number too, as serde reads `ratio = 10` into an f64), or None.
    pub fn like(self, v: &toml::Value) -> Option<KnobValue> {
        match (self, v) {
            (KnobValue::Number(_), toml::Value::Float(f)) if f.is_finite() => {
                Some(KnobValue::Number(*f))
            }
            (KnobValue::Number(_), toml::Value::Integer(i)) => Some(KnobValue::Number(*i as f64)),
            (KnobValue::Count(_), toml::Value::Integer(i)) if *i >= 0 => {
                Some(KnobValue::Count(*i as u64))
            }
            (KnobValue::Flag(_), toml::Value::Boolean(b)) => Some(KnobValue::Flag(*b)),
            _ => None,
        }
    }

    /// What a value of this kind is, in words (for an error).
    pub fn kind(self) -> &'static str {
        match self {
            KnobValue::Number(_) => "a number",
            KnobValue::Count(_) => "a whole number, 0 or more",
            KnobValue::Flag(_) => "true or false",
        }
    }

    /// The value as planck.toml writes it (`10.0`, `5`, `true`).
    pub fn toml(self) -> String {
        match self {
            KnobValue::Number(f) => format!("{f:?}"),
            KnobValue::Count(n) => n.to_string(),
            KnobValue::Flag(b) => b.to_string(),
        }
    }
}

/// The Rust type of a knob: `f64`, `u64` or `bool`.
pub trait KnobType: Copy {
    fn wrap(self) -> KnobValue;
    fn unwrap(v: KnobValue) -> Option<Self>;
}

impl KnobType for f64 {
    fn wrap(self) -> KnobValue {
        KnobValue::Number(self)
    }
    fn unwrap(v: KnobValue) -> Option<f64> {
        match v {
            KnobValue::Number(f) => Some(f),
            _ => None,
        }
    }
}

impl KnobType for u64 {
    fn wrap(self) -> KnobValue {
        KnobValue::Count(self)
    }
    fn unwrap(v: KnobValue) -> Option<u64> {
        match v {
            KnobValue::Count(n) => Some(n),
            _ => None,
        }
    }
}

impl KnobType for bool {
    fn wrap(self) -> KnobValue {
        KnobValue::Flag(self)
    }
    fn unwrap(v: KnobValue) -> Option<bool> {
        match v {
            KnobValue::Flag(b) => Some(b),
            _ => None,
        }
    }
}

/// One knob of a check, typed: its key under `[explain.checks.<id>]`, its
/// default and what it does (the comment `planck init` writes above it).
#[derive(Debug, Clone, Copy)]
pub struct Knob<T> {
    pub name: &'static str,
    pub default: T,
    pub doc: &'static str,
}

impl<T: KnobType> Knob<T> {
    pub const fn new(name: &'static str, default: T, doc: &'static str) -> Knob<T> {
        Knob { name, default, doc }
    }

    /// The knob as the settings and the template read it.
    pub fn spec(&self) -> KnobSpec {
        KnobSpec {
            name: self.name,
            default: self.default.wrap(),
            doc: self.doc,
        }
    }
}

/// A knob without its type ([`super::Check::knobs`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnobSpec {
    pub name: &'static str,
    pub default: KnobValue,
    pub doc: &'static str,
}

/// The knobs planck.toml set, checked against the declarations (by
/// `settings::explain`): a knob not set here is at its default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckKnobs(BTreeMap<(CheckId, &'static str), KnobValue>);

impl CheckKnobs {
    pub const fn new() -> CheckKnobs {
        CheckKnobs(BTreeMap::new())
    }

    pub fn set(&mut self, check: CheckId, name: &'static str, v: KnobValue) {
        self.0.insert((check, name), v);
    }

    pub fn get(&self, check: CheckId, name: &str) -> Option<KnobValue> {
        self.0
            .iter()
            .find(|((c, n), _)| *c == check && *n == name)
            .map(|(_, v)| *v)
    }

    /// `check`'s `knob`: as set, else its default.
    pub fn value<T: KnobType>(&self, check: CheckId, knob: &Knob<T>) -> T {
        self.get(check, knob.name)
            .and_then(T::unwrap)
            .unwrap_or(knob.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATIO: Knob<f64> = Knob::new("ratio", 2.0, "doc");
    const ROWS: Knob<u64> = Knob::new("rows", 5, "doc");

    #[test]
    fn a_knob_reads_as_set_else_its_default_and_values_keep_their_kind() {
        let mut k = CheckKnobs::new();
        assert_eq!(k.value(CheckId::SeqScan, &RATIO), 2.0);
        k.set(CheckId::SeqScan, "ratio", KnobValue::Number(3.5));
        assert_eq!(k.value(CheckId::SeqScan, &RATIO), 3.5);
        assert_eq!(k.value(CheckId::RlsPolicy, &RATIO), 2.0);
        assert_eq!(k.value(CheckId::SeqScan, &ROWS), 5);

        let n = RATIO.spec().default;
        assert_eq!(
            n.like(&toml::Value::Integer(10)),
            Some(KnobValue::Number(10.0))
        );
        assert_eq!(n.like(&toml::Value::String("10".into())), None);
        let c = ROWS.spec().default;
        assert_eq!(c.like(&toml::Value::Integer(-1)), None);
        assert_eq!(c.like(&toml::Value::Float(1.5)), None);
        assert_eq!(
            (n.toml(), c.toml(), KnobValue::Flag(true).toml()),
            ("2.0".into(), "5".into(), "true".into())
        );
    }
}
