//! Reading the ladder: whether throughput still grows, plateaus or goes
//! backwards at each step, judged against the run's own noise, and the
//! Universal Scalability Law fitted to the closed-loop steps.
//!
//! A plateau is serialisation (the law's sigma); throughput that goes
//! backwards is coherency cost (kappa): contention, not saturation. A step
//! where planck itself used nearly all the CPU its workers could have is
//! "client-bound": it says nothing about the server.

pub use crate::wire::replay::Scaling;

/// What the verdict needs of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPoint {
    /// N: min(clients, pool).
    pub concurrency: u32,
    /// Units per second over the step.
    pub throughput: f64,
    /// Units completed in each whole second of the step (the noise).
    pub per_second: Vec<f64>,
    /// planck's CPU time over the wall time its worker threads could use (0..1).
    pub client_cpu_share: f64,
}

/// A share of its threads' CPU at which planck is the bottleneck.
pub const CLIENT_BOUND_SHARE: f64 = 0.9;

/// The standard error of a step's mean throughput, from its per-second counts
/// (at least 2 % of the mean: a one-second step has no spread to read).
fn std_error(p: &StepPoint) -> f64 {
    let n = p.per_second.len();
    let floor = 0.02 * p.throughput.abs();
    if n < 2 {
        return floor;
    }
    let mean = p.per_second.iter().sum::<f64>() / n as f64;
    let var = p.per_second.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (var.sqrt() / (n as f64).sqrt()).max(floor)
}

/// Whether `a` and `b` differ by more than the noise (two standard errors
/// of their difference).
fn beyond_noise(a: &StepPoint, b: &StepPoint) -> bool {
    let se = (std_error(a).powi(2) + std_error(b).powi(2)).sqrt();
    (a.throughput - b.throughput).abs() > 2.0 * se
}

/// Each step's shape: the first step grows from nothing; a later one grows
/// when it beats the best step before it beyond the noise, goes backwards
/// when it falls below that best beyond the noise, else plateaus.
pub fn step_shapes(steps: &[StepPoint]) -> Vec<Scaling> {
    let mut out = Vec::with_capacity(steps.len());
    let mut best: Option<&StepPoint> = None;
    for p in steps {
        let shape = if p.client_cpu_share >= CLIENT_BOUND_SHARE {
            Scaling::ClientBound
        } else {
            match best {
                None => Scaling::Growing,
                Some(b) if !beyond_noise(p, b) => Scaling::Plateau,
                Some(b) if p.throughput > b.throughput => Scaling::Growing,
                Some(_) => Scaling::Backwards,
            }
        };
        out.push(shape);
        if best.is_none_or(|b| p.throughput > b.throughput) {
            best = Some(p);
        }
    }
    out
}

/// The whole ladder's shape: client-bound when a step past the first was,
/// backwards when a step fell below the peak beyond noise, plateau when
/// steps after the peak stayed within noise of it, else growing.
pub fn run_shape(steps: &[StepPoint], shapes: &[Scaling]) -> Scaling {
    if shapes.iter().skip(1).any(|s| *s == Scaling::ClientBound) {
        return Scaling::ClientBound;
    }
    if shapes.contains(&Scaling::Backwards) {
        return Scaling::Backwards;
    }
    let peak = peak_index(steps);
    match peak {
        Some(i) if i + 1 < steps.len() => Scaling::Plateau,
        _ if shapes.last() == Some(&Scaling::Plateau) => Scaling::Plateau,
        _ => Scaling::Growing,
    }
}

/// The step of the highest throughput.
pub fn peak_index(steps: &[StepPoint]) -> Option<usize> {
    steps
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.throughput.total_cmp(&b.1.throughput))
        .map(|(i, _)| i)
}

pub use crate::wire::replay::Usl;

/// The fewest closed-loop steps a fit is made from.
pub const USL_MIN_STEPS: usize = 5;

