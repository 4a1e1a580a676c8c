//! One relayed connection's state: the requests it sent that await an
//! answer, its prepared statements and portals, its role and settings, the
//! transaction it is in. Client messages come in before the server's
//! answers to them (the relay reads a client's bytes before forwarding
//! them), so a queue of pending requests matches each CommandComplete,
//! ErrorResponse and ReadyForQuery to what it answers.
//!
//! Transactions open on BEGIN or on a ReadyForQuery that says "in a
//! transaction" (`T`, `E`), and close on COMMIT, ROLLBACK or a
//! ReadyForQuery that says idle (`I`). An error inside marks it rolled back.
//!
//! A migration is not always one transaction: Django's `atomic = False`
//! migrations, Rails' `disable_ddl_transaction!`, golang-migrate's and
//! Flyway's files without one run their statements in autocommit, and the
//! tool records the migration in its history table after them, on the same
//! connection. So a session that touches a history table (the tool reading
//! what is applied, or creating its table) opens a build window: what it
//! runs from there is held back ([`Window`]) until a write to a history
//! table says it was a migration's (and the window goes on, for the next
//! one), or a sign of a test runner says it was not: a transaction rolled
//! back (each test's isolation) or a TRUNCATE (tables emptied between
//! tests), the session's end, or [`MAX_HELD`] statements. A schema change
//! alone never reaches back: a test that creates a table of its own does
//! not make what its session ran before a migration's.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::evidence::Literals;
use super::protocol::{FromClient, FromServer, Message, from_client, from_server};
use super::shapes::{self, Capture, Closed, Outcome, Setting, ShapeKey};
use super::text::{self, Mark, Meaning, Normalized};

/// The value of a setting whose value each call binds as a parameter.
pub const BOUND: &str = "$bound";

/// The longest parameter value kept for bindings; longer ones are not.
const MAX_VALUE: usize = 256;

/// The most statements a build window holds back: past it they are the
/// application's. A migration's work between two records of a test
/// database's build runs on the rows the build itself wrote; a test
/// session that read a history table once (Rails checks for pending
/// migrations) must not be held to its end.
pub const MAX_HELD: usize = 10_000;

/// A statement as parsed once: normalized, and what it means.
#[derive(Debug)]
struct Prepared {
    norm: Normalized,
    meaning: Meaning,
    /// The raw text, for the capture's one in-memory sample.
    raw: String,
    params: u32,
    /// A named statement: the server may plan it generically.
    named: bool,
    /// A migration's own work ([`text::migration_work`]).
    migration: bool,
    mark: Mark,
    /// Binds it served so far.
    binds: std::sync::atomic::AtomicU32,
}

#[derive(Debug, Clone)]
struct Portal {
    prepared: Arc<Prepared>,
    /// Values by `$n - 1`; `None`: NULL or too long to keep.
    values: Vec<Option<String>>,
    /// Bound from a named statement, or from a Parse that served an
    /// earlier Bind.
    prepared_use: bool,
}

#[derive(Debug)]
enum Pending {
    Run {
        portal: Portal,
        started: Instant,
    },
    /// The end of a simple Query or of a FunctionCall: answered by
    /// ReadyForQuery.
    QueryEnd,
    /// A Sync message: answered by ReadyForQuery, unless the server was in
    /// copy-in mode when it came (it ignores Syncs there).
    Sync,
    /// CopyDone or CopyFail: where the client's copy-in data ended.
    CopyEnd,
}

#[derive(Debug)]
struct Tx {
    started: Instant,
    last_end: Instant,
    runs: Vec<(u32, u32)>,
    /// Parameter values of the first items, for bindings.
    values: Vec<Vec<(u32, String)>>,
    statements: usize,
    gaps: Vec<f64>,
    isolation: Option<String>,
    role: Option<String>,
    local: BTreeMap<String, String>,
    /// `local` with the values as set ([`Conn::values`]).
    local_values: BTreeMap<String, String>,
    failed: bool,
    cut: bool,
    opener: Option<u32>,
    /// It ran a migration's own work (issue 13, 6): none of its statements
    /// is the application's workload.
    migration: bool,
    /// It wrote a migration tool's history table: the build window's
    /// statements were a migration's.
    recorded: bool,
    /// It ran a TRUNCATE: a test runner's, the window's were not.
    emptied: bool,
    /// The literals its statements compared columns with, kept apart until
    /// it closes: a migration's are not the application's.
    literals: Literals,
}

/// What a session ran in its build window (see the module's doc), held
/// back from the capture until it is known whose it is.
#[derive(Debug, Default)]
struct Window {
    /// Autocommit statements' calls, by text.
    lone: HashMap<u32, u64>,
    /// Closed transactions (none a migration's by its own statements).
    closed: Vec<Closed>,
    /// The literals both compared columns with.
    literals: Literals,
    statements: usize,
}

/// One connection, from its startup packet to its end.
#[derive(Debug)]
pub struct Conn {
    pub user: String,
    pub database: String,
    role: Option<String>,
    settings: BTreeMap<String, String>,
    /// The same settings with their values as set, bound ones too: in
    /// memory only, for EXPLAIN to plan a statement as it ran.
    values: BTreeMap<String, String>,
    prepared: HashMap<String, Arc<Prepared>>,
    portals: HashMap<String, Portal>,
    pending: VecDeque<Pending>,
    tx: Option<Tx>,
    /// The build window, open since the session touched a migration tool's
    /// history table.
    window: Option<Window>,
    /// The server is in copy-in mode (it sent CopyInResponse) and the
    /// client has not yet ended the data: its Syncs are ignored.
    copying: bool,
    /// Skip until Sync: the server does after an error in extended protocol.
    pub incomplete: bool,
    pub authenticated: bool,
}

impl Conn {
    pub fn new(user: &str, database: &str) -> Conn {
        Conn {
            user: user.to_string(),
            database: database.to_string(),
            role: None,
            settings: BTreeMap::new(),
            values: BTreeMap::new(),
            prepared: HashMap::new(),
            portals: HashMap::new(),
            pending: VecDeque::new(),
            tx: None,
            window: None,
            copying: false,
            incomplete: false,
            authenticated: false,
        }
    }

