//! The relay's reading, on a thread of its own. The relay thread forwards
//! each chunk first and appends a copy here; the analyst frames, lexes and
//! captures the copies in the order the relay saw them, off the path of the
//! round trip (a relayed round trip then costs what forwarding costs, not
//! forwarding plus lexing). It wakes at most once a millisecond under load
//! and sleeps while nothing arrives; the queue is bounded, and a relay that
//! fills it waits for the analyst (the run slows, nothing is dropped).
//!
//! The queue holds its events encoded, one after the other in one buffer
//! (a tag byte, the fields little-endian, a chunk's bytes after its length):
//! appending one costs a copy, and the buffer is what a relay running as a
//! process of its own ([`super::own_process`]) writes down a pipe to the
//! process that started it ([`Analyst::piped`]), which reads it there
//! ([`receive`]) as the analyst here reads its queue.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::protocol::{Decoder, Side};
use super::session::Conn;
use super::shapes::{Capture, REFUSALS};

/// The most bytes the queue holds before the relay waits for the analyst.
const LIMIT: usize = 32 * 1024 * 1024;

/// How long the analyst lets a busy queue fill before it takes it again.
const PAUSE: Duration = Duration::from_millis(1);

/// What a relay of its own process gathers before it sends it on, and the
/// most it holds. A test suite's traffic usually fits: then nothing is
/// sent, read or even woken for until the command is done, and the command
/// runs beside a relay that only forwards and copies (the reading takes
/// the time after it). A run that sends more is sent and read in batches
/// of this size meanwhile.
const PIPED_BATCH: usize = 32 * 1024 * 1024;
const PIPED_LIMIT: usize = PIPED_BATCH + PIPED_BATCH / 2;

/// A decoded event of the queue.
enum Event {
    Open {
        id: u64,
        user: String,
        database: String,
    },
    /// A chunk from one side of connection `id` (its bytes beside it).
    Chunk {
        id: u64,
        side: Side,
        at: Instant,
    },
    Close {
        id: u64,
        left_open: bool,
    },
    /// A connection refused, by why (one of [`REFUSALS`]).
    Refused(&'static str),
    /// A startup packet refused, with the reason.
    StartupRefused(String),
}

#[derive(Default)]
struct Queue {
    /// The events, encoded.
    bytes: Vec<u8>,
    /// The analyst sleeps until the next event (the queue was empty).
    idle: bool,
    /// The relay waits for the analyst to take the queue (it was full).
    full: bool,
    finished: bool,
}

struct Shared {
    /// The most bytes the queue holds ([`LIMIT`], less in tests).
    limit: usize,
    /// The bytes the queue gathers before the analyst takes it: none for
    /// the reading here, [`PIPED_BATCH`] for a pipe.
    batch: usize,
    /// What the chunks' times are counted from.
    epoch: Instant,
    queue: Mutex<Queue>,
    /// Wakes the analyst: the first event after it went idle, or the end.
    arrived: Condvar,
    /// Wakes the relay that waits for room.
    taken: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The analyst's thread, owned by the relay's main task.
pub(crate) struct Analyst {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What a connection's task hands the analyst through.
#[derive(Clone)]
pub(crate) struct Feed {
    shared: Arc<Shared>,
}

impl Analyst {
    /// Starts the analyst's thread, which writes into `capture`.
    pub(crate) fn start(capture: Arc<Mutex<Capture>>) -> std::io::Result<Analyst> {
        Analyst::with_limit(capture, LIMIT)
    }

    fn with_limit(capture: Arc<Mutex<Capture>>, limit: usize) -> std::io::Result<Analyst> {
        Analyst::spawn(limit, 0, Vec::new(), move |shared| {
            let mut reading = Reading::default();
            let mut data = Vec::new();
            drain(shared, |mut bytes| {
                let mut cap = capture.lock().unwrap_or_else(|e| e.into_inner());
                // The queue is this process's own encoding: it decodes.
                while let Ok(Some(e)) = decode(&mut bytes, shared.epoch, &mut data) {
                    reading.read(e, &data, &mut cap);
                }
            });
            reading.end(&mut capture.lock().unwrap_or_else(|e| e.into_inner()));
        })
    }

