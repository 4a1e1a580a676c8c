//! The replay report: built from the steps into the wire types of
//! [`crate::wire::replay`] (`format_version: 1`), and its renderers (table,
//! markdown, JSON), each over `impl Write`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::attribution::BlockerState;
use super::hist::METHOD;
use super::ladder::StepResult;
use super::verdict::{self, StepPoint};
use super::workload::Workload;
use crate::output::{self, Align};

pub use crate::wire::replay::*;

fn errors_of(e: &super::exec::Errors) -> (BTreeMap<String, u64>, BTreeMap<String, String>) {
    (
        e.iter().map(|(k, v)| (k.clone(), v.count)).collect(),
        e.iter()
            .map(|(k, v)| (k.clone(), v.first.clone()))
            .collect(),
    )
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn state_text(w: &Workload, s: &BlockerState) -> String {
    match s {
        BlockerState::Running(i) => format!("running {}", w.statements[*i].query),
        BlockerState::WaitingOnLock(i) => {
            format!("waiting on a lock in {}", w.statements[*i].query)
        }
        BlockerState::IdleInTransaction => "idle in transaction".into(),
        BlockerState::Unknown => "unknown".into(),
    }
}

fn unit_label(w: &Workload, unit: usize) -> String {
    if unit < w.transactions.len() {
        w.transactions[unit].name.clone()
    } else {
        // A lone statement: see `exec::run_unit`.
        w.statements
            .get(usize::MAX - unit)
            .map(|s| s.id.clone())
            .unwrap_or_default()
    }
}

/// A row lock whose row the server did not show (a `transactionid` wait
/// has no relation; only the first waiter holds the tuple lock): the table
/// is the lock's own, else the one table the blocking statement writes or
/// locks, else none is named.
fn unknown_row(relation: Option<&str>, blocking: Option<&str>) -> String {
    let table = relation.map(str::to_string).or_else(|| {
        let rels = blocking.map(super::attribution::locked_relations)?;
        match rels.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        }
    });
    match table {
        Some(t) => format!("a row of {t} (the server does not show which)"),
        None => "a row the server does not show, held by the blocker's open transaction".into(),
    }
}

/// Builds the report of the finished steps.
pub fn build(
    w: &Workload,
    steps: &[StepResult],
    integrity: IntegrityJson,
    sample_ms: u64,
    interrupted: bool,
) -> ReplayReport {
    let mut out = ReplayReport {
        format_version: FORMAT_VERSION,
        server_version: String::new(),
        percentile_method: METHOD.to_string(),
        steps: Vec::new(),
        statements: Vec::new(),
        transactions: Vec::new(),
        hotspots: Vec::new(),
        wait_events: Vec::new(),
        integrity,
        client_cpu: Vec::new(),
        verdict: VerdictJson {
            peak_concurrency: None,
            shape: Scaling::Growing,
            usl: None,
            text: String::new(),
        },
        interrupted,
    };
    let points: Vec<StepPoint> = steps.iter().map(step_point).collect();
    let shapes = verdict::step_shapes(&points);
    for (i, (s, p)) in steps.iter().zip(&points).enumerate() {
        let secs = s.elapsed.as_secs_f64().max(1e-9);
        let h = &s.stats.units.latency;
        let (errors, first_errors) = errors_of(&s.stats.units.errors);
        out.steps.push(StepJson {
            step_index: i,
            concurrency: s.concurrency,
            throughput_per_s: round3(p.throughput),
            statements_per_s: round3(s.stats.counters.statements_ok as f64 / secs),
            p50_ms: h.percentile_ms(50.0),
            p95_ms: h.percentile_ms(95.0),
            p99_ms: h.percentile_ms(99.0),
            p999_ms: h.percentile_ms(99.9),
            max_ms: h.max_ms(),
            errors,
            first_errors,
            pool_wait_p95_ms: s.pool.map(|_| s.stats.pool_wait.percentile_ms(95.0)),
            histogram: h.to_base64(),
            shape: shapes[i],
            units: h.count(),
            counters: s.stats.counters.clone(),
            rate_per_s: s.rate,
            pool: s.pool,
            runs: s.runs,
            lock_samples: s.samples.lock_samples,
            lock_samples_attributed_share: (s.samples.lock_samples > 0).then(|| {
                round3(s.samples.attributed_samples as f64 / s.samples.lock_samples as f64)
            }),
            lock_samples_outside: s.samples.outside_samples,
        });
        out.client_cpu.push(CpuJson {
            step_index: i,
            planck_cpu_share: round3(p.client_cpu_share),
            // The server's backends over the step's wall time, as a share of
            // the machine's cores (they share them with planck).
            server_cpu_share: s.server_cpu_seconds.map(|c| {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                round3(c / (s.wall_seconds.max(1e-9) * cores as f64))
            }),
        });
        unit_rows(&mut out, w, i, s);
        waits_of(&mut out, w, i, s, sample_ms);
    }
    let peak = verdict::peak_index(&points);
    let shape = verdict::run_shape(&points, &shapes);
    // An open loop's steps are rates, not concurrency: no law to fit.
    let open_loop = steps.iter().any(|s| s.rate.is_some());
    let usl = if open_loop {
        None
    } else {
        verdict::fit_usl(
            &points
                .iter()
                .map(|p| (f64::from(p.concurrency), p.throughput))
                .collect::<Vec<_>>(),
        )
    };
    out.verdict = VerdictJson {
        peak_concurrency: peak.map(|i| points[i].concurrency),
        shape,
        usl,
        text: verdict_text(&out, peak, shape),
    };
    out
}

