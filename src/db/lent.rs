//! A connection whose socket can be lent: between the client's requests, a
//! caller that speaks the protocol itself (replay's prepared executions, its
//! hot path) writes and reads the socket directly, without tokio-postgres'
//! per-request channel and connection task. tokio-postgres still opens the
//! connection (TLS negotiation, startup, authentication) and serves every
//! other request on it.
//!
//! The stream handed to tokio-postgres shares the TCP socket with the
//! [`Lender`], and counts what goes through it: every Sync and simple Query
//! it writes is answered by one ReadyForQuery it reads. A loan starts only
//! when the two counts agree, that is when nothing tokio-postgres asked for
//! is still on the wire. (Awaiting the client's calls is not enough: a
//! prepare returns before its ReadyForQuery is read, and a dropped
//! statement's Close goes out with no one waiting for its reply.) While a
//! [`Loan`] is out, the connection task neither reads nor writes, so the
//! two conversations never interleave. Only plain connections lend: once
//! TLS is negotiated on the socket, its bytes mean nothing without the TLS
//! session, so [`Lender`] is `None` then.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_postgres::tls::TlsConnect;

/// Who has the socket, and what tokio-postgres still waits for on it.
#[derive(Default)]
struct State {
    /// Counting has begun: the startup conversation, whose messages are
    /// framed differently and which ends with a ReadyForQuery of its own,
    /// is over.
    counting: bool,
    /// ReadyForQuery messages tokio-postgres still waits for.
    pending: u64,
    lent: bool,
    /// The connection task is gone (closed, broken or dropped): a loan need
    /// not wait for it, and finds the socket's state for itself.
    closed: bool,
    /// The connection task, waiting for the socket back.
    task: Option<Waker>,
    /// The lender, waiting for tokio-postgres' replies to be read.
    lender: Option<Waker>,
}

#[derive(Default)]
struct Gate(Mutex<State>);

impl Gate {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays whole whatever panicked while holding it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn register(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}

/// Finds message boundaries in one direction of the conversation, across
/// reads and writes that split messages anywhere: a type byte, a length
/// that counts itself, then the body.
#[derive(Default)]
struct Framing {
    header: [u8; 5],
    have: usize,
    /// Body bytes of the current message still to come.
    skip: usize,
}

impl Framing {
    /// How many messages of the types `tags` begin in `bytes`.
    fn count(&mut self, mut bytes: &[u8], tags: &[u8]) -> u64 {
        let mut n = 0;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let k = self.skip.min(bytes.len());
                self.skip -= k;
                bytes = &bytes[k..];
                continue;
            }
            let k = (5 - self.have).min(bytes.len());
            self.header[self.have..self.have + k].copy_from_slice(&bytes[..k]);
            self.have += k;
            bytes = &bytes[k..];
            if self.have == 5 {
                let len = i32::from_be_bytes([
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ]);
                self.skip = usize::try_from(len).unwrap_or(4).saturating_sub(4);
                self.have = 0;
                n += u64::from(tags.contains(&self.header[0]));
            }
        }
        n
    }
}

/// The stream tokio-postgres reads and writes: the shared socket, behind
/// the gate.
pub(crate) struct Lendable {
    io: Arc<TcpStream>,
    gate: Arc<Gate>,
    /// Frontend messages written (Sync and Query are counted).
    sent: Framing,
    /// Backend messages read (ReadyForQuery is counted).
    read: Framing,
}

/// The other handle on the socket: lends it to its owner between requests.
pub struct Lender {
    io: Arc<TcpStream>,
    gate: Arc<Gate>,
}

/// The socket while lent: the connection task does not touch it until the
/// loan is dropped.
pub struct Loan<'a> {
    lender: &'a Lender,
}