    /// Starts the thread that sends the queue down `out`, for [`receive`]
    /// to read in the process that started this relay: in batches of
    /// [`PIPED_BATCH`], and the rest at the end. Once `out` fails (that
    /// process is gone), the batches are dropped: the relay is being
    /// stopped anyway, and must not wait for room.
    ///
    /// The queue's buffer is allocated and written once here, before any
    /// connection: on a busy machine, and more so in a virtual one, a page
    /// first touched is a fault that costs the workload the relay serves,
    /// a thousand times over as the buffer grows (measured in
    /// docs/performance.md).
    pub(crate) fn piped(mut out: impl Write + Send + 'static) -> std::io::Result<Analyst> {
        let mut buffer = Vec::new();
        // Room past the limit for the chunk that crosses it.
        buffer.resize(PIPED_LIMIT + (1 << 20), 1u8);
        buffer.clear();
        Analyst::spawn(PIPED_LIMIT, PIPED_BATCH, buffer, move |shared| {
            let mut broken = false;
            drain(shared, |bytes| {
                broken = broken || out.write_all(bytes).and_then(|()| out.flush()).is_err();
            });
        })
    }

    fn spawn(
        limit: usize,
        batch: usize,
        buffer: Vec<u8>,
        run: impl FnOnce(&Shared) + Send + 'static,
    ) -> std::io::Result<Analyst> {
        let shared = Arc::new(Shared {
            limit,
            batch,
            epoch: Instant::now(),
            queue: Mutex::new(Queue {
                bytes: buffer,
                ..Queue::default()
            }),
            arrived: Condvar::new(),
            taken: Condvar::new(),
        });
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("planck-relay-read".into())
            .spawn(move || {
                yield_to_the_workload();
                run(&theirs)
            })?;
        Ok(Analyst {
            shared,
            thread: Some(thread),
        })
    }

    pub(crate) fn feed(&self) -> Feed {
        Feed {
            shared: self.shared.clone(),
        }
    }

