//! Head's new migration files run once more, statement by statement, on a
//! further copy of the seeded base while `pg_locks` is sampled (migrate's
//! measure): the locks each statement held and the tables it rewrote, as
//! the check's JSON and the blocking-migration gate read them.

use std::time::Instant;

use crate::db::ConnInfo;
use crate::error::Result;
use crate::migrate::{self, Migration};
use crate::wire::check::JsonMigrationStatement;

use super::databases::Databases;
use super::plan::{CheckPlan, step};

/// Head's new files, one statement at a time, on a further copy of the
/// seeded base, with the locks each took sampled.
pub async fn measure(
    plan: &CheckPlan,
    dbs: &mut Databases,
    base_db: &ConnInfo,
    files: &[Migration],
) -> Result<Vec<JsonMigrationStatement>> {
    let name = plan.db_name("measure");
    let db = dbs.copy(base_db, &name).await?;
    let t = Instant::now();
    let measured = migrate::measure::run(&db, files, plan.domain_log()).await?;
    let out: Vec<JsonMigrationStatement> =
        measured.into_iter().map(|m| statement(plan, m)).collect();
    step(
        plan.log,
        t,
        &format!(
            "measure: {} statement(s) of {} new file(s) on a copy of the base, {} blocking",
            out.len(),
            files.len(),
            out.iter().filter(|m| m.blocking).count()
        ),
    );
    for m in &out {
        if let Some(l) = m.locks.first() {
            plan.log.info(&format!(
                "  {}:{} {}: {} on {} for {:.1} s{}",
                m.file,
                m.line,
                crate::output::shorten(&m.statement, 50),
                l.mode,
                l.relation,
                l.held_seconds,
                if m.rewritten.is_empty() {
                    String::new()
                } else {
                    format!(", rewrote {}", m.rewritten.join(", "))
                }
            ));
        }
    }
    Ok(out)
}

/// One measured statement as the check's JSON writes it.
fn statement(plan: &CheckPlan, m: migrate::measure::Measured) -> JsonMigrationStatement {
    JsonMigrationStatement {
        file: plan.relative(&plan.migrations_dir.join(&m.file)),
        line: m.line,
        statement: crate::output::shorten(&m.statement, 120),
        seconds: m.seconds,
        blocking: m.blocking(),
        locks: m
            .locks
            .iter()
            .map(|l| crate::wire::check::JsonLock {
                relation: l.relation.clone(),
                mode: l.mode.clone(),
                held_seconds: l.held_seconds,
                blocks: migrate::measure::blocks(&l.mode).to_string(),
            })
            .collect(),
        rewritten: m.rewritten,
        error: m.error,
    }
}
