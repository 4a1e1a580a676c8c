//! The replay chart's geometry: throughput and p95 against concurrency,
//! the knee and the fitted USL curve. The SVG itself is a small template
//! (templates/chart.html): two line charts do not need a plotting crate and
//! its font handling, and a template keeps every label escaped by the same
//! rules as the rest of the page.

use serde::Serialize;

use crate::wire::replay::ReplayReport;

pub const WIDTH: f64 = 640.0;
pub const HEIGHT: f64 = 240.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 40.0;

#[derive(Debug, Serialize)]
pub struct Panel {
    pub id: &'static str,
    pub title: String,
    pub width: f64,
    pub height: f64,
    pub plot_left: f64,
    pub plot_right: f64,
    pub plot_top: f64,
    pub plot_bottom: f64,
    pub points: Vec<Point>,
    /// `x,y x,y ...` through the measured steps.
    pub line: String,
    /// The USL prediction, when fitted.
    pub curve: Option<String>,
    pub marks: Vec<Mark>,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
}

#[derive(Debug, Serialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub label: String,
}

/// A vertical marker: the knee, the USL's peak.
#[derive(Debug, Serialize)]
pub struct Mark {
    pub x: f64,
    pub label: String,
    pub class: &'static str,
    /// Where the label starts (`start`) or ends (`end`): a mark in the
    /// right half of the plot has its label on its left, so the label
    /// stays inside the chart (the knee at the ladder's top step read
    /// "knee: 4 clien", clipped by the chart's edge).
    pub label_x: f64,
    pub anchor: &'static str,
}