/// A step as the verdict reads it: its clients, throughput, per-second
/// counts and planck's share of the CPU.
fn step_point(s: &StepResult) -> StepPoint {
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(s.workers.max(1));
    StepPoint {
        // The law's N: what runs at once is bounded by the pool.
        concurrency: s.pool.map_or(s.concurrency, |p| p.min(s.concurrency)),
        throughput: s.stats.units.latency.count() as f64 / secs,
        per_second: s
            .stats
            .per_second
            .iter()
            .take(s.elapsed.as_secs() as usize)
            .map(|n| *n as f64)
            .collect(),
        client_cpu_share: s.cpu_seconds / (s.wall_seconds.max(1e-9) * cores as f64),
    }
}

/// Step `i`'s statements and transactions, by index, with their latencies.
fn unit_rows(out: &mut ReplayReport, w: &Workload, i: usize, s: &StepResult) {
    let mut stmt_ids: Vec<&usize> = s.stats.statements.keys().collect();
    stmt_ids.sort();
    for &si in stmt_ids {
        let t = &s.stats.statements[&si];
        let (errors, first_errors) = errors_of(&t.errors);
        out.statements.push(StatementJson {
            id: w.statements[si].id.clone(),
            query: w.statements[si].query.clone(),
            step_index: i,
            calls: t.latency.count(),
            p50_ms: t.latency.percentile_ms(50.0),
            p95_ms: t.latency.percentile_ms(95.0),
            p99_ms: t.latency.percentile_ms(99.0),
            errors,
            first_errors,
        });
    }
    let mut tx_ids: Vec<&usize> = s.stats.transactions.keys().collect();
    tx_ids.sort();
    for &ti in tx_ids {
        let t = &s.stats.transactions[&ti];
        let tx = &w.transactions[ti];
        out.transactions.push(TransactionJson {
            id: tx.id.clone(),
            name: tx.name.clone(),
            statements: tx
                .statements
                .iter()
                .map(|x| w.statements[*x].id.clone())
                .collect(),
            queries: tx
                .statements
                .iter()
                .map(|x| w.statements[*x].query.clone())
                .collect(),
            step_index: i,
            calls: t.latency.count(),
            p50_ms: t.latency.percentile_ms(50.0),
            p95_ms: t.latency.percentile_ms(95.0),
            p99_ms: t.latency.percentile_ms(99.0),
            errors: errors_of(&t.errors).0,
        });
    }
}

