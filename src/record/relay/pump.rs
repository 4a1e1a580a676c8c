//! The forwarding of a started connection, byte for byte both ways.
//!
//! A connection whose two ends are plain sockets (TCP or unix: every
//! client, and the server unless planck reaches it over TLS) is handed,
//! once its startup is through, to the pump: one thread with an epoll of
//! its own (mio), which reads whatever socket is ready and writes it on.
//! tokio would do the same with a task per connection, a waker per event
//! and a readiness check per poll; on a relayed round trip that is about
//! a tenth of the relay's CPU (`perf`, 16 clients), and on a machine whose
//! cores the client and the server share, the relay's CPU is theirs
//! (docs/performance.md). A connection to a TLS server stays on tokio (its
//! encryption is tokio-rustls'), forwarded by the same [`Direction`]
//! through [`Direction::poll`].

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, ready};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UnixStream};
use mio::{Events, Interest, Registry, Token, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::analyst::Feed;
use super::protocol::Side;

/// The read buffer of each direction.
const BUFFER: usize = 64 * 1024;

/// The pump's own token, for its waker; a connection in slot `n` has the
/// tokens `2n` (its client) and `2n + 1` (the server).
const WAKER: Token = Token(usize::MAX);

/// A plain socket, as the pump reads and writes it.
pub(crate) enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    /// A tokio socket, taken out of tokio's reactor.
    pub(crate) fn of_tcp(s: tokio::net::TcpStream) -> io::Result<Sock> {
        Ok(Sock::Tcp(TcpStream::from_std(s.into_std()?)))
    }

    pub(crate) fn of_unix(s: tokio::net::UnixStream) -> io::Result<Sock> {
        Ok(Sock::Unix(UnixStream::from_std(s.into_std()?)))
    }

    fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let both = Interest::READABLE | Interest::WRITABLE;
        match self {
            Sock::Tcp(s) => registry.register(s, token, both),
            Sock::Unix(s) => registry.register(s, token, both),
        }
    }

    fn deregister(&mut self, registry: &Registry) {
        let _ = match self {
            Sock::Tcp(s) => registry.deregister(s),
            Sock::Unix(s) => registry.deregister(s),
        };
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }

    fn shutdown_write(&self) {
        let _ = match self {
            Sock::Tcp(s) => s.shutdown(Shutdown::Write),
            Sock::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }
}

/// One end of a connection in the pump, and what epoll last said of it.
/// mio's epoll is edge-triggered: an end is read (or written) until the
/// kernel says it has nothing more (or no room), then left until epoll
/// says otherwise. A read shorter than the buffer took all there was (what
/// tokio assumes too), so the empty read that would confirm it is skipped.
struct End {
    sock: Sock,
    readable: bool,
    writable: bool,
}

/// A connection in the pump.
struct Link {
    id: u64,
    client: End,
    server: End,
    up: Direction,
    down: Direction,
}

impl Link {
    /// Forwards what the two ends allow, the client's side first.
    fn pump(&mut self, feed: &Feed) {
        self.up
            .step(&mut self.client, &mut self.server, feed, self.id);
        self.down
            .step(&mut self.server, &mut self.client, feed, self.id);
    }

    fn done(&self) -> bool {
        self.up.done && self.down.done
    }
}

enum Message {
    Link {
        id: u64,
        client: Sock,
        server: Sock,
    },
    /// The command exited: connections get `grace` to end on their own.
    Stop(Duration),
    /// No connection will be handed over any more: end once the grace is
    /// over or the last connection ended.
    Finish,
}

/// The pump's thread, owned by the relay.
pub(crate) struct Pump {
    hand: Hand,
    thread: JoinHandle<()>,
}

/// What hands connections to the pump, from any task.
#[derive(Clone)]
pub(crate) struct Hand {
    tx: mpsc::Sender<Message>,
    waker: Arc<Waker>,
}

impl Hand {
    fn send(&self, m: Message) -> bool {
        let sent = self.tx.send(m).is_ok();
        if sent {
            // An eventfd's write: it fails only when the pump is gone.
            let _ = self.waker.wake();
        }
        sent
    }