    fn prepare(raw: &str) -> Arc<Prepared> {
        let read = text::read(raw);
        Arc::new(Prepared {
            meaning: read.meaning,
            migration: read.migration,
            mark: read.mark,
            norm: read.norm,
            raw: raw.to_string(),
            params: read.params,
            named: false,
            binds: Default::default(),
        })
    }

    /// A client message, before it is forwarded.
    pub fn client(&mut self, m: &Message, now: Instant) {
        // Before AuthenticationOk: passwords and SASL, never read.
        if !self.authenticated {
            return;
        }
        if m.cut {
            self.incomplete = true;
            return;
        }
        let Some(msg) = from_client(m) else {
            self.incomplete = true;
            return;
        };
        match msg {
            FromClient::Query(q) => {
                for part in text::split(&q) {
                    let portal = Portal {
                        prepared: Conn::prepare(part),
                        values: Vec::new(),
                        prepared_use: false,
                    };
                    self.pending.push_back(Pending::Run {
                        portal,
                        started: now,
                    });
                }
                self.pending.push_back(Pending::QueryEnd);
            }
            FromClient::Parse { name, text } => {
                let mut p = Conn::prepare(&text);
                if let Some(p) = Arc::get_mut(&mut p) {
                    p.named = !name.is_empty();
                }
                self.prepared.insert(name, p);
            }
            FromClient::Bind {
                portal,
                statement,
                params,
            } => {
                let Some(prepared) = self.prepared.get(&statement).cloned() else {
                    self.incomplete = true;
                    return;
                };
                let values = params
                    .into_iter()
                    .map(|(v, binary)| {
                        let v = v?;
                        if v.len() > MAX_VALUE {
                            return None;
                        }
                        Some(match std::str::from_utf8(&v) {
                            // Text, or a binary text value (its bytes are the string).
                            Ok(t) if !binary || t.chars().all(|c| !c.is_control()) => t.to_string(),
                            _ => {
                                let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
                                format!("\\x{hex}")
                            }
                        })
                    })
                    .collect();
                let earlier = prepared
                    .binds
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let prepared_use = prepared.named || earlier > 0;
                self.portals.insert(
                    portal,
                    Portal {
                        prepared,
                        values,
                        prepared_use,
                    },
                );
            }
            FromClient::Execute { portal } => match self.portals.get(&portal) {
                Some(p) => self.pending.push_back(Pending::Run {
                    portal: p.clone(),
                    started: now,
                }),
                None => self.incomplete = true,
            },
            FromClient::Close { kind, name } => {
                if kind == b'S' {
                    self.prepared.remove(&name);
                } else {
                    self.portals.remove(&name);
                }
            }
            // Its ReadyForQuery ends it, as a Query's does.
            FromClient::FunctionCall => self.pending.push_back(Pending::QueryEnd),
            FromClient::Sync if self.copying => {}
            FromClient::Sync => self.pending.push_back(Pending::Sync),
            FromClient::Other(b'c' | b'f') if self.copying => self.copying = false,
            FromClient::Other(b'c' | b'f') => self.pending.push_back(Pending::CopyEnd),
            FromClient::Terminate | FromClient::Other(_) => {}
        }
    }

    /// A server message, before it is forwarded.
    pub fn server(&mut self, m: &Message, now: Instant, capture: &mut Capture) {
        let Some(msg) = from_server(m) else {
            self.incomplete = true;
            return;
        };
        match msg {
            FromServer::Auth(code) => {
                if code == 0 {
                    self.authenticated = true;
                }
            }
            FromServer::CommandComplete(_) => {
                if let Some(Pending::Run { portal, started }) = self.pop_run() {
                    self.done(&portal, started, now, capture);
                }
            }
            FromServer::EmptyQuery | FromServer::PortalSuspended => {
                self.pop_run();
            }
            FromServer::Error(_) => {
                // The failed request, and in extended protocol everything
                // up to the next Sync, is skipped by the server.
                while let Some(Pending::Run { .. }) = self.pending.front() {
                    self.pending.pop_front();
                }
                // An error ends copy-in: the next Sync is answered again.
                self.copying = false;
                if let Some(tx) = &mut self.tx {
                    tx.failed = true;
                }
            }
            FromServer::CopyIn => self.copy_in(),
            FromServer::Ready(status) => {
                while let Some(p) = self.pending.pop_front() {
                    if matches!(p, Pending::Sync | Pending::QueryEnd) {
                        break;
                    }
                }
                match status {
                    b'I' => {
                        if self.tx.is_some() {
                            let failed = self.tx.as_ref().is_some_and(|t| t.failed);
                            self.close(now, failed, capture);
                        }
                    }
                    b'T' | b'E' => {
                        let tx = self.open(now, None);
                        tx.failed |= status == b'E';
                    }
                    _ => self.incomplete = true,
                }
            }
            FromServer::Other(_) => {}
        }
    }

    /// The server entered copy-in mode (COPY ... FROM STDIN): the Sync
    /// messages the client sent from there to the end of its data are
    /// ignored by the server and get no ReadyForQuery. tokio-postgres sends
    /// one right after the COPY's Execute, and another after CopyDone:
    /// waiting for an answer to the first left every later answer on the
    /// connection matched with the wrong request.
    fn copy_in(&mut self) {
        // The COPY is the first request still waiting for its answer.
        let copy = self
            .pending
            .iter()
            .position(|p| matches!(p, Pending::Run { .. }))
            .unwrap_or(0);
        let end = self
            .pending
            .iter()
            .skip(copy)
            .position(|p| matches!(p, Pending::CopyEnd))
            .map(|i| i + copy);
        let upto = end.unwrap_or(self.pending.len());
        let mut kept = VecDeque::with_capacity(self.pending.len());
        for (i, p) in std::mem::take(&mut self.pending).into_iter().enumerate() {
            let ignored = i > copy && i < upto && matches!(p, Pending::Sync);
            if !ignored && Some(i) != end {
                kept.push_back(p);
            }
        }
        self.pending = kept;
        // Data not ended yet: its Syncs, and its end, are still to come.
        self.copying = end.is_none();
    }

