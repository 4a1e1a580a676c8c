//! Replay's hot path: a prepared statement executed on the connection's
//! lent socket ([`crate::db::lent`]), Bind, Execute and Sync in one write
//! and the reply read until ReadyForQuery, rows counted and never built.
//! tokio-postgres sends a request through a channel to the connection task
//! and the reply back through another, and learns that a reply is there
//! from the runtime's poll; here the reply is read as soon as it arrives,
//! often straight after the write, as pgbench does. A unit's BEGIN and
//! transaction-level settings go in the same write as its first statement,
//! and its ROLLBACK in the one of its last ([`Frame`]), so planck's safety
//! costs no round trip of its own, and a COMMIT (or a ROLLBACK that could
//! not go with a statement) is a simple query on the same socket
//! ([`Lean::simple`]). Everything else on the connection (the role and
//! session settings, statements whose results a later one binds) still goes
//! through tokio-postgres.

use std::io;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::message::{backend, frontend};
use tokio::net::TcpStream;

use crate::db::lent::Lender;

/// How a lean execution failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeanError {
    /// The server's error (its SQLSTATE and message); the connection is fine.
    Db { code: String, message: String },
    /// The connection broke: reconnect.
    Lost(String),
}

/// One connection's lent socket and what it prepared on it.
pub struct Lean {
    lender: Lender,
    /// Replies read and not yet parsed.
    buf: BytesMut,
    out: BytesMut,
    /// By statement index: prepared on this socket (`planck_lean_<i>`).
    prepared: Vec<bool>,
    /// By statement index: the prepared statement's name, made once.
    names: Vec<String>,
}

impl Lean {
    pub fn new(lender: Lender) -> Lean {
        Lean {
            lender,
            buf: BytesMut::with_capacity(8192),
            out: BytesMut::with_capacity(512),
            prepared: Vec::new(),
            names: Vec::new(),
        }
    }

    /// Executes statement `s` (prepared on first use) with `values` as text
    /// (`None`: NULL): the rows it returned or affected.
    pub async fn execute(
        &mut self,
        s: usize,
        sql: &str,
        values: impl Iterator<Item = Option<&str>>,
    ) -> Result<u64, LeanError> {
        self.execute_framed(s, sql, values, &Frame::default()).await
    }

    /// [`Lean::execute`] with what planck sends around the statement in the
    /// same write (one round trip for all of it): `frame.begin` as a simple
    /// query before it, `frame.settings` as one `set_config(.., true)` in the
    /// same extended-protocol batch (skipped with the statement when it
    /// fails), and `frame.end` as a simple query after its Sync. The first
    /// error of any of them is the result.
    pub async fn execute_framed(
        &mut self,
        s: usize,
        sql: &str,
        values: impl Iterator<Item = Option<&str>>,
        frame: &Frame<'_>,
    ) -> Result<u64, LeanError> {
        while self.names.len() <= s {
            self.names.push(format!("planck_lean_{}", self.names.len()));
        }
        let name = &self.names[s];
        self.out.clear();
        if let Some(b) = frame.begin {
            frontend::query(b, &mut self.out)
                .map_err(|e| LeanError::Lost(format!("encoding {b}: {e}")))?;
        }
        if !frame.settings.is_empty() {
            let text = crate::session::settings_sql(frame.settings.len());
            frontend::parse("", &text, std::iter::empty(), &mut self.out)
                .map_err(|e| LeanError::Lost(format!("encoding {text}: {e}")))?;
            let flat: Vec<&str> = frame
                .settings
                .iter()
                .flat_map(|(k, v)| [k.as_str(), v.as_str()])
                .collect();
            frontend::bind(
                "",
                "",
                flat.iter().map(|_| 0),
                flat.iter(),
                |v, out| {
                    out.extend_from_slice(v.as_bytes());
                    Ok(IsNull::No)
                },
                [1],
                &mut self.out,
            )
            .map_err(|_| LeanError::Lost("encoding the settings".into()))?;
            frontend::execute("", 0, &mut self.out)
                .map_err(|e| LeanError::Lost(format!("encoding {text}: {e}")))?;
        }
        let fresh = !self.prepared.get(s).copied().unwrap_or(false);
        if fresh {
            frontend::parse(name, sql, std::iter::empty(), &mut self.out)
                .map_err(|e| LeanError::Lost(format!("encoding {sql}: {e}")))?;
        }
        let values: Vec<Option<&str>> = values.collect();
        frontend::bind(
            "",
            name,
            values.iter().map(|_| 0),
            values.iter(),
            |v, out| match v {
                None => Ok(IsNull::Yes),
                Some(t) => {
                    out.extend_from_slice(t.as_bytes());
                    Ok(IsNull::No)
                }
            },
            // Binary results: cheaper for the server to send (they are
            // counted, not read), as tokio-postgres asks for them.
            [1],
            &mut self.out,
        )
        .map_err(|_| LeanError::Lost(format!("encoding the parameters of {sql}")))?;
        frontend::execute("", 0, &mut self.out)
            .map_err(|e| LeanError::Lost(format!("encoding {sql}: {e}")))?;
        frontend::sync(&mut self.out);
        if let Some(e) = frame.end {
            frontend::query(e, &mut self.out)
                .map_err(|x| LeanError::Lost(format!("encoding {e}: {x}")))?;
        }
        // One ReadyForQuery per simple query and one for the Sync; the
        // settings' reply (one row, one CommandComplete) comes before the
        // statement's, inside the Sync's.
        let last_phase = 1 + usize::from(frame.end.is_some());
        let mut phase = usize::from(frame.begin.is_none());
        let mut settings_left = !frame.settings.is_empty();
        let mut parses_left = usize::from(!frame.settings.is_empty()) + usize::from(fresh);
        let mut done_statement = false;
        let loan = self.lender.lend().await;
        let io = loan.socket();
        write_all(io, &self.out).await.map_err(lost)?;
        let mut rows = 0u64;
        let mut affected = None;
        let mut failed = None;
        loop {
            while let Some(m) = backend::Message::parse(&mut self.buf).map_err(lost)? {
                let counts = phase == 1 && !settings_left && !done_statement;
                match m {
                    backend::Message::DataRow(_) if counts => rows += 1,
                    backend::Message::CommandComplete(c) if counts => {
                        let tag = c.tag().map_err(lost)?;
                        affected = tag.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok());
                        done_statement = true;
                    }
                    backend::Message::CommandComplete(_) if phase == 1 && settings_left => {
                        settings_left = false;
                    }
                    backend::Message::ErrorResponse(body) => {
                        failed = failed.or(Some(db_error(&body)));
                    }
                    // Prepared, whatever becomes of the execution (the
                    // statement's Parse is the last one of the batch).
                    backend::Message::ParseComplete => {
                        parses_left = parses_left.saturating_sub(1);
                        if fresh && parses_left == 0 {
                            if self.prepared.len() <= s {
                                self.prepared.resize(s + 1, false);
                            }
                            self.prepared[s] = true;
                        }
                    }
                    // COPY FROM STDIN: replay has no data to send. The
                    // server ignored the Sync sent with the execution (it
                    // was in copy-in mode), so fail the copy and sync again:
                    // it answers with an error and ReadyForQuery.
                    backend::Message::CopyInResponse(_) => {
                        self.out.clear();
                        frontend::copy_fail("planck replay sends no COPY data", &mut self.out)
                            .map_err(lost)?;
                        frontend::sync(&mut self.out);
                        write_all(io, &self.out).await.map_err(lost)?;
                    }
                    backend::Message::ReadyForQuery(_) => {
                        if phase == last_phase {
                            return match failed {
                                Some(e) => Err(e),
                                None => Ok(affected.unwrap_or(rows)),
                            };
                        }
                        phase += 1;
                    }
                    // BindComplete, notices, a setting's new
                    // value, a notification: nothing replay keeps.
                    _ => {}
                }
            }
            read_some(io, &mut self.buf).await.map_err(lost)?;
        }
    }
}