    /// Hands over connection `id` (its opening already with the analyst);
    /// from here on the pump forwards it and tells the analyst it closed.
    pub(crate) fn link(&self, id: u64, client: Sock, server: Sock) -> bool {
        self.send(Message::Link { id, client, server })
    }
}

impl Pump {
    pub(crate) fn start(feed: Feed) -> io::Result<Pump> {
        let poll = mio::Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("planck-relay-pump".into())
            .spawn(move || run(poll, rx, feed))?;
        Ok(Pump {
            hand: Hand { tx, waker },
            thread,
        })
    }

    pub(crate) fn hand(&self) -> Hand {
        self.hand.clone()
    }

    /// The command exited: the pump's connections get `grace` to end.
    pub(crate) fn stop(&self, grace: Duration) {
        self.hand.send(Message::Stop(grace));
    }

    /// Waits for the pump to end (see [`Message::Finish`]).
    pub(crate) fn finish(self) {
        self.hand.send(Message::Finish);
        let _ = self.thread.join();
    }
}

/// The pump's loop: every event forwards on its connection; a connection
/// whose two directions ended is closed and its end told to the analyst.
fn run(mut poll: mio::Poll, rx: mpsc::Receiver<Message>, feed: Feed) {
    let mut links: Vec<Option<Link>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut events = Events::with_capacity(256);
    let mut deadline: Option<Instant> = None;
    // The grace is over: what is still open, or handed over since, was
    // left open by the command.
    let mut expired = false;
    let mut finishing = false;
    loop {
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if let Err(e) = poll.poll(&mut events, timeout)
            && e.kind() != io::ErrorKind::Interrupted
        {
            break;
        }
        for event in events.iter() {
            if event.token() == WAKER {
                continue;
            }
            let slot = event.token().0 / 2;
            let Some(link) = links.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            let end = if event.token().0 % 2 == 0 {
                &mut link.client
            } else {
                &mut link.server
            };
            // An error or a hang-up is read (or written) to learn it.
            let broken = event.is_error() || event.is_read_closed() || event.is_write_closed();
            end.readable |= event.is_readable() || broken;
            end.writable |= event.is_writable() || broken;
            link.pump(&feed);
            if link.done() {
                close(&mut links, &mut free, slot, poll.registry(), &feed, false);
            }
        }
        while let Ok(m) = rx.try_recv() {
            match m {
                Message::Link { id, .. } if expired => feed.close(id, true),
                Message::Link { id, client, server } => {
                    let slot = free.pop().unwrap_or_else(|| {
                        links.push(None);
                        links.len() - 1
                    });
                    let end = |sock| End {
                        sock,
                        readable: true,
                        writable: true,
                    };
                    let mut link = Link {
                        id,
                        client: end(client),
                        server: end(server),
                        up: Direction::new(Side::Client),
                        down: Direction::new(Side::Server),
                    };
                    let registry = poll.registry();
                    if link
                        .client
                        .sock
                        .register(registry, Token(2 * slot))
                        .is_err()
                        || link
                            .server
                            .sock
                            .register(registry, Token(2 * slot + 1))
                            .is_err()
                    {
                        link.client.sock.deregister(registry);
                        feed.close(id, false);
                        free.push(slot);
                        continue;
                    }
                    // What arrived before the registration is read now.
                    link.pump(&feed);
                    links[slot] = Some(link);
                    if links[slot].as_ref().is_some_and(Link::done) {
                        close(&mut links, &mut free, slot, registry, &feed, false);
                    }
                }
                Message::Stop(grace) => deadline = Some(Instant::now() + grace),
                Message::Finish => finishing = true,
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            deadline = None;
            expired = true;
            for slot in 0..links.len() {
                close(&mut links, &mut free, slot, poll.registry(), &feed, true);
            }
        }
        if finishing && links.iter().all(Option::is_none) {
            break;
        }
    }
    for slot in 0..links.len() {
        close(&mut links, &mut free, slot, poll.registry(), &feed, true);
    }
}

fn close(
    links: &mut [Option<Link>],
    free: &mut Vec<usize>,
    slot: usize,
    registry: &Registry,
    feed: &Feed,
    left_open: bool,
) {
    if let Some(mut link) = links[slot].take() {
        link.client.sock.deregister(registry);
        link.server.sock.deregister(registry);
        feed.close(link.id, left_open);
        free.push(slot);
    }
}

/// One direction of a connection: what `side` sends, read from one end,
/// written to the other and handed to the analyst, until either end
/// closes; then the end written to is shut down for writing.
///
/// Each chunk is handed to the analyst once written or, when the end
/// written to cannot take it all at once, before the forwarding turns to
/// anything else: either way before the other direction's next chunk (an
/// answer) can be read, so the analyst never sees an answer before its
/// request.
pub(crate) struct Direction {
    side: Side,
    buf: Vec<u8>,
    /// What is read and not yet written: `buf[written..read]`.
    read: usize,
    written: usize,
    /// The analyst has the chunk being written.
    seen: bool,
    closing: bool,
    done: bool,
}

impl Direction {
    pub(crate) fn new(side: Side) -> Direction {
        Direction {
            side,
            buf: vec![0u8; BUFFER],
            read: 0,
            written: 0,
            seen: true,
            closing: false,
            done: false,
        }
    }

    /// The pump's forwarding: moves what the two ends allow, and returns
    /// when one has nothing more to read or no room to write.
    fn step(&mut self, from: &mut End, to: &mut End, feed: &Feed, id: u64) {
        loop {
            if self.done {
                return;
            }
            if self.closing {
                to.sock.shutdown_write();
                self.done = true;
            } else if self.written < self.read {
                if !to.writable {
                    self.hand_over(feed, id);
                    return;
                }
                match to.sock.write(&self.buf[self.written..self.read]) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => to.writable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // The peer is gone: what it did not take was not sent.
                    Ok(0) | Err(_) => self.closing = true,
                    Ok(n) => {
                        self.written += n;
                        if self.written == self.read {
                            self.hand_over(feed, id);
                        }
                    }
                }
            } else {
                if !from.readable {
                    return;
                }
                match from.sock.read(&mut self.buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => from.readable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Ok(0) | Err(_) => self.closing = true,
                    Ok(n) => {
                        from.readable = n == self.buf.len();
                        self.read = n;
                        self.written = 0;
                        self.seen = false;
                    }
                }
            }
        }
    }

    /// tokio's forwarding, for a connection the pump cannot take (a TLS
    /// server): the same moves on two streams polled by the connection's
    /// one future, without splitting them: no lock, no task per direction.
    pub(crate) fn poll<R, W>(
        &mut self,
        cx: &mut Context<'_>,
        from: &mut R,
        to: &mut W,
        feed: &Feed,
        id: u64,
    ) -> Poll<()>
    where
        R: AsyncRead + Unpin + ?Sized,
        W: AsyncWrite + Unpin + ?Sized,
    {
        loop {
            if self.done {
                return Poll::Ready(());
            }
            if self.closing {
                // Errors are the peer gone: the direction ends either way.
                let _ = ready!(Pin::new(&mut *to).poll_shutdown(cx));
                self.done = true;
            } else if self.written < self.read {
                match Pin::new(&mut *to).poll_write(cx, &self.buf[self.written..self.read]) {
                    Poll::Pending => {
                        self.hand_over(feed, id);
                        return Poll::Pending;
                    }
                    Poll::Ready(Ok(0) | Err(_)) => self.closing = true,
                    Poll::Ready(Ok(n)) => {
                        self.written += n;
                        if self.written == self.read {
                            self.hand_over(feed, id);
                        }
                    }
                }
            } else {
                let mut into = ReadBuf::new(&mut self.buf);
                match ready!(Pin::new(&mut *from).poll_read(cx, &mut into)) {
                    Ok(()) if !into.filled().is_empty() => {
                        self.read = into.filled().len();
                        self.written = 0;
                        self.seen = false;
                    }
                    Ok(()) | Err(_) => self.closing = true,
                }
            }
        }
    }

    fn hand_over(&mut self, feed: &Feed, id: u64) {
        if !self.seen {
            self.seen = true;
            feed.chunk(id, self.side, &self.buf[..self.read]);
        }
    }
}
