//! Parameters: what each `$n` of a statement is bound to ([`binding`]: the
//! statement's text, repaired so it parses, and the column, LIMIT or OFFSET
//! each parameter meets) and the values plans are made with ([`values`]:
//! sampled from the data, per tenant, else a default of the parameter's type).
//! `explain` plans with them; `replay` will execute with them.

pub mod binding;
pub(crate) mod typing;
pub mod values;