impl Lean {
    /// Sends `sql` as one simple query (a unit's COMMIT or ROLLBACK) and
    /// reads its reply to ReadyForQuery: the first error is the result. On
    /// the lent socket like the statements, so ending a unit does not hand
    /// the socket back to tokio-postgres's connection task and wait for it.
    pub async fn simple(&mut self, sql: &str) -> Result<(), LeanError> {
        self.out.clear();
        frontend::query(sql, &mut self.out)
            .map_err(|e| LeanError::Lost(format!("encoding {sql}: {e}")))?;
        let loan = self.lender.lend().await;
        let io = loan.socket();
        write_all(io, &self.out).await.map_err(lost)?;
        let mut failed = None;
        loop {
            while let Some(m) = backend::Message::parse(&mut self.buf).map_err(lost)? {
                match m {
                    backend::Message::ErrorResponse(body) => {
                        failed = failed.or(Some(db_error(&body)));
                    }
                    backend::Message::ReadyForQuery(_) => {
                        return failed.map_or(Ok(()), Err);
                    }
                    _ => {}
                }
            }
            read_some(io, &mut self.buf).await.map_err(lost)?;
        }
    }
}

/// What planck sends with a lean execution, in the same write.
#[derive(Debug, Clone, Copy, Default)]
pub struct Frame<'a> {
    /// A simple query before the statement (`BEGIN READ WRITE`).
    pub begin: Option<&'a str>,
    /// Transaction-level settings, set with the statement (names, values).
    pub settings: &'a [(String, String)],
    /// A simple query after it (`ROLLBACK`).
    pub end: Option<&'a str>,
}

fn lost(e: io::Error) -> LeanError {
    LeanError::Lost(e.to_string())
}

/// The SQLSTATE and message of an ErrorResponse.
fn db_error(body: &backend::ErrorResponseBody) -> LeanError {
    let (mut code, mut message) = (String::from("XX000"), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    LeanError::Db { code, message }
}

async fn write_all(io: &TcpStream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        match io.try_write(data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => io.writable().await?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads what the server sent, once the runtime says the socket is
/// readable. (Reading straight after the write, before the runtime's poll,
/// measured slower: the reply is rarely there yet, and the failed read
/// costs a system call.)
async fn read_some(io: &TcpStream, buf: &mut BytesMut) -> io::Result<()> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(8192);
    }
    loop {
        io.readable().await?;
        match io.try_read_buf(buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => return Ok(()),
            // The readiness was stale: try_read cleared it.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}