/// Fits the law by least squares on N/X = a + b (N-1) + c N (N-1), the
/// law's linear form (a = 1/lambda, b = sigma/lambda, c = kappa/lambda).
/// A coefficient the data would make negative is fixed at 0 and the rest
/// refitted. `None` with fewer than [`USL_MIN_STEPS`] points or no throughput.
pub fn fit_usl(points: &[(f64, f64)]) -> Option<Usl> {
    if points.len() < USL_MIN_STEPS || points.iter().any(|(n, x)| *x <= 0.0 || *n < 1.0) {
        return None;
    }
    let rows: Vec<([f64; 3], f64)> = points
        .iter()
        .map(|&(n, x)| ([1.0, n - 1.0, n * (n - 1.0)], n / x))
        .collect();
    let mut best: Option<Usl> = None;
    // Free sets: all three, then with sigma or kappa or both fixed at 0.
    for free in [
        [true, true, true],
        [true, false, true],
        [true, true, false],
        [true, false, false],
    ] {
        let Some(coef) = least_squares(&rows, free) else {
            continue;
        };
        if coef[0] <= 0.0 || coef[1] < 0.0 || coef[2] < 0.0 {
            continue;
        }
        let lambda = 1.0 / coef[0];
        let sigma = coef[1] / coef[0];
        let kappa = coef[2] / coef[0];
        let mut usl = Usl {
            lambda,
            sigma,
            kappa,
            n_star: (kappa > 0.0).then(|| ((1.0 - sigma).max(0.0) / kappa).sqrt()),
            r2: 0.0,
        };
        usl.r2 = r_squared(points, &usl);
        if best.is_none_or(|b| usl.r2 > b.r2 + 1e-12) {
            best = Some(usl);
        }
        if free == [true, true, true] {
            // The full fit is admissible: it is the answer.
            break;
        }
    }
    best
}

fn r_squared(points: &[(f64, f64)], usl: &Usl) -> f64 {
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let ss_tot: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|p| (p.1 - usl.predict(p.0)).powi(2))
        .sum();
    if ss_tot == 0.0 {
        if ss_res == 0.0 { 1.0 } else { 0.0 }
    } else {
        1.0 - ss_res / ss_tot
    }
}

