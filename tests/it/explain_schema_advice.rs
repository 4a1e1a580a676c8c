//! Advice written from the user's own schema (issue 48 §5).
