//! `--slo p95=300ms@16`: a latency objective at one step of the ladder.

use super::report::ReplayReport;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    /// 50, 95, 99 or 99.9.
    pub percentile: f64,
    pub max_ms: f64,
    pub concurrency: u32,
}

impl Slo {
    /// Parses `p95=300ms@16` (units `us`, `ms`, `s`; p50, p95, p99, p999).
    pub fn parse(text: &str) -> Result<Slo, String> {
        let bad = || format!("--slo {text}: expected pNN=<time>@<clients>, e.g. p95=300ms@16");
        let (p, rest) = text.trim().split_once('=').ok_or_else(bad)?;
        let (t, c) = rest.split_once('@').ok_or_else(bad)?;
        let percentile = match p.trim().to_lowercase().as_str() {
            "p50" => 50.0,
            "p95" => 95.0,
            "p99" => 99.0,
            "p999" | "p99.9" => 99.9,
            _ => return Err(bad()),
        };
        let t = t.trim();
        let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
            (n, 1.0)
        } else if let Some(n) = t.strip_suffix("us") {
            (n, 0.001)
        } else if let Some(n) = t.strip_suffix('s') {
            (n, 1000.0)
        } else {
            return Err(bad());
        };
        let max_ms = num.trim().parse::<f64>().map_err(|_| bad())? * scale;
        let concurrency = c.trim().parse::<u32>().map_err(|_| bad())?;
        if max_ms.is_nan() || max_ms <= 0.0 || concurrency == 0 {
            return Err(bad());
        }
        Ok(Slo {
            percentile,
            max_ms,
            concurrency,
        })
    }

    /// `None` when the step did not run; `Some(true)` when the objective held.
    pub fn met(&self, r: &ReplayReport) -> Option<(bool, f64)> {
        let s = r.steps.iter().find(|s| s.concurrency == self.concurrency)?;
        let v = if self.percentile == 50.0 {
            s.p50_ms
        } else if self.percentile == 95.0 {
            s.p95_ms
        } else if self.percentile == 99.0 {
            s.p99_ms
        } else {
            s.p999_ms
        };
        Some((v <= self.max_ms, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_form() {
        assert_eq!(
            Slo::parse("p95=300ms@16").unwrap(),
            Slo {
                percentile: 95.0,
                max_ms: 300.0,
                concurrency: 16
            }
        );
        assert_eq!(Slo::parse("p99=1.5s@4").unwrap().max_ms, 1500.0);
        assert!(Slo::parse("p95=300@16").is_err());
        assert!(Slo::parse("p42=3ms@1").is_err());
        assert!(Slo::parse("p95=3ms@0").is_err());
    }
}