impl Mark {
    fn new(x: f64, label: String, class: &'static str) -> Mark {
        let right_half = x > (LEFT + WIDTH - RIGHT) / 2.0;
        Mark {
            x,
            label,
            class,
            label_x: if right_half { x - 4.0 } else { x + 4.0 },
            anchor: if right_half { "end" } else { "start" },
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Tick {
    pub at: f64,
    pub label: String,
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A round number at or above `v` (1, 2, 2.5, 5 times a power of ten).
fn nice_ceil(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn label(v: f64) -> String {
    if v >= 100.0 || v == v.round() {
        crate::output::thousands(v, 0)
    } else {
        format!("{v:.1}")
    }
}

struct Axes {
    x_max: f64,
    y_max: f64,
}

impl Axes {
    fn x(&self, n: f64) -> f64 {
        round(LEFT + n / self.x_max * (WIDTH - LEFT - RIGHT))
    }
    fn y(&self, v: f64) -> f64 {
        round(HEIGHT - BOTTOM - v / self.y_max * (HEIGHT - TOP - BOTTOM))
    }
}

fn panel(
    id: &'static str,
    title: String,
    r: &ReplayReport,
    value: impl Fn(&crate::wire::replay::StepJson) -> f64,
    curve: Option<&dyn Fn(f64) -> f64>,
    unit: &str,
) -> Panel {
    let x_max = x_max(r);
    let mut y_top = r.steps.iter().map(&value).fold(0.0, f64::max);
    let samples: Vec<(f64, f64)> = match curve {
        Some(f) => (0..=80)
            .map(|i| {
                let n = 1.0 + (x_max - 1.0) * f64::from(i) / 80.0;
                (n, f(n).max(0.0))
            })
            .collect(),
        None => vec![],
    };
    for (_, v) in &samples {
        y_top = y_top.max(*v);
    }
    let axes = Axes {
        x_max,
        y_max: nice_ceil(y_top * 1.05),
    };
    let points: Vec<Point> = r
        .steps
        .iter()
        .map(|s| Point {
            x: axes.x(f64::from(s.concurrency)),
            y: axes.y(value(s)),
            label: format!(
                "{}: {} {unit}",
                crate::output::count_of(u64::from(s.concurrency), "client"),
                label(value(s))
            ),
        })
        .collect();
    let line = points
        .iter()
        .map(|p| format!("{},{}", p.x, p.y))
        .collect::<Vec<_>>()
        .join(" ");
    let curve = (!samples.is_empty()).then(|| {
        samples
            .iter()
            .map(|(n, v)| format!("{},{}", axes.x(*n), axes.y(*v)))
            .collect::<Vec<_>>()
            .join(" ")
    });
    let mut marks = Vec::new();
    if let Some(k) = r.verdict.peak_concurrency {
        marks.push(Mark::new(
            axes.x(f64::from(k)),
            format!("knee: {}", crate::output::count_of(u64::from(k), "client")),
            "knee",
        ));
    }
    if id == "throughput"
        && let Some(n) = r.verdict.usl.and_then(|u| u.n_star)
        && n <= x_max
    {
        marks.push(Mark::new(axes.x(n), format!("USL peak {n:.1}"), "usl-peak"));
    }
    let x_ticks = r
        .steps
        .iter()
        .map(|s| Tick {
            at: axes.x(f64::from(s.concurrency)),
            label: s.concurrency.to_string(),
        })
        .collect();
    let y_ticks = (0..=4)
        .map(|i| {
            let v = axes.y_max * f64::from(i) / 4.0;
            Tick {
                at: axes.y(v),
                label: label(v),
            }
        })
        .collect();
    Panel {
        id,
        title,
        width: WIDTH,
        height: HEIGHT,
        plot_left: LEFT,
        plot_right: WIDTH - RIGHT,
        plot_top: TOP,
        plot_bottom: HEIGHT - BOTTOM,
        points,
        line,
        curve,
        marks,
        x_ticks,
        y_ticks,
    }
}

/// The clients axis, shared by both panels: the ladder, and the USL's peak
/// when it lies within twice the ladder's top.
fn x_max(r: &ReplayReport) -> f64 {
    let top = r.steps.iter().map(|s| s.concurrency).max().unwrap_or(1) as f64;
    let peak = r
        .verdict
        .usl
        .and_then(|u| u.n_star)
        .filter(|n| *n <= 2.0 * top)
        .unwrap_or(0.0);
    (top.max(peak) * 1.1).max(2.0)
}

/// The two panels of a replay ladder; none without steps.
pub fn panels(r: &ReplayReport) -> Vec<Panel> {
    if r.steps.is_empty() {
        return vec![];
    }
    let usl = r.verdict.usl;
    let predict = move |n: f64| usl.map_or(0.0, |u| u.predict(n));
    let curve: Option<&dyn Fn(f64) -> f64> = usl.map(|_| &predict as &dyn Fn(f64) -> f64);
    vec![
        panel(
            "throughput",
            "Throughput (units/s) against clients".into(),
            r,
            |s| s.throughput_per_s,
            curve,
            "units/s",
        ),
        panel(
            "p95",
            "p95 latency (ms) against clients".into(),
            r,
            |s| s.p95_ms,
            None,
            "ms",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    #[test]
    fn points_scale_into_the_plot_and_the_curve_follows_the_fit() {
        let p = panels(&fixture::replay());
        assert_eq!(p.len(), 2);
        let t = &p[0];
        assert_eq!(t.points.len(), 4);
        for pt in &t.points {
            assert!(pt.x >= t.plot_left && pt.x <= t.plot_right, "{pt:?}");
            assert!(pt.y >= t.plot_top && pt.y <= t.plot_bottom, "{pt:?}");
        }
        // More throughput is higher on the page.
        assert!(t.points[3].y < t.points[0].y);
        assert!(t.curve.as_ref().unwrap().split(' ').count() == 81);
        let labels: Vec<&str> = t.marks.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels, vec!["knee: 8 clients", "USL peak 9.7"]);
        // Every label stays inside the chart: one in the right half is
        // drawn leftwards from its mark.
        for m in &t.marks {
            let right = m.x > (t.plot_left + t.plot_right) / 2.0;
            assert_eq!(m.anchor, if right { "end" } else { "start" }, "{m:?}");
            assert!(m.label_x > 0.0 && m.label_x < t.width, "{m:?}");
        }
        assert_eq!(label(12_500.0), "12,500");
        assert!(p[1].curve.is_none());
        assert_eq!(nice_ceil(1491.0), 2000.0);
        assert_eq!(nice_ceil(9.8), 10.0);
        assert_eq!(nice_ceil(0.21), 0.25);
    }
}
