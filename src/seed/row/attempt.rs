//! The attempts of a row whose CHECKs the server decides (see
//! `seed::server_check`): attempt 0 is the row's first draw, later
//! ones redraw its non-key columns, the last sets the redrawn nullable
//! columns to NULL. [`Attempts`] holds the attempt the server accepted for
//! each row of a range, for the encoders on the workers.

/// Attempts with redrawn values before the NULL resort.
pub const ATTEMPTS: u8 = 32;
/// The last resort: the redrawn nullable columns are NULL.
pub const NULL_ATTEMPT: u8 = ATTEMPTS;

/// The attempt chosen for each row of a range.
#[derive(Debug, Clone)]
pub struct Attempts {
    pub start: u64,
    pub of_row: Vec<u8>,
}

impl Attempts {
    /// The attempt accepted for `row` (0 for a row outside the range).
    pub fn get(&self, row: u64) -> u8 {
        self.of_row
            .get((row - self.start) as usize)
            .copied()
            .unwrap_or(0)
    }
}