/// Least squares over the free columns (the others' coefficients are 0).
fn least_squares(rows: &[([f64; 3], f64)], free: [bool; 3]) -> Option<[f64; 3]> {
    let cols: Vec<usize> = (0..3).filter(|i| free[*i]).collect();
    let k = cols.len();
    let mut m = vec![vec![0.0; k + 1]; k];
    for (x, y) in rows {
        for (i, &ci) in cols.iter().enumerate() {
            for (j, &cj) in cols.iter().enumerate() {
                m[i][j] += x[ci] * x[cj];
            }
            m[i][k] += x[ci] * y;
        }
    }
    // Gaussian elimination with partial pivoting.
    for c in 0..k {
        let p = (c..k).max_by(|a, b| m[*a][c].abs().total_cmp(&m[*b][c].abs()))?;
        if m[p][c].abs() < 1e-300 {
            return None;
        }
        m.swap(c, p);
        for r in 0..k {
            if r != c {
                let f = m[r][c] / m[c][c];
                let pivot = m[c].clone();
                for (x, p) in m[r].iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut out = [0.0; 3];
    for (i, &ci) in cols.iter().enumerate() {
        out[ci] = m[i][k] / m[i][i];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(n: u32, x: f64, noise: f64) -> StepPoint {
        // Ten seconds alternating around x by +-noise.
        let per_second = (0..10)
            .map(|i| if i % 2 == 0 { x + noise } else { x - noise })
            .collect();
        StepPoint {
            concurrency: n,
            throughput: x,
            per_second,
            client_cpu_share: 0.3,
        }
    }

    fn ladder(xs: &[f64], noise: f64) -> Vec<StepPoint> {
        xs.iter()
            .enumerate()
            .map(|(i, x)| point(1 << i, *x, noise))
            .collect()
    }

    #[test]
    fn growing_ladder() {
        let steps = ladder(&[100.0, 190.0, 350.0, 600.0, 900.0], 5.0);
        let shapes = step_shapes(&steps);
        assert!(shapes.iter().all(|s| *s == Scaling::Growing), "{shapes:?}");
        assert_eq!(run_shape(&steps, &shapes), Scaling::Growing);
    }

    #[test]
    fn plateau_ladder() {
        let steps = ladder(&[100.0, 190.0, 350.0, 352.0, 349.0, 351.0], 5.0);
        let shapes = step_shapes(&steps);
        assert_eq!(&shapes[..3], &[Scaling::Growing; 3]);
        assert_eq!(&shapes[3..], &[Scaling::Plateau; 3]);
        assert_eq!(run_shape(&steps, &shapes), Scaling::Plateau);
    }

    /// The ladder of the concurrency-ladder write-up: 414 at 4, then 409,
    /// 396, 255, 140: backwards is contention.
    #[test]
    fn backwards_ladder() {
        let steps = ladder(&[328.1, 382.4, 413.8, 409.1, 395.6, 255.1, 140.2], 4.0);
        let shapes = step_shapes(&steps);
        assert_eq!(shapes[5], Scaling::Backwards);
        assert_eq!(shapes[6], Scaling::Backwards);
        assert_eq!(shapes[3], Scaling::Plateau);
        assert_eq!(run_shape(&steps, &shapes), Scaling::Backwards);
        assert_eq!(peak_index(&steps), Some(2));
    }

    /// Noise wide enough to swallow the differences: no growth is claimed.
    #[test]
    fn noisy_ladder_is_a_plateau_not_growth_or_collapse() {
        let steps = ladder(&[300.0, 320.0, 290.0, 310.0], 120.0);
        let shapes = step_shapes(&steps);
        assert_eq!(&shapes[1..], &[Scaling::Plateau; 3], "{shapes:?}");
        assert_eq!(run_shape(&steps, &shapes), Scaling::Plateau);
    }

    #[test]
    fn client_bound_step_is_never_contention() {
        let mut steps = ladder(&[100.0, 190.0, 120.0], 2.0);
        steps[2].client_cpu_share = 0.97;
        let shapes = step_shapes(&steps);
        assert_eq!(shapes[2], Scaling::ClientBound);
        assert_eq!(run_shape(&steps, &shapes), Scaling::ClientBound);
    }

    fn synthetic(lambda: f64, sigma: f64, kappa: f64) -> Vec<(f64, f64)> {
        let usl = Usl {
            lambda,
            sigma,
            kappa,
            n_star: None,
            r2: 0.0,
        };
        [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|n| (*n, usl.predict(*n)))
            .collect()
    }

    #[test]
    fn usl_fit_recovers_known_sigma_and_kappa() {
        let fit = fit_usl(&synthetic(300.0, 0.05, 0.002)).unwrap();
        assert!((fit.lambda - 300.0).abs() < 1e-6 * 300.0, "{fit:?}");
        assert!((fit.sigma - 0.05).abs() < 1e-6, "{fit:?}");
        assert!((fit.kappa - 0.002).abs() < 1e-8, "{fit:?}");
        let n_star = ((1.0f64 - 0.05) / 0.002).sqrt();
        assert!((fit.n_star.unwrap() - n_star).abs() < 1e-3);
        assert!(fit.r2 > 0.999_999);
    }

    #[test]
    fn usl_fit_with_noise_stays_close() {
        let mut pts = synthetic(500.0, 0.1, 0.0005);
        for (i, p) in pts.iter_mut().enumerate() {
            p.1 *= if i % 2 == 0 { 1.01 } else { 0.99 };
        }
        let fit = fit_usl(&pts).unwrap();
        assert!((fit.sigma - 0.1).abs() < 0.03, "{fit:?}");
        assert!((fit.kappa - 0.0005).abs() < 0.0003, "{fit:?}");
        assert!(fit.r2 > 0.98);
    }

    #[test]
    fn usl_fit_of_pure_serialisation_has_no_peak() {
        let fit = fit_usl(&synthetic(200.0, 0.3, 0.0)).unwrap();
        assert!((fit.sigma - 0.3).abs() < 1e-6, "{fit:?}");
        assert!(fit.kappa.abs() < 1e-9);
        assert!(fit.n_star.is_none_or(|n| n > 1e3));
    }

    #[test]
    fn usl_needs_five_steps() {
        assert!(fit_usl(&synthetic(200.0, 0.3, 0.01)[..4]).is_none());
    }
}