    fn pop_run(&mut self) -> Option<Pending> {
        // A copy's end left where no copy-in began (the COPY failed first):
        // nothing answers it.
        while let Some(Pending::CopyEnd) = self.pending.front() {
            self.pending.pop_front();
        }
        match self.pending.front() {
            Some(Pending::Run { .. }) => self.pending.pop_front(),
            _ => {
                self.incomplete = true;
                None
            }
        }
    }

    fn open(&mut self, now: Instant, isolation: Option<String>) -> &mut Tx {
        self.tx.get_or_insert_with(|| Tx {
            started: now,
            last_end: now,
            runs: Vec::new(),
            values: Vec::new(),
            statements: 0,
            gaps: Vec::new(),
            isolation: isolation
                .or_else(|| self.settings.get("default_transaction_isolation").cloned()),
            role: None,
            local: BTreeMap::new(),
            local_values: BTreeMap::new(),
            failed: false,
            cut: false,
            opener: None,
            migration: false,
            recorded: false,
            emptied: false,
            literals: Literals::default(),
        })
    }

    /// The settings in effect with their values as set: the session's,
    /// then the transaction's own over them.
    fn values_in_effect(&self) -> Vec<(String, String)> {
        let mut v = self.values.clone();
        if let Some(tx) = &self.tx {
            v.extend(tx.local_values.iter().map(|(k, x)| (k.clone(), x.clone())));
        }
        v.into_iter().collect()
    }

    /// The effective role: the transaction's, else the session's, else the login.
    fn role(&self) -> &str {
        self.tx
            .as_ref()
            .and_then(|t| t.role.as_deref())
            .or(self.role.as_deref())
            .unwrap_or(&self.user)
    }