    /// Waits until everything queued is read into the capture (or sent).
    pub(crate) fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        {
            let mut q = self.shared.lock();
            q.finished = true;
            self.shared.arrived.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Analyst {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Appends a string or a chunk: its length, then its bytes.
pub(crate) fn put_bytes(out: &mut Vec<u8>, s: &[u8]) {
    out.extend((s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

impl Feed {
    fn push(&self, encode: impl FnOnce(&mut Vec<u8>)) {
        let mut q = self.shared.lock();
        encode(&mut q.bytes);
        if q.idle && q.bytes.len() >= self.shared.batch {
            q.idle = false;
            self.shared.arrived.notify_one();
        }
        while q.bytes.len() > self.shared.limit && !q.finished {
            q.full = true;
            self.shared.arrived.notify_one();
            q = self.shared.taken.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub(crate) fn open(&self, id: u64, user: &str, database: &str) {
        self.push(|out| {
            out.push(b'O');
            out.extend(id.to_le_bytes());
            put_bytes(out, user.as_bytes());
            put_bytes(out, database.as_bytes());
        });
    }

    /// A chunk as it was forwarded, stamped now.
    pub(crate) fn chunk(&self, id: u64, side: Side, data: &[u8]) {
        let nanos = Instant::now()
            .saturating_duration_since(self.shared.epoch)
            .as_nanos() as u64;
        self.push(|out| {
            out.push(b'C');
            out.extend(id.to_le_bytes());
            out.push(u8::from(matches!(side, Side::Server)));
            out.extend(nanos.to_le_bytes());
            put_bytes(out, data);
        });
    }

    pub(crate) fn close(&self, id: u64, left_open: bool) {
        self.push(|out| {
            out.push(b'X');
            out.extend(id.to_le_bytes());
            out.push(u8::from(left_open));
        });
    }

    /// A connection the relay refused (`what`: one of [`REFUSALS`]).
    pub(crate) fn refused(&self, what: &'static str) {
        let i = REFUSALS.iter().position(|r| *r == what).unwrap_or(0) as u8;
        self.push(|out| out.extend([b'R', i]));
    }

    /// A startup packet the relay could not frame, and why.
    pub(crate) fn startup_refused(&self, reason: &str) {
        self.push(|out| {
            out.push(b'S');
            put_bytes(out, reason.as_bytes());
        });
    }
}

/// Lowers the calling thread's priority to the least (nice 19): the
/// command being recorded (its clients, and a local server's backends) goes
/// first, the reading takes the time they leave. A machine that never
/// leaves any fills the queue, and the relay then waits for the reading
/// (see [`LIMIT`]). Best effort: where it is refused, the thread runs as is.
/// On Linux a nice value is the thread's own, and `setpriority` of "the
/// calling process" sets the calling thread's.
pub(crate) fn yield_to_the_workload() {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::setpriority_process(None, 19);
}

/// The analyst's thread: takes the whole queue at a time and hands it to
/// `take`, until the relay finishes.
fn drain(shared: &Shared, mut take: impl FnMut(&[u8])) {
    let mut bytes = Vec::new();
    loop {
        let finished = {
            let mut q = shared.lock();
            while (q.bytes.is_empty() || q.bytes.len() < shared.batch) && !q.finished {
                q.idle = true;
                q = shared.arrived.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            q.idle = false;
            std::mem::swap(&mut q.bytes, &mut bytes);
            if q.full {
                q.full = false;
                shared.taken.notify_all();
            }
            q.finished && bytes.is_empty()
        };
        if finished {
            break;
        }
        take(&bytes);
        bytes.clear();
        // Under load, let the next batch gather instead of waking per chunk.
        if shared.batch == 0 {
            std::thread::sleep(PAUSE);
        }
    }
}

/// What the events of every connection became so far.
#[derive(Default)]
struct Reading {
    readers: HashMap<u64, Reader>,
}

impl Reading {
    /// Reads one event (`data`: a chunk's bytes).
    fn read(&mut self, e: Event, data: &[u8], cap: &mut Capture) {
        match e {
            Event::Open { id, user, database } => {
                self.readers.insert(id, Reader::new(&user, &database));
            }
            Event::Chunk { id, side, at } => {
                if let Some(r) = self.readers.get_mut(&id) {
                    match side {
                        Side::Client => r.client(data, at),
                        Side::Server => r.server(data, at, cap),
                    }
                }
            }
            Event::Close { id, left_open } => {
                if let Some(r) = self.readers.remove(&id) {
                    r.close(cap, left_open);
                }
            }
            Event::Refused(what) => *cap.refused.entry(what).or_default() += 1,
            Event::StartupRefused(reason) => cap.refuse_startup(&reason),
        }
    }

    /// The relay closes every connection before it finishes; a reader left
    /// here would be a connection whose end never came.
    fn end(mut self, cap: &mut Capture) {
        for (_, r) in self.readers.drain() {
            r.close(cap, true);
        }
    }
}

/// Reads what [`Analyst::piped`] sent until the pipe ends: the capture of
/// a relay that ran as a process of its own. Its times are offsets from
/// the relay's start, placed after `epoch` (only their differences count).
pub(crate) fn receive(input: impl Read, epoch: Instant) -> std::io::Result<Capture> {
    let mut input = std::io::BufReader::with_capacity(256 * 1024, input);
    let mut cap = Capture::default();
    let mut reading = Reading::default();
    let mut data = Vec::new();
    while let Some(e) = decode(&mut input, epoch, &mut data)? {
        reading.read(e, &data, &mut cap);
    }
    reading.end(&mut cap);
    Ok(cap)
}

/// Reads what [`put_bytes`] appended into `into`.
pub(crate) fn read_bytes(input: &mut impl Read, into: &mut Vec<u8>) -> std::io::Result<()> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    into.clear();
    input.take(len as u64).read_to_end(into)?;
    if into.len() < len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// The next event of `input`, a chunk's bytes in `data`; `None` at its end.
fn decode(
    input: &mut impl Read,
    epoch: Instant,
    data: &mut Vec<u8>,
) -> std::io::Result<Option<Event>> {
    fn u64_of(input: &mut impl Read) -> std::io::Result<u64> {
        let mut b = [0u8; 8];
        input.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn u8_of(input: &mut impl Read) -> std::io::Result<u8> {
        let mut b = [0u8; 1];
        input.read_exact(&mut b)?;
        Ok(b[0])
    }
    fn text_of(input: &mut impl Read) -> std::io::Result<String> {
        let mut v = Vec::new();
        read_bytes(input, &mut v)?;
        Ok(String::from_utf8_lossy(&v).into_owned())
    }
    let mut tag = [0u8; 1];
    loop {
        match input.read(&mut tag) {
            Ok(0) => return Ok(None),
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let bad = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    Ok(Some(match tag[0] {
        b'O' => Event::Open {
            id: u64_of(input)?,
            user: text_of(input)?,
            database: text_of(input)?,
        },
        b'C' => {
            let id = u64_of(input)?;
            let side = if u8_of(input)? == 1 {
                Side::Server
            } else {
                Side::Client
            };
            let at = epoch + Duration::from_nanos(u64_of(input)?);
            read_bytes(input, data)?;
            Event::Chunk { id, side, at }
        }
        b'X' => Event::Close {
            id: u64_of(input)?,
            left_open: u8_of(input)? == 1,
        },
        b'R' => {
            let i = u8_of(input)?;
            Event::Refused(
                REFUSALS
                    .get(usize::from(i))
                    .ok_or_else(|| bad(format!("refusal {i}")))?,
            )
        }
        b'S' => Event::StartupRefused(text_of(input)?),
        other => return Err(bad(format!("event tag {other}"))),
    }))
}

/// What one connection's bytes became: its statements and transactions,
/// and where each direction's framing is.
struct Reader {
    conn: Conn,
    client: Decoder,
    server: Decoder,
}

impl Reader {
    fn new(user: &str, database: &str) -> Reader {
        Reader {
            conn: Conn::new(user, database),
            client: Decoder::new(Side::Client),
            server: Decoder::new(Side::Server),
        }
    }

    /// The connection ended (`left_open`: the relay closed it at the end).
    fn close(self, capture: &mut Capture, left_open: bool) {
        let mut c = self.conn;
        c.end(capture);
        capture.connections += 1;
        capture.left_open += u64::from(left_open);
        if c.incomplete {
            capture.incomplete += 1;
        }
        if c.authenticated {
            *capture.databases.entry(c.database.clone()).or_default() += 1;
        }
    }

    fn client(&mut self, bytes: &[u8], now: Instant) {
        if self.client.broken() {
            return;
        }
        let conn = &mut self.conn;
        self.client.authenticating = !conn.authenticated;
        self.client.feed(bytes, &mut |m| conn.client(&m, now));
        conn.incomplete |= self.client.broken();
    }

    fn server(&mut self, bytes: &[u8], now: Instant, capture: &mut Capture) {
        if self.server.broken() {
            return;
        }
        let conn = &mut self.conn;
        self.server
            .feed(bytes, &mut |m| conn.server(&m, now, capture));
        conn.incomplete |= self.server.broken();
    }
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

    /// Connection `id` as the relay hands it over: authenticated, then
    /// `statements` simple queries, each with its answer, then its end.
    fn connection(feed: &Feed, id: u64, statements: u32, left_open: bool) {
        feed.open(id, "app", "shop");
        feed.chunk(id, Side::Server, &message(b'R', &0i32.to_be_bytes()));
        for i in 0..statements {
            let q = format!("SELECT * FROM items WHERE id = {i}");
            feed.chunk(id, Side::Client, &message(b'Q', &cstr(&q)));
            let mut answer = message(b'C', &cstr("SELECT 1"));
            answer.extend(message(b'Z', b"I"));
            feed.chunk(id, Side::Server, &answer);
        }
        feed.close(id, left_open);
    }

    /// A queue smaller than one chunk: every chunk waits for the analyst,
    /// and every statement still arrives, each request read before its
    /// answer (else its call would not count).
    #[test]
    fn a_full_queue_makes_the_relay_wait_and_drops_nothing() {
        let capture = Arc::new(Mutex::new(Capture::default()));
        let analyst = Analyst::with_limit(capture.clone(), 8).unwrap();
        let feed = analyst.feed();
        let tasks: Vec<_> = (1..=2u64)
            .map(|id| {
                let feed = feed.clone();
                std::thread::spawn(move || connection(&feed, id, 500, false))
            })
            .collect();
        for t in tasks {
            t.join().unwrap();
        }
        analyst.finish();
        let cap = capture.lock().unwrap();
        assert_eq!(cap.connections, 2);
        assert_eq!(cap.left_open, 0);
        let calls: Vec<_> = cap
            .texts
            .iter()
            .map(|t| (t.text.as_str(), t.calls))
            .collect();
        assert_eq!(calls, [("SELECT * FROM items WHERE id = $1", 1000)]);
    }

    /// What a relay of its own process sends down its pipe becomes, read
    /// at the other end, the capture the reading here makes of the same
    /// events: statements, refusals, a startup refused, every connection.
    #[test]
    fn the_pipe_carries_what_the_reading_here_sees() {
        #[derive(Clone, Default)]
        struct Sent(Arc<Mutex<Vec<u8>>>);
        impl Write for Sent {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let run = |feed: Feed| {
            feed.refused(REFUSALS[1]);
            feed.startup_refused("protocol 4.0");
            for id in 1..=2u64 {
                connection(&feed, id, 3, id == 2);
            }
        };
        let here = Arc::new(Mutex::new(Capture::default()));
        let analyst = Analyst::start(here.clone()).unwrap();
        run(analyst.feed());
        analyst.finish();
        let sent = Sent::default();
        let piped = Analyst::piped(sent.clone()).unwrap();
        run(piped.feed());
        piped.finish();
        let bytes = sent.0.lock().unwrap().clone();
        let there = receive(&bytes[..], Instant::now()).unwrap();
        let here = here.lock().unwrap();
        let summary = |c: &Capture| {
            let calls: Vec<_> = c.texts.iter().map(|t| (t.text.clone(), t.calls)).collect();
            (
                calls,
                c.connections,
                c.left_open,
                c.refused.clone(),
                c.startup_reasons.clone(),
            )
        };
        assert_eq!(summary(&there), summary(&here));
        assert_eq!(
            summary(&there).0,
            [("SELECT * FROM items WHERE id = $1".to_string(), 6)]
        );
        assert_eq!((there.connections, there.left_open), (2, 1));
        // Cut anywhere inside an event, the pipe is an error, not a
        // shorter capture.
        assert!(receive(&bytes[..bytes.len() - 3], Instant::now()).is_err());
    }

    /// A connection the relay never closed (it cannot happen, the relay
    /// closes every one) is counted as left open, not lost.
    #[test]
    fn finishing_counts_a_connection_never_closed() {
        let capture = Arc::new(Mutex::new(Capture::default()));
        let analyst = Analyst::start(capture.clone()).unwrap();
        analyst.feed().open(7, "app", "shop");
        analyst.finish();
        let cap = capture.lock().unwrap();
        assert_eq!((cap.connections, cap.left_open), (1, 1));
    }
}