/// A socket, and the stream that shares it.
pub(crate) fn share(tcp: TcpStream) -> (Lendable, Lender) {
    let io = Arc::new(tcp);
    let gate = Arc::new(Gate::default());
    (
        Lendable {
            io: io.clone(),
            gate: gate.clone(),
            sent: Framing::default(),
            read: Framing::default(),
        },
        Lender { io, gate },
    )
}

impl Lender {
    /// Starts counting requests and replies: call once the connection is
    /// established (startup over, the stream between messages both ways).
    pub(crate) fn begin(&self) {
        self.gate.lock().counting = true;
    }

    /// Takes the socket once tokio-postgres has read every reply it asked
    /// for (at once when it has, as between awaited calls).
    pub async fn lend(&self) -> Loan<'_> {
        poll_fn(|cx| {
            let mut st = self.gate.lock();
            if st.pending == 0 || st.closed {
                st.lent = true;
                Poll::Ready(())
            } else {
                register(&mut st.lender, cx);
                Poll::Pending
            }
        })
        .await;
        Loan { lender: self }
    }
}

impl Loan<'_> {
    /// The socket (non-blocking, registered with the runtime that opened it).
    pub fn socket(&self) -> &TcpStream {
        &self.lender.io
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        let mut st = self.lender.gate.lock();
        st.lent = false;
        if let Some(w) = st.task.take() {
            w.wake();
        }
    }
}

impl AsyncRead for Lendable {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // Held through the read: a loan cannot begin halfway through it.
        let mut st = this.gate.lock();
        if st.lent {
            register(&mut st.task, cx);
            return Poll::Pending;
        }
        let room = buf.remaining();
        loop {
            if let Err(e) = std::task::ready!(this.io.poll_read_ready(cx)) {
                close(&mut st);
                return Poll::Ready(Err(e));
            }
            match this.io.try_read(buf.initialize_unfilled()) {
                Ok(0) if room > 0 => {
                    close(&mut st);
                    return Poll::Ready(Ok(()));
                }
                Ok(n) => {
                    if st.counting {
                        let replies = this.read.count(&buf.initialize_unfilled()[..n], b"Z");
                        st.pending = st.pending.saturating_sub(replies);
                        if st.pending == 0
                            && let Some(w) = st.lender.take()
                        {
                            w.wake();
                        }
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // The readiness was stale (the borrower read the bytes).
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => {
                    close(&mut st);
                    return Poll::Ready(Err(e));
                }
            }
        }
    }
}

impl AsyncWrite for Lendable {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Held through the write and its count: a loan that begins after
        // it waits for its reply.
        let mut st = this.gate.lock();
        if st.lent {
            register(&mut st.task, cx);
            return Poll::Pending;
        }
        loop {
            std::task::ready!(this.io.poll_write_ready(cx))?;
            match this.io.try_write(buf) {
                Ok(n) => {
                    if st.counting {
                        // Each Sync and each simple Query is answered by
                        // one ReadyForQuery.
                        st.pending += this.sent.count(&buf[..n], b"SQ");
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The socket closes when its last handle goes (the lender's may
        // outlive the connection task by a moment).
        Poll::Ready(Ok(()))
    }
}

impl Drop for Lendable {
    fn drop(&mut self) {
        close(&mut self.gate.lock());
    }
}

/// The connection task is done with the socket: a lender waiting for its
/// replies waits no more.
fn close(st: &mut State) {
    st.closed = true;
    if let Some(w) = st.lender.take() {
        w.wake();
    }
}

/// A TLS connector that notes whether tokio-postgres used it: it does only
/// when the server agreed to TLS, and then the socket cannot be lent.
pub(crate) struct Noting<T> {
    pub inner: T,
    pub used: Arc<AtomicBool>,
}

impl<S, T: TlsConnect<S>> TlsConnect<S> for Noting<T> {
    type Stream = T::Stream;
    type Error = T::Error;
    type Future = T::Future;

    fn connect(self, stream: S) -> Self::Future {
        self.used.store(true, Ordering::Release);
        self.inner.connect(stream)
    }
}