    /// Applies a SET, RESET or set_config to the session or its open
    /// transaction: whether the statement is recorded too (a set_config
    /// inside a SELECT in a transaction, which the application runs).
    fn apply_set(
        &mut self,
        portal: &Portal,
        name: &str,
        value: &Option<String>,
        local: &bool,
    ) -> bool {
        let p = &portal.prepared;
        let value_of = |v: &str| -> Option<String> {
            match v.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => portal.values.get(n.wrapping_sub(1)).cloned().flatten(),
                None => Some(v.to_string()),
            }
        };
        let name = if name.starts_with('$') {
            value_of(name).unwrap_or_default().to_ascii_lowercase()
        } else {
            name.to_string()
        };
        // A setting's value bound as a parameter is the request's (a
        // tenant, a user): kept as [`BOUND`], so the shape is the same
        // for every tenant and the value is left to the replay. A
        // role is always resolved.
        let resolved = value.as_deref().and_then(value_of);
        let value = match value.as_deref() {
            Some(v) if v.starts_with('$') && name != "role" => Some(BOUND.to_string()),
            _ => resolved.clone(),
        };
        // `SET ROLE none`, `RESET ROLE`, an empty set_config: the login.
        let is_role = name == "role" || name == "session_authorization";
        let value = value.filter(|v| !(v.is_empty() || is_role && v.eq_ignore_ascii_case("none")));
        let in_tx = self.tx.is_some();
        match (name.as_str(), local, &mut self.tx) {
            ("role", true, Some(tx)) => tx.role = value,
            ("role", _, _) => self.role = value,
            ("session_authorization", _, _) => self.role = value,
            (_, true, Some(tx)) => {
                keep(&mut tx.local_values, &name, value.is_some(), resolved);
                match value {
                    Some(v) => tx.local.insert(name, v),
                    None => tx.local.remove(&name),
                };
            }
            _ => {
                keep(&mut self.values, &name, value.is_some(), resolved);
                match value {
                    Some(v) => self.settings.insert(name, v),
                    None => self.settings.remove(&name),
                };
            }
        }
        // A set_config inside a SELECT is a statement of its own too
        // (the application runs it); a SET is not.
        if !p
            .raw
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("select")
            || !in_tx
        {
            return false;
        }
        true
    }

    /// A statement that completed.
    fn done(&mut self, portal: &Portal, started: Instant, now: Instant, capture: &mut Capture) {
        let p = &portal.prepared;
        match &p.meaning {
            Meaning::Begin { isolation } => {
                self.open(started, isolation.clone());
                if let Some(tx) = &mut self.tx {
                    tx.last_end = now;
                }
                return;
            }
            Meaning::Commit | Meaning::Rollback => {
                if let Some(tx) = &mut self.tx {
                    tx.gaps
                        .push(ms(started.saturating_duration_since(tx.last_end)));
                    tx.last_end = now;
                }
                let failed = matches!(p.meaning, Meaning::Rollback)
                    || self.tx.as_ref().is_some_and(|t| t.failed);
                self.close(now, failed, capture);
                return;
            }
            Meaning::Isolation(level) => {
                if let Some(tx) = &mut self.tx {
                    tx.isolation = Some(level.clone());
                }
                return;
            }
            Meaning::Set { name, value, local } => {
                if !self.apply_set(portal, name, value, local) {
                    return;
                }
            }
            Meaning::Other => {}
        }
        // A session that switched pg_stat_statements off for itself asked
        // not to be recorded: planck's own commands run by the command
        // (`planck seed` in a test script) do that.
        if self
            .settings
            .get("pg_stat_statements.track")
            .is_some_and(|v| v.eq_ignore_ascii_case("none"))
        {
            return;
        }
        if let Some(tx) = &mut self.tx {
            tx.migration |= p.migration;
            tx.recorded |= p.mark == Mark::HistoryWrite;
            tx.emptied |= p.mark == Mark::Truncate;
        }
        if matches!(p.mark, Mark::HistoryRead | Mark::HistoryWrite) && self.window.is_none() {
            self.window = Some(Window::default());
        }
        let known = capture.texts.len();
        let Some(id) = capture.text(&self.database, self.role(), &p.norm.text, &p.raw, p.params)
        else {
            // Past the texts kept: what it tells of the window still counts.
            if self.tx.is_none() {
                self.lone_mark(p.mark, capture);
            }
            return;
        };
        if capture.texts.len() > known {
            capture.texts[id as usize].settings = self.values_in_effect();
        }
        let value = |n: u32| -> Option<String> {
            match p.norm.literals.iter().find(|(m, _)| *m == n) {
                Some((_, v)) => Some(v.clone()),
                None => portal
                    .values
                    .get((n as usize).wrapping_sub(1))
                    .cloned()
                    .flatten(),
            }
        };
        // A transaction's literals wait for it to close, the window's for
        // it to end.
        let literals = match (&mut self.tx, &mut self.window) {
            (Some(t), _) => Some(&mut t.literals),
            (None, Some(w)) => Some(&mut w.literals),
            (None, None) => None,
        };
        capture.observe(id, portal.prepared_use, &value, literals);
        let Some(tx) = &mut self.tx else {
            capture.lone += 1;
            if let Some(w) = &mut self.window {
                *w.lone.entry(id).or_default() += 1;
                w.statements += 1;
            }
            self.lone_mark(p.mark, capture);
            return;
        };
        tx.gaps
            .push(ms(started.saturating_duration_since(tx.last_end)));
        tx.last_end = now;
        tx.statements += 1;
        // The opener is the first statement that is not a setting.
        if tx.opener.is_none() && matches!(p.meaning, Meaning::Other) {
            tx.opener = Some(id);
        }
        let full = tx.runs.len() >= shapes::MAX_RUNS;
        match tx.runs.last_mut() {
            Some((last, n)) if *last == id => *n += 1,
            _ if full => tx.cut = true,
            _ => tx.runs.push((id, 1)),
        }
        if tx.values.len() < shapes::MAX_BOUND_ITEMS {
            let mut values: Vec<(u32, String)> = p.norm.literals.clone();
            for (i, v) in portal.values.iter().enumerate() {
                if let Some(v) = v {
                    values.push((i as u32 + 1, v.clone()));
                }
            }
            tx.values.push(values);
        }
    }

    fn close(&mut self, now: Instant, failed: bool, capture: &mut Capture) {
        let Some(tx) = self.tx.take() else {
            return;
        };
        if tx.cut {
            self.incomplete = true;
        }
        let (unit, repeat) = shapes::fold(&tx.runs);
        // Bindings only where items are one statement each, in order.
        let binds =
            if repeat == 1 && unit.iter().all(|(_, n)| *n == 1) && tx.values.len() == tx.statements
            {
                bindings(&tx.values)
            } else {
                Vec::new()
            };
        let mut settings: Vec<Setting> = self
            .settings
            .iter()
            .filter(|(k, _)| {
                !tx.local.contains_key(*k) && k.as_str() != "default_transaction_isolation"
            })
            .map(|(k, v)| Setting {
                name: k.clone(),
                value: v.clone(),
                local: false,
            })
            .chain(tx.local.iter().map(|(k, v)| Setting {
                name: k.clone(),
                value: v.clone(),
                local: true,
            }))
            .collect();
        settings.sort();
        let role = tx
            .role
            .clone()
            .or_else(|| self.role.clone())
            .unwrap_or_else(|| self.user.clone());
        let duration = now.saturating_duration_since(tx.started);
        let closed = Closed {
            key: ShapeKey {
                database: self.database.clone(),
                role,
                isolation: tx.isolation.clone(),
                settings,
                outcome: if failed {
                    Outcome::Rollback
                } else {
                    Outcome::Commit
                },
                unit,
                repeat,
            },
            think_ms: shapes::median(&tx.gaps),
            binds,
            duration,
            statements: tx.statements,
            opener: tx.opener,
            migration: tx.migration,
        };
        let Some(w) = &mut self.window else {
            if !tx.migration {
                capture.literals.absorb(&tx.literals);
            }
            capture.close(closed);
            return;
        };
        // A migration's by its own statements is counted now; another waits
        // with the window.
        if tx.migration {
            capture.close(closed);
        } else {
            w.literals.absorb(&tx.literals);
            w.statements += tx.statements;
            w.closed.push(closed);
        }
        if tx.recorded {
            self.settle(capture);
        } else if failed || tx.emptied || w.statements >= MAX_HELD {
            self.flush(capture);
        }
    }

    /// What an autocommit statement's mark does to the window: a history
    /// write settles it, a TRUNCATE ends it, and so does one too many held.
    fn lone_mark(&mut self, mark: Mark, capture: &mut Capture) {
        let Some(w) = &self.window else {
            return;
        };
        if mark == Mark::HistoryWrite {
            self.settle(capture);
        } else if mark == Mark::Truncate || w.statements >= MAX_HELD {
            self.flush(capture);
        }
    }

    /// A migration was recorded: what the window held was its work (a
    /// statement also run elsewhere is still kept, see
    /// `record::leave_out_migrations`). The window stays open for the
    /// next migration.
    fn settle(&mut self, capture: &mut Capture) {
        let Some(w) = self.window.replace(Window::default()) else {
            return;
        };
        for (id, n) in w.lone {
            capture.migration_lone(id, n);
        }
        for mut c in w.closed {
            c.migration = true;
            capture.close(c);
        }
    }

    /// The window ends: what it held is the application's.
    fn flush(&mut self, capture: &mut Capture) {
        let Some(w) = self.window.take() else {
            return;
        };
        capture.literals.absorb(&w.literals);
        for c in w.closed {
            capture.close(c);
        }
    }

    /// The connection ended (or the relay closes it): an open transaction
    /// is not counted, the server rolls it back; the literals its
    /// statements compared columns with still count, unless it was a
    /// migration's. What an open build window held is the application's.
    pub fn end(&mut self, capture: &mut Capture) {
        if let Some(tx) = self.tx.take()
            && !tx.migration
        {
            capture.literals.absorb(&tx.literals);
        }
        self.flush(capture);
    }
}

/// Mirrors a setting's value as set into `values`: kept while the setting
/// is (`set`), with its value when known.
fn keep(values: &mut BTreeMap<String, String>, name: &str, set: bool, value: Option<String>) {
    match value.filter(|_| set) {
        Some(v) => values.insert(name.to_string(), v),
        None => values.remove(name),
    };
}