/// Step `i`'s lock hotspots (the workload's own first) and wait events.
fn waits_of(out: &mut ReplayReport, w: &Workload, i: usize, s: &StepResult, sample_ms: u64) {
    let client_samples = s.samples.backend_samples.max(1) as f64;
    let mut hs: Vec<_> = s.samples.hotspots.iter().collect();
    // The workload's own waits first: a holder outside planck's
    // connections is listed after them, whatever its samples.
    hs.sort_by(|a, b| {
        (a.0.outside.is_some(), b.1.samples)
            .cmp(&(b.0.outside.is_some(), a.1.samples))
            .then(a.0.cmp(b.0))
    });
    for (k, c) in hs {
        let state = c
            .states
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(s, _)| state_text(w, s))
            .unwrap_or_else(|| "unknown".into());
        let bound: Vec<String> = c
            .blocker_params
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| format!("${} = {v}", i + 1)))
            .collect();
        let mut row = match (&k.row, &c.row_key) {
            (Some(_), Some(key)) => key.clone(),
            _ => match k.row {
                Some((p, t)) if bound.is_empty() => format!("ctid ({p},{t})"),
                Some((p, t)) => format!("ctid ({p},{t}); blocker bound {}", bound.join(", ")),
                None => unknown_row(
                    k.relation.as_deref(),
                    k.blocking.map(|x| w.statements[x].query.as_str()),
                ),
            },
        };
        // On a Citus coordinator: where the distributed table's row lives.
        if let Some(shard) = &k.shard {
            row.push_str(&format!(" ({shard})"));
        }
        out.hotspots.push(HotspotJson {
            step_index: i,
            lock_type: k.lock_type.clone(),
            relation: k.relation.clone(),
            row,
            waiting_statement: k.waiting.map(|x| w.statements[x].query.clone()),
            waiting_statement_id: k.waiting.map(|x| w.statements[x].id.clone()),
            blocking_statement: k.blocking.map(|x| w.statements[x].query.clone()),
            blocking_statement_id: k.blocking.map(|x| w.statements[x].id.clone()),
            blocker_state: state,
            transaction: k.blocker_unit.map(|u| unit_label(w, u)),
            samples: c.samples,
            wait_seconds: round3(c.samples as f64 * sample_ms as f64 / 1000.0),
            wait_share: round3(c.samples as f64 / client_samples),
            outside_workload: k.outside.clone(),
        });
    }
    let mut we: Vec<_> = s.samples.wait_events.iter().collect();
    we.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for ((t, e), n) in we {
        out.wait_events.push(WaitEventJson {
            step_index: i,
            wait_event_type: t.clone(),
            wait_event: e.clone(),
            samples: *n,
            share: round3(*n as f64 / client_samples),
        });
    }
}

fn verdict_text(r: &ReplayReport, peak: Option<usize>, shape: Scaling) -> String {
    let Some(p) = peak else {
        return "no step finished".into();
    };
    let s = &r.steps[p];
    let mut text = match shape {
        Scaling::Growing => format!(
            "throughput still grows at {} concurrent ({:.0} units/s): the ladder did not find the limit",
            s.concurrency, s.throughput_per_s
        ),
        Scaling::Plateau => format!(
            "throughput plateaus from {} concurrent ({:.0} units/s): serialisation (sigma), not collapse",
            s.concurrency, s.throughput_per_s
        ),
        Scaling::Backwards => format!(
            "throughput peaks at {} concurrent ({:.0} units/s) and falls after: coherency cost (kappa), contention rather than saturation",
            s.concurrency, s.throughput_per_s
        ),
        Scaling::ClientBound => format!(
            "planck itself was CPU-bound past {} concurrent ({:.0} units/s): these steps say nothing about the server",
            s.concurrency, s.throughput_per_s
        ),
    };
    // The top hotspot of the workload's own (never a holder outside it) in
    // the last step that had one.
    let own = || r.hotspots.iter().filter(|h| h.outside_workload.is_none());
    if let Some(h) = own()
        .filter(|h| h.step_index == own().map(|h| h.step_index).max().unwrap_or(0))
        .max_by(|a, b| a.samples.cmp(&b.samples))
    {
        let c = r.steps[h.step_index].concurrency;
        let taken_by = match h.blocking_statement.as_deref() {
            Some(q) => format!(", taken by `{}`", output::shorten(q, 60)),
            None => String::new(),
        };
        text.push_str(&format!(
            "; {:.0} % of client time at {c} waits on {} ({} lock){taken_by}",
            h.wait_share * 100.0,
            h.label(),
            h.lock_type,
        ));
    }
    text
}

/// The report in each format (`planck replay`'s output).
impl output::Render for ReplayReport {
    fn table(&self, w: &mut impl Write) -> io::Result<()> {
        render_table(w, self)
    }

    fn json(&self, w: &mut impl Write) -> io::Result<()> {
        render_json(w, self)
    }

    fn markdown(&self, w: &mut impl Write) -> io::Result<()> {
        render_markdown(w, self)
    }
}

pub fn render_json<W: Write>(w: &mut W, r: &ReplayReport) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, r)?;
    writeln!(w)
}

fn fmt_ms(x: f64) -> String {
    format!("{x:.2}")
}

/// The steps' rows: the latencies, then (`metrics`) each of
/// [`STEP_METRICS`], then the errors and the shape.
fn step_rows(r: &ReplayReport, metrics: bool) -> Vec<Vec<String>> {
    r.steps
        .iter()
        .map(|s| {
            let errors: u64 = s.errors.values().sum();
            let mut row = vec![
                s.concurrency.to_string(),
                format!("{:.1}", s.throughput_per_s),
                fmt_ms(s.p50_ms),
                fmt_ms(s.p95_ms),
                fmt_ms(s.p99_ms),
                fmt_ms(s.max_ms),
            ];
            if metrics {
                row.extend(STEP_METRICS.iter().map(|m| (m.cell)(s)));
            }
            row.push(output::count(errors));
            row.push(s.shape.as_str().to_string());
            row
        })
        .collect()
}

/// The columns of [`step_rows`].
fn step_columns(metrics: bool) -> Vec<&'static str> {
    let mut cols = vec!["clients", "units/s", "p50 ms", "p95 ms", "p99 ms", "max ms"];
    if metrics {
        cols.extend(STEP_METRICS.iter().map(|m| m.header));
    }
    cols.extend(["errors", "shape"]);
    cols
}

/// The terminal's table of [`STEP_METRICS`], apart from the latencies so
/// that both fit 80 columns; `None` without any.
fn metrics_table(r: &ReplayReport) -> Option<comfy_table::Table> {
    if STEP_METRICS.is_empty() {
        return None;
    }
    let mut cols = vec!["clients"];
    cols.extend(STEP_METRICS.iter().map(|m| m.header));
    let mut t = output::table(&cols);
    for s in &r.steps {
        let mut row = vec![s.concurrency.to_string()];
        row.extend(STEP_METRICS.iter().map(|m| (m.cell)(s)));
        t.add_row(row);
    }
    Some(t)
}

fn hotspot_rows(r: &ReplayReport) -> Vec<Vec<String>> {
    r.hotspots
        .iter()
        .take(10)
        .map(|h| {
            vec![
                r.steps[h.step_index].concurrency.to_string(),
                format!("{} ({})", h.what_is_locked(), h.lock_type),
                output::shorten(h.waiting_statement.as_deref().unwrap_or("unknown"), 30),
                output::shorten(
                    h.outside_workload
                        .as_deref()
                        .or(h.blocking_statement.as_deref())
                        .unwrap_or("unknown"),
                    30,
                ),
                format!("{:.0} %", h.wait_share * 100.0),
            ]
        })
        .collect()
}

const HOTSPOT_COLUMNS: [&str; 5] = ["clients", "lock", "waiting", "blocking", "share"];

fn integrity_line(r: &ReplayReport) -> String {
    let i = &r.integrity;
    let mut s = format!(
        "integrity: {} attempted, {} succeeded, {} failed; rows changed {} by planck's count, {} by the server's",
        i.attempted,
        i.succeeded,
        i.failed,
        i.planck_rows_changed,
        i.server_rows_changed.map_or("?".into(), |n| n.to_string())
    );
    if let Some(u) = i.data_unchanged {
        s.push_str(if u {
            "; data unchanged"
        } else {
            "; DATA CHANGED"
        });
    }
    s
}

pub fn render_table<W: Write>(w: &mut W, r: &ReplayReport) -> io::Result<()> {
    let mut t = output::table(&step_columns(false));
    for row in step_rows(r, false) {
        t.add_row(row);
    }
    writeln!(w, "{t}")?;
    if let Some(t) = metrics_table(r) {
        writeln!(w, "{t}")?;
    }
    if !r.hotspots.is_empty() {
        let mut t = output::table(&HOTSPOT_COLUMNS);
        for row in hotspot_rows(r) {
            t.add_row(row);
        }
        writeln!(w, "{t}")?;
    }
    writeln!(w, "{}", r.verdict.text)?;
    if let Some(u) = &r.verdict.usl {
        writeln!(
            w,
            "USL: lambda {:.1}, sigma {:.4}, kappa {:.5}, N* {}, R^2 {:.3}",
            u.lambda,
            u.sigma,
            u.kappa,
            u.n_star.map_or("none".into(), |n| format!("{n:.1}")),
            u.r2
        )?;
    }
    writeln!(w, "{}", integrity_line(r))?;
    for n in &r.integrity.notes {
        writeln!(w, "note: {n}")?;
    }
    for k in &r.integrity.skipped {
        writeln!(w, "{}", super::stale::warning(k))?;
    }
    writeln!(w, "percentiles: {}", r.percentile_method)?;
    if !r.server_version.is_empty() {
        writeln!(w, "server: PostgreSQL {}", r.server_version)?;
    }
    if r.interrupted {
        writeln!(
            w,
            "interrupted: the steps above finished; the one running was dropped"
        )?;
    }
    Ok(())
}