/// Every place a value reappears in a later statement, with each earlier
/// place it had: the calls of a shape keep the pairs every call had, so a
/// value that matched by chance (a small number) drops out.
fn bindings(values: &[Vec<(u32, String)>]) -> Vec<shapes::SeenBind> {
    let mut seen: HashMap<&str, Vec<(usize, u32)>> = HashMap::new();
    let mut out = Vec::new();
    for (item, vals) in values.iter().enumerate() {
        for (param, v) in vals {
            if let Some(places) = seen.get(v.as_str()) {
                out.extend(places.iter().filter(|(i, _)| *i < item).map(
                    |&(from_item, from_param)| shapes::SeenBind {
                        item,
                        param: *param,
                        from_item,
                        from_param,
                    },
                ));
            }
        }
        for (param, v) in vals {
            seen.entry(v.as_str()).or_default().push((item, *param));
        }
    }
    out.sort();
    out.dedup();
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::super::protocol::message;
    use super::*;

    fn cstr(s: &str) -> Vec<u8> {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    }

    fn msg(tag: u8, body: &[u8]) -> Message {
        Message {
            tag,
            body: body.to_vec(),
            cut: false,
        }
    }

    fn parse(name: &str, text: &str) -> Message {
        msg(b'P', &[cstr(name), cstr(text), vec![0, 0]].concat())
    }

    fn bind(portal: &str, stmt: &str, values: &[&str]) -> Message {
        let mut b = cstr(portal);
        b.extend(cstr(stmt));
        b.extend(0i16.to_be_bytes());
        b.extend((values.len() as i16).to_be_bytes());
        for v in values {
            b.extend((v.len() as i32).to_be_bytes());
            b.extend(v.as_bytes());
        }
        b.extend(0i16.to_be_bytes());
        msg(b'B', &b)
    }

    /// A shape as the tests compare it: texts, repeat, calls, outcome,
    /// role, settings.
    type Seen = (Vec<String>, u32, u64, Outcome, String, Vec<Setting>);

    struct Run {
        conn: Conn,
        cap: Capture,
        now: Instant,
    }

    impl Run {
        /// A connection past a password exchange.
        fn new() -> Run {
            let mut r = Run {
                conn: Conn::new("app", "shop"),
                cap: Capture::default(),
                now: Instant::now(),
            };
            r.s(b'R', &5i32.to_be_bytes());
            r.c(msg(b'p', b""));
            r.s(b'R', &0i32.to_be_bytes());
            assert!(r.conn.authenticated && !r.conn.incomplete);
            r
        }
        fn c(&mut self, m: Message) {
            self.now += Duration::from_millis(3);
            self.conn.client(&m, self.now);
        }
        fn s(&mut self, tag: u8, body: &[u8]) {
            self.now += Duration::from_millis(1);
            self.conn.server(&msg(tag, body), self.now, &mut self.cap);
        }
        fn query(&mut self, q: &str, answers: &[&str], status: u8) {
            self.c(msg(b'Q', &cstr(q)));
            for a in answers {
                self.s(b'C', &cstr(a));
            }
            self.s(b'Z', &[status]);
        }
        fn shapes(&self) -> Vec<Seen> {
            let mut v: Vec<_> = self
                .cap
                .shapes
                .iter()
                .map(|(k, s)| {
                    (
                        k.unit
                            .iter()
                            .map(|(i, n)| format!("{} x{n}", self.cap.texts[*i as usize].text))
                            .collect::<Vec<String>>(),
                        k.repeat,
                        s.calls,
                        k.outcome,
                        k.role.clone(),
                        k.settings.clone(),
                    )
                })
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        }
    }

    /// A session that switched pg_stat_statements off (planck's own, run by
    /// the command) is not recorded.
    #[test]
    fn an_untracked_session_is_not_recorded() {
        let mut r = Run::new();
        r.query("SELECT 1", &["SELECT 1"], b'I');
        r.query(
            "SET /* planck */ pg_stat_statements.track = 'none'",
            &["SET"],
            b'I',
        );
        r.query("SELECT 2", &["SELECT 1"], b'I');
        let texts: Vec<&str> = r.cap.texts.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["SELECT $1"]);
        assert_eq!(r.cap.texts[0].calls, 1);
    }

    #[test]
    fn a_simple_protocol_transaction_becomes_one_shape() {
        let mut r = Run::new();
        for aid in [5, 9] {
            r.query("BEGIN", &["BEGIN"], b'T');
            r.query(
                &format!(
                    "UPDATE a SET b = b + -3 WHERE aid = {aid}; SELECT b FROM a WHERE aid = {aid}"
                ),
                &["UPDATE 1", "SELECT 1"],
                b'T',
            );
            r.query("END", &["COMMIT"], b'I');
        }
        r.query("select 'lone'", &["SELECT 1"], b'I');
        assert_eq!(
            r.shapes(),
            vec![(
                vec![
                    "UPDATE a SET b = b + $1 WHERE aid = $2 x1".to_string(),
                    "SELECT b FROM a WHERE aid = $1 x1".to_string()
                ],
                1,
                2,
                Outcome::Commit,
                "app".to_string(),
                vec![]
            )]
        );
        let s = r.cap.shapes.values().next().unwrap();
        // aid reappears: the SELECT's $1 is the UPDATE's $2, every call.
        assert_eq!(
            s.binds.as_deref(),
            Some(
                &[shapes::SeenBind {
                    item: 1,
                    param: 1,
                    from_item: 0,
                    from_param: 2
                }][..]
            )
        );
        assert_eq!(r.cap.lone, 1);
        assert_eq!(r.cap.transactions, 2);
        assert!(!r.conn.incomplete);
    }

    #[test]
    fn extended_protocol_roles_settings_errors_and_loops() {
        let mut r = Run::new();
        r.c(parse("s1", "SELECT set_config('app.tenant', $1, true)"));
        r.c(parse("s2", "UPDATE t SET n = n + 1 WHERE id = $1"));
        r.query("SET ROLE app_user", &["SET"], b'I');
        r.query("BEGIN", &["BEGIN"], b'T');
        r.c(bind("", "s1", &["42"]));
        r.c(msg(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat()));
        r.c(msg(b'S', b""));
        r.s(b'C', &cstr("SELECT 1"));
        r.s(b'Z', b"T");
        for _ in 0..3 {
            r.c(bind("", "s2", &["7"]));
            r.c(msg(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat()));
            r.c(msg(b'S', b""));
            r.s(b'C', &cstr("UPDATE 1"));
            r.s(b'Z', b"T");
        }
        r.query("COMMIT", &["COMMIT"], b'I');
        // A failed transaction: kept apart as a rollback.
        r.query("BEGIN", &["BEGIN"], b'T');
        r.c(bind("", "s2", &["8"]));
        r.c(msg(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat()));
        r.c(msg(b'S', b""));
        r.s(b'C', &cstr("UPDATE 1"));
        r.s(b'Z', b"T");
        r.c(bind("", "s2", &["8"]));
        r.c(msg(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat()));
        r.c(bind("", "s2", &["9"]));
        r.c(msg(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat()));
        r.c(msg(b'S', b""));
        r.s(b'E', &[b'C', b'2', b'3', b'5', b'0', b'5', 0, 0]);
        r.s(b'Z', b"E");
        r.query("ROLLBACK", &["ROLLBACK"], b'I');
        let got = r.shapes();
        assert_eq!(got.len(), 2, "{got:#?}");
        let tenant = Setting {
            name: "app.tenant".into(),
            value: BOUND.into(),
            local: true,
        };
        assert_eq!(
            got[0],
            (
                vec![
                    "SELECT set_config($2, $1, true) x1".to_string(),
                    "UPDATE t SET n = n + $2 WHERE id = $1 x3".to_string()
                ],
                1,
                1,
                Outcome::Commit,
                "app_user".to_string(),
                vec![tenant]
            )
        );
        assert_eq!(
            (got[1].0.clone(), got[1].3),
            (
                vec!["UPDATE t SET n = n + $2 WHERE id = $1 x1".to_string()],
                Outcome::Rollback
            )
        );
        assert_eq!(r.cap.transactions, 2);
        assert!(!r.conn.incomplete);
        let _ = message(b'X', b"");
    }

    /// A FunctionCall (fast path) is answered by FunctionCallResponse and a
    /// ReadyForQuery of its own: a query pipelined after it keeps its answer.
    #[test]
    fn a_function_call_is_answered_by_its_own_ready_for_query() {
        let mut r = Run::new();
        r.c(msg(b'Q', &cstr("SELECT 1")));
        r.c(msg(b'F', &[0, 0, 0x0b, 0xe5, 0, 0, 0, 0, 0, 0]));
        r.c(msg(b'Q', &cstr("SELECT 2")));
        r.s(b'C', &cstr("SELECT 1"));
        r.s(b'Z', b"I");
        r.s(b'V', &(-1i32).to_be_bytes());
        r.s(b'Z', b"I");
        r.s(b'C', &cstr("SELECT 1"));
        r.s(b'Z', b"I");
        assert!(!r.conn.incomplete);
        assert_eq!(r.cap.lone, 2, "both SELECTs, each answered in its turn");
    }

    /// COPY ... FROM STDIN in extended protocol, as tokio-postgres sends
    /// it (Bind, Execute, Sync, then the data, CopyDone, Sync): the server
    /// ignores the first Sync (it is in copy-in mode) and answers once. The
    /// demo's fixture load did this eleven times in one transaction, and
    /// every later answer on the connection was matched with the wrong
    /// request. A COPY that fails before copy-in honours every Sync.
    #[test]
    fn copy_in_syncs_the_server_ignores_are_not_awaited() {
        let exec = || msg(b'E', &[cstr(""), vec![0, 0, 0, 0]].concat());
        let mut r = Run::new();
        r.c(parse("c1", "COPY t (a) FROM STDIN"));
        r.c(parse("s1", "UPDATE t SET a = a + 1 WHERE a = $1"));
        r.query("BEGIN", &["BEGIN"], b'T');
        for _ in 0..3 {
            r.c(bind("", "c1", &[]));
            r.c(exec());
            r.c(msg(b'S', b""));
            r.s(b'2', b"");
            r.s(b'G', &[0, 0, 0]);
            r.c(msg(b'd', b"1\n2\n"));
            r.c(msg(b'c', b""));
            r.c(msg(b'S', b""));
            r.s(b'C', &cstr("COPY 2"));
            r.s(b'Z', b"T");
        }
        // The data ended before the server's CopyInResponse reached the
        // relay (a client that writes it all at once).
        r.c(bind("", "c1", &[]));
        r.c(exec());
        r.c(msg(b'S', b""));
        r.c(msg(b'd', b"3\n"));
        r.c(msg(b'c', b""));
        r.c(msg(b'S', b""));
        r.s(b'2', b"");
        r.s(b'G', &[0, 0, 0]);
        r.s(b'C', &cstr("COPY 1"));
        r.s(b'Z', b"T");
        r.c(bind("", "s1", &["1"]));
        r.c(exec());
        r.c(msg(b'S', b""));
        r.s(b'C', &cstr("UPDATE 1"));
        r.s(b'Z', b"T");
        r.query("COMMIT", &["COMMIT"], b'I');
        assert!(!r.conn.incomplete);
        let got = r.shapes();
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(
            got[0].0,
            [
                "COPY t (a) FROM STDIN x4",
                "UPDATE t SET a = a + $2 WHERE a = $1 x1"
            ]
        );
        assert_eq!(got[0].3, Outcome::Commit);

        // A COPY refused at Bind: the server never enters copy-in mode, so
        // both Syncs are answered (the data in between it ignores).
        let mut r = Run::new();
        r.c(parse("c1", "COPY nope (a) FROM STDIN"));
        r.c(bind("", "c1", &[]));
        r.c(exec());
        r.c(msg(b'S', b""));
        r.s(b'E', &[b'C', b'4', b'2', b'P', b'0', b'1', 0, 0]);
        r.s(b'Z', b"I");
        r.c(msg(b'd', b"1\n"));
        r.c(msg(b'c', b""));
        r.c(msg(b'S', b""));
        r.s(b'Z', b"I");
        r.query("SELECT 1", &["SELECT 1"], b'I');
        assert!(!r.conn.incomplete);
        assert_eq!(r.cap.lone, 1, "the SELECT, answered in its turn");

        // The server fails the data mid-copy and the client syncs without
        // ending it, then pipelines a query: the error ended copy-in, so
        // that Sync is answered first, and the query after it.
        r.c(parse("q1", "SELECT $1::int"));
        r.c(bind("", "c1", &[]));
        r.c(exec());
        r.c(msg(b'S', b""));
        r.s(b'G', &[0, 0, 0]);
        r.c(msg(b'd', b"x\n"));
        r.s(b'E', &[b'C', b'2', b'2', b'P', b'0', b'2', 0, 0]);
        r.c(msg(b'S', b""));
        r.c(bind("", "q1", &["5"]));
        r.c(exec());
        r.c(msg(b'S', b""));
        r.s(b'Z', b"I");
        r.s(b'C', &cstr("SELECT 1"));
        r.s(b'Z', b"I");
        assert!(!r.conn.incomplete);
        assert_eq!(r.cap.lone, 2, "the pipelined SELECT, answered in its turn");
    }

    /// Issue 13, 6: a transaction with DDL or a bookkeeping write is a
    /// migration's: its shape is not written, a text run only there is
    /// migration-only, one run elsewhere too is not, and its literals do
    /// not reach `[observed]`.
    #[test]
    fn issue13_a_migrations_transaction_is_not_workload() {
        let mut r = Run::new();
        r.query("BEGIN", &["BEGIN"], b'T');
        r.query(
            "ALTER TABLE checks ADD COLUMN tz text",
            &["ALTER TABLE"],
            b'T',
        );
        r.query(
            "UPDATE checks SET tz = 'UTC' WHERE tz IS NULL",
            &["UPDATE 9"],
            b'T',
        );
        r.query("SELECT id FROM checks WHERE id = 1", &["SELECT 1"], b'T');
        r.query(
            "INSERT INTO schema_migrations (version) VALUES ('0002')",
            &["INSERT 0 1"],
            b'T',
        );
        r.query("COMMIT", &["COMMIT"], b'I');
        // The application: the same SELECT, and a write of the backfill's
        // shape on another table.
        r.query("SELECT id FROM checks WHERE id = 2", &["SELECT 1"], b'I');
        r.query("BEGIN", &["BEGIN"], b'T');
        r.query(
            "UPDATE pings SET kind = 'ign' WHERE kind IS NULL",
            &["UPDATE 1"],
            b'T',
        );
        r.query("COMMIT", &["COMMIT"], b'I');
        // What followed the migration's record waited in the build window
        // for another record; the session's end makes it the application's.
        r.conn.end(&mut r.cap);
        let id = |t: &str| r.cap.texts.iter().position(|x| x.text == t).unwrap() as u32;
        let backfill = id("UPDATE checks SET tz = $1 WHERE tz IS NULL");
        let select = id("SELECT id FROM checks WHERE id = $1");
        let work = id("UPDATE pings SET kind = $1 WHERE kind IS NULL");
        assert!(r.cap.migration_only(backfill));
        assert!(!r.cap.migration_only(select));
        assert!(!r.cap.migration_only(work));
        assert_eq!((r.cap.transactions, r.cap.migration_transactions), (2, 1));
        let shapes = r.shapes();
        assert_eq!(shapes.len(), 1, "{shapes:#?}");
        assert_eq!(
            shapes[0].0,
            vec!["UPDATE pings SET kind = $1 WHERE kind IS NULL x1".to_string()]
        );
        let observed = r.cap.literals.observed();
        assert!(
            !observed.columns.keys().any(|k| k.ends_with("checks.tz")),
            "{observed:?}"
        );
        assert!(
            observed.columns.keys().any(|k| k.ends_with("pings.kind")),
            "{observed:?}"
        );
    }

    /// The id of a text, by its normalized text.
    fn text_id(cap: &Capture, text: &str) -> u32 {
        cap.texts
            .iter()
            .position(|x| x.text == text)
            .unwrap_or_else(|| panic!("no text {text}")) as u32
    }

    /// Issue 47, 5: Django's test runner migrates on the connection it then
    /// runs the tests on. An `atomic = False` migration runs its data
    /// statements in autocommit (a transaction of its own without DDL, for
    /// a `transaction.atomic()` block in its RunPython), and only then
    /// records itself in django_migrations: they are the migration's, as
    /// is the atomic migration's whole transaction. The tests after the
    /// last record (a TestCase's transaction, rolled back; an autocommit
    /// statement) are the application's, and so are their literals.
    #[test]
    fn a_non_atomic_migrations_autocommit_statements_are_not_workload() {
        let mut r = Run::new();
        r.query(
            "SELECT \"django_migrations\".\"app\" FROM \"django_migrations\"",
            &["SELECT 0"],
            b'I',
        );
        r.query("BEGIN", &["BEGIN"], b'T');
        r.query(
            "CREATE TABLE forum_thread (id int)",
            &["CREATE TABLE"],
            b'T',
        );
        r.query(
            "INSERT INTO django_migrations (app, name) VALUES ('forum', '0001')",
            &["INSERT 0 1"],
            b'T',
        );
        r.query("COMMIT", &["COMMIT"], b'I');
        r.query(
            "UPDATE forum_thread SET last_post_id = (SELECT max(id) FROM forum_post p WHERE p.thread_id = forum_thread.id)",
            &["UPDATE 3"],
            b'I',
        );
        r.query(
            "UPDATE forum_attachment a SET category_id = p.category_id FROM forum_post p WHERE a.post_id = p.id AND p.kind = 'upload'",
            &["UPDATE 2"],
            b'I',
        );
        r.query("BEGIN", &["BEGIN"], b'T');
        r.query(
            "UPDATE forum_post SET likes = 0 WHERE likes IS NULL",
            &["UPDATE 1"],
            b'T',
        );
        r.query("COMMIT", &["COMMIT"], b'I');
        r.query(
            "INSERT INTO django_migrations (app, name) VALUES ('forum', '0002')",
            &["INSERT 0 1"],
            b'I',
        );
        // The tests.
        r.query("BEGIN", &["BEGIN"], b'T');
        r.query(
            "SELECT id FROM forum_thread WHERE category_id = 3",
            &["SELECT 1"],
            b'T',
        );
        r.query("ROLLBACK", &["ROLLBACK"], b'I');
        r.query(
            "SELECT id FROM forum_post WHERE kind = 'reply'",
            &["SELECT 1"],
            b'I',
        );
        r.conn.end(&mut r.cap);
        let cap = &r.cap;
        for t in [
            "UPDATE forum_thread SET last_post_id = (SELECT max(id) FROM forum_post p WHERE p.thread_id = forum_thread.id)",
            "UPDATE forum_attachment a SET category_id = p.category_id FROM forum_post p WHERE a.post_id = p.id AND p.kind = $1",
            "UPDATE forum_post SET likes = $1 WHERE likes IS NULL",
        ] {
            assert!(cap.migration_only(text_id(cap, t)), "{t}");
        }
        for t in [
            "SELECT id FROM forum_thread WHERE category_id = $1",
            "SELECT id FROM forum_post WHERE kind = $1",
        ] {
            assert!(!cap.migration_only(text_id(cap, t)), "{t}");
        }
        // Two migrations' transactions (the atomic one, the RunPython's
        // block) and the test's; the history read, the two data statements
        // and the second record were the migrations' autocommit statements.
        assert_eq!((cap.transactions, cap.migration_transactions), (3, 2));
        assert_eq!((cap.lone, cap.migration_lone), (5, 4));
        let shapes = r.shapes();
        assert_eq!(shapes.len(), 1, "{shapes:#?}");
        assert_eq!(
            shapes[0].0,
            ["SELECT id FROM forum_thread WHERE category_id = $1 x1"]
        );
        // The test's literals reach `[observed]`, the migration's do not.
        let observed = cap.literals.observed();
        let values = |column: &str| -> Vec<String> {
            observed
                .columns
                .iter()
                .filter(|(k, _)| k.ends_with(column))
                .flat_map(|(_, c)| c.values.keys().cloned())
                .collect()
        };
        assert_eq!(values("forum_post.kind"), ["reply"], "{observed:?}");
        assert_eq!(values("forum_thread.category_id"), ["3"], "{observed:?}");
    }

    /// Issue 47, 5: a schema change alone never reaches back. A test that
    /// creates a table of its own (temporary or not) keeps what its
    /// session ran before and after, and a session that never touched a
    /// history table has no window at all.
    #[test]
    fn a_tests_own_schema_change_keeps_its_sessions_statements() {
        let mut r = Run::new();
        r.query(
            "SELECT id FROM forum_thread WHERE id = 1",
            &["SELECT 1"],
            b'I',
        );
        r.query("BEGIN", &["BEGIN"], b'T');
        r.query(
            "UPDATE forum_thread SET likes = 2 WHERE id = 1",
            &["UPDATE 1"],
            b'T',
        );
        r.query("COMMIT", &["COMMIT"], b'I');
        r.query("CREATE TEMP TABLE ids (id int)", &["CREATE TABLE"], b'I');
        r.query(
            "CREATE TABLE scratch_model (id int)",
            &["CREATE TABLE"],
            b'I',
        );
        r.query(
            "SELECT id FROM forum_post WHERE id = 2",
            &["SELECT 1"],
            b'I',
        );
        assert!(r.conn.window.is_none());
        r.conn.end(&mut r.cap);
        let cap = &r.cap;
        for t in [
            "SELECT id FROM forum_thread WHERE id = $1",
            "UPDATE forum_thread SET likes = $1 WHERE id = $2",
            "SELECT id FROM forum_post WHERE id = $1",
        ] {
            assert!(!cap.migration_only(text_id(cap, t)), "{t}");
        }
        assert_eq!((cap.migration_transactions, cap.migration_lone), (0, 0));
        assert_eq!(r.shapes().len(), 1);
    }

    /// Issue 47, 5: a test runner's isolation ends the window. A session
    /// that read a history table (a check for pending migrations) then ran
    /// tests, each rolled back or followed by a TRUNCATE, and then a test
    /// that migrates: only what that migration ran before its record is
    /// the migration's. So is it when the window held [`MAX_HELD`]
    /// statements without a record.
    #[test]
    fn a_rollback_a_truncate_or_too_many_statements_end_the_window() {
        let record = |r: &mut Run, name: &str| {
            r.query(
                &format!("INSERT INTO schema_migrations (version) VALUES ('{name}')"),
                &["INSERT 0 1"],
                b'I',
            );
        };
        let read = |r: &mut Run| {
            r.query(
                "SELECT version FROM schema_migrations ORDER BY version",
                &["SELECT 1"],
                b'I',
            );
        };
        let mut r = Run::new();
        read(&mut r);
        r.query("SELECT id FROM a WHERE id = 1", &["SELECT 1"], b'I');
        r.query("BEGIN", &["BEGIN"], b'T');
        r.query("SELECT id FROM b WHERE id = 1", &["SELECT 1"], b'T');
        r.query("ROLLBACK", &["ROLLBACK"], b'I');
        read(&mut r);
        r.query("UPDATE d SET n = 0", &["UPDATE 1"], b'I');
        record(&mut r, "1");
        r.query("SELECT id FROM c WHERE id = 1", &["SELECT 1"], b'I');
        r.query("TRUNCATE c", &["TRUNCATE TABLE"], b'I');
        read(&mut r);
        r.query("UPDATE g SET n = 0", &["UPDATE 1"], b'I');
        record(&mut r, "2");
        // A window that held too many ends; the next read opens another.
        for _ in 0..MAX_HELD {
            r.query("SELECT id FROM e WHERE id = 1", &["SELECT 1"], b'I');
        }
        read(&mut r);
        r.query("UPDATE f SET n = 0", &["UPDATE 1"], b'I');
        record(&mut r, "3");
        r.conn.end(&mut r.cap);
        let cap = &r.cap;
        for t in [
            "SELECT id FROM a WHERE id = $1",
            "SELECT id FROM b WHERE id = $1",
            "SELECT id FROM c WHERE id = $1",
            "SELECT id FROM e WHERE id = $1",
        ] {
            assert!(!cap.migration_only(text_id(cap, t)), "{t}");
        }
        for t in [
            "UPDATE d SET n = $1",
            "UPDATE g SET n = $1",
            "UPDATE f SET n = $1",
        ] {
            assert!(cap.migration_only(text_id(cap, t)), "{t}");
        }
        assert_eq!(cap.migration_transactions, 0);
    }

    #[test]
    fn unknown_messages_mark_the_connection_without_a_panic() {
        let mut r = Run::new();
        r.c(msg(b'~', b"junk"));
        assert!(r.conn.incomplete);
        let mut r = Run::new();
        r.c(bind("", "never-parsed", &[]));
        r.s(b'C', &cstr("SELECT 1"));
        assert!(r.conn.incomplete);
    }
}