pub fn render_markdown<W: Write>(w: &mut W, r: &ReplayReport) -> io::Result<()> {
    writeln!(w, "## planck replay\n")?;
    let cols: Vec<(&str, Align)> = step_columns(true)
        .into_iter()
        .map(|c| {
            (
                c,
                if c == "shape" {
                    Align::Left
                } else {
                    Align::Right
                },
            )
        })
        .collect();
    output::markdown_table(w, &cols, step_rows(r, true))?;
    if !r.hotspots.is_empty() {
        writeln!(w, "\n### Lock hotspots\n")?;
        let cols: Vec<(&str, Align)> = HOTSPOT_COLUMNS
            .iter()
            .map(|c| {
                (
                    *c,
                    if *c == "clients" || *c == "share" {
                        Align::Right
                    } else {
                        Align::Left
                    },
                )
            })
            .collect();
        output::markdown_table(w, &cols, hotspot_rows(r))?;
    }
    writeln!(w, "\n{}\n", r.verdict.text)?;
    if !r.server_version.is_empty() {
        writeln!(w, "On PostgreSQL {}.\n", r.server_version)?;
    }
    writeln!(w, "{}", integrity_line(r))?;
    for n in &r.integrity.notes {
        writeln!(w, "- {n}")?;
    }
    for k in &r.integrity.skipped {
        writeln!(w, "- {}", super::stale::warning(k))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::hist::Latency;

    fn sample() -> ReplayReport {
        let mut h = Latency::new();
        for us in [800, 1200, 2500, 9000] {
            h.record_us(us);
        }
        let step = |i: usize, c: u32, x: f64, shape: Scaling| StepJson {
            step_index: i,
            concurrency: c,
            throughput_per_s: x,
            statements_per_s: x * 5.0,
            p50_ms: 1.2,
            p95_ms: 9.0,
            p99_ms: 9.0,
            p999_ms: 9.0,
            max_ms: 9.0,
            errors: BTreeMap::from([("40P01".to_string(), 2)]),
            first_errors: BTreeMap::from([("40P01".to_string(), "deadlock detected".to_string())]),
            pool_wait_p95_ms: None,
            histogram: h.to_base64(),
            shape,
            units: 4,
            counters: Counters::default(),
            rate_per_s: None,
            pool: None,
            runs: 1,
            lock_samples: 0,
            lock_samples_attributed_share: None,
            lock_samples_outside: 0,
        };
        ReplayReport {
            server_version: "15.8".into(),
            format_version: FORMAT_VERSION,
            percentile_method: METHOD.to_string(),
            steps: vec![
                step(0, 1, 300.0, Scaling::Growing),
                step(1, 4, 410.0, Scaling::Growing),
                step(2, 16, 250.0, Scaling::Backwards),
            ],
            statements: vec![],
            transactions: vec![],
            hotspots: vec![HotspotJson {
                step_index: 2,
                lock_type: "transactionid".into(),
                relation: Some("accounts".into()),
                row: "ctid (0,1); blocker bound $1 = 1".into(),
                waiting_statement: Some(
                    "UPDATE accounts SET item_seq = item_seq + 1 WHERE id = $1".into(),
                ),
                waiting_statement_id: Some("s1".into()),
                blocking_statement: Some(
                    "UPDATE accounts SET item_seq = item_seq + 1 WHERE id = $1".into(),
                ),
                blocking_statement_id: Some("s1".into()),
                blocker_state: "idle in transaction".into(),
                transaction: Some("tx-add-item".into()),
                samples: 710,
                wait_seconds: 14.2,
                wait_share: 0.71,
                outside_workload: None,
            }],
            wait_events: vec![WaitEventJson {
                step_index: 2,
                wait_event_type: "Lock".into(),
                wait_event: "transactionid".into(),
                samples: 710,
                share: 0.71,
            }],
            integrity: IntegrityJson {
                attempted: 12,
                succeeded: 10,
                failed: 2,
                planck_rows_changed: 30,
                server_rows_changed: Some(30),
                planck_rollbacks: 12,
                planck_commits: 0,
                server_xact_rollback: Some(12),
                server_xact_commit: Some(3),
                data_unchanged: Some(true),
                notes: vec!["sequences advance".into()],
                skipped: Vec::new(),
            },
            client_cpu: vec![],
            verdict: VerdictJson {
                peak_concurrency: Some(4),
                shape: Scaling::Backwards,
                usl: None,
                text: "throughput peaks at 4 concurrent (410 units/s) and falls after".into(),
            },
            interrupted: false,
        }
    }

    fn rendered(f: fn(&mut Vec<u8>, &ReplayReport) -> io::Result<()>) -> String {
        let mut buf = Vec::new();
        f(&mut buf, &sample()).unwrap();
        String::from_utf8(buf).unwrap()
    }

    /// Issue 11, the label: a `transactionid` wait whose row the server did
    /// not show reads as English, the table taken from the blocking
    /// statement, in the table and the verdict; never a `?`.
    #[test]
    fn unknown_row_reads_as_english() {
        let bulk =
            "UPDATE items SET status = 'archived' WHERE id IN (SELECT id FROM items LIMIT 500)";
        let mut r = sample();
        let h = &mut r.hotspots[0];
        h.relation = None;
        h.row = unknown_row(None, Some(bulk));
        h.blocking_statement = Some(bulk.into());
        h.blocking_statement_id = Some("archive".into());
        h.transaction = Some("archive".into());
        assert_eq!(h.row, "a row of items (the server does not show which)");
        assert_eq!(
            h.label(),
            "a row of items (the server does not show which), locked by the transaction of lone statement archive"
        );
        let peak = Some(1);
        r.verdict.text = verdict_text(&r, peak, Scaling::Backwards);
        let mut buf = Vec::new();
        render_table(&mut buf, &r).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(!text.contains('?'), "{text}");
        insta::assert_snapshot!(text);
        // Neither the lock's relation nor one table in the blocker: no table named.
        assert_eq!(
            unknown_row(
                None,
                Some("UPDATE a SET x = 1 FROM b WHERE a.id = b.id FOR UPDATE")
            ),
            unknown_row(None, None)
        );
        assert_eq!(
            unknown_row(None, None),
            "a row the server does not show, held by the blocker's open transaction"
        );
        assert_eq!(
            unknown_row(Some("accounts"), Some(bulk)),
            "a row of accounts (the server does not show which)"
        );
    }

    /// A known row reads by its key, with the transaction that holds it.
    #[test]
    fn known_row_label() {
        let mut r = sample();
        r.hotspots[0].row = "id = 1".into();
        assert_eq!(
            r.hotspots[0].label(),
            "the row of accounts id = 1, locked by transaction tx-add-item"
        );
        r.verdict.text = verdict_text(&r, Some(1), Scaling::Backwards);
        insta::assert_snapshot!(r.verdict.text);
    }

    /// Issue 11 (a new-user pass): a stale statement skipped is named in
    /// the summary with its line, the server's error and its units; the
    /// JSON carries it under `integrity.skipped`, and leaves it out when
    /// nothing was skipped.
    #[test]
    fn skipped_statements_are_named_in_the_summary_and_the_json() {
        let mut r = sample();
        let plain = rendered(render_json);
        assert!(!plain.contains("\"skipped\""), "{plain}");
        r.integrity.skipped.push(SkippedJson {
            statement_id: "s2".into(),
            query: "SELECT note FROM items WHERE id = $1".into(),
            location: Some("queries/recorded.toml:14".into()),
            bind: None,
            sqlstate: "42703".into(),
            error: "column \"note\" does not exist".into(),
            units: vec!["s2".into(), "tx-add-item".into()],
        });
        let mut buf = Vec::new();
        render_table(&mut buf, &r).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("statement s2 "))
            .unwrap();
        insta::assert_snapshot!(line);
        let mut md = Vec::new();
        render_markdown(&mut md, &r).unwrap();
        assert!(
            String::from_utf8(md)
                .unwrap()
                .contains(&format!("- {line}"))
        );
        let mut js = Vec::new();
        render_json(&mut js, &r).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&js).unwrap();
        assert_eq!(v["integrity"]["skipped"][0]["statement_id"], "s2");
        assert_eq!(v["integrity"]["skipped"][0]["units"][1], "tx-add-item");
        let back: ReplayReport = serde_json::from_slice(&js).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn table_snapshot() {
        insta::assert_snapshot!(rendered(render_table));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(rendered(render_markdown));
    }

    /// The JSON is the wire contract: it reads back into the same report.
    #[test]
    fn json_snapshot_and_round_trip() {
        let text = rendered(render_json);
        let back: ReplayReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, sample());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["format_version"], 1);
        assert_eq!(v["steps"][2]["shape"], "backwards");
        insta::assert_snapshot!(text);
    }
}
