//! The PostgreSQL v3 wire protocol, read alongside the bytes the relay
//! forwards: framing (a [`Decoder`] per direction) and the few message
//! bodies the capture needs.
//!
//! The decoder never holds a whole stream: it keeps a message's body only
//! when its tag is one the capture reads ([`Decoder::keep`]), up to
//! [`MAX_BODY`] bytes; everything else (DataRow, COPY data, the
//! authentication exchange) is counted and skipped, so memory stays bounded
//! whatever the client sends. A length that cannot be a message makes the
//! decoder stop reading that direction ([`Decoder::broken`]): the bytes are
//! still forwarded, the connection's capture is marked incomplete.

use bytes::{Buf, BytesMut};

/// The protocol version of a startup message (3.0).
pub const PROTOCOL_3: u32 = 196_608;
/// The request codes that come instead of a version in a startup packet.
pub const SSL_REQUEST: u32 = 80_877_103;
pub const GSSENC_REQUEST: u32 = 80_877_104;
pub const CANCEL_REQUEST: u32 = 80_877_102;

/// The longest body kept: a longer Query or Parse is skipped and marked.
pub const MAX_BODY: usize = 1 << 20;
/// No real message is this long (the server's own limit is 1 GB).
const MAX_LEN: u32 = 1 << 30;

/// One framed message: its tag and, when kept, its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub tag: u8,
    /// Empty when the tag is not one the reader keeps.
    pub body: Vec<u8>,
    /// The body was longer than [`MAX_BODY`] and was not kept.
    pub cut: bool,
}

/// Which messages a direction keeps the body of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// An incremental framer: bytes in, messages out.
#[derive(Debug)]
pub struct Decoder {
    side: Side,
    header: [u8; 5],
    have_header: usize,
    /// The current message's tag and bytes still to come.
    tag: u8,
    left: usize,
    keep: bool,
    body: Vec<u8>,
    cut: bool,
    /// While true (before AuthenticationOk), the client's messages are
    /// passwords and SASL exchanges: framed, never kept.
    pub authenticating: bool,
    broken: bool,
}

impl Decoder {
    pub fn new(side: Side) -> Decoder {
        Decoder {
            side,
            header: [0; 5],
            have_header: 0,
            tag: 0,
            left: 0,
            keep: false,
            body: Vec::new(),
            cut: false,
            authenticating: true,
            broken: false,
        }
    }

    /// The stream stopped making sense: nothing more is read from it.
    pub fn broken(&self) -> bool {
        self.broken
    }

    /// Whether the body of a message with this tag is kept.
    fn keep(&self, tag: u8) -> bool {
        match self.side {
            // Query, Parse, Bind, Execute, Close, Sync, Terminate,
            // FunctionCall; never 'p' (password, SASL).
            Side::Client => {
                !self.authenticating && matches!(tag, b'Q' | b'P' | b'B' | b'E' | b'C' | b'S')
            }
            // Authentication (its code only is read), CommandComplete,
            // ErrorResponse, ReadyForQuery.
            Side::Server => matches!(tag, b'R' | b'C' | b'E' | b'Z'),
        }
    }

    /// Feeds bytes; calls `out` for each message completed.
    pub fn feed(&mut self, mut data: &[u8], out: &mut impl FnMut(Message)) {
        while !data.is_empty() && !self.broken {
            if self.have_header < 5 {
                let n = (5 - self.have_header).min(data.len());
                self.header[self.have_header..self.have_header + n].copy_from_slice(&data[..n]);
                self.have_header += n;
                data = &data[n..];
                if self.have_header < 5 {
                    return;
                }
                let len = u32::from_be_bytes([
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ]);
                if !(4..MAX_LEN).contains(&len) {
                    self.broken = true;
                    return;
                }
                self.tag = self.header[0];
                self.left = len as usize - 4;
                // The server's authentication code is its first 4 bytes;
                // the rest (SASL data) is never kept.
                self.keep = self.keep(self.tag);
                self.cut = false;
                self.body.clear();
                if self.keep && self.left > MAX_BODY {
                    self.keep = false;
                    self.cut = true;
                }
            }
            let n = self.left.min(data.len());
            if self.keep {
                let want = if self.side == Side::Server && self.tag == b'R' {
                    4usize.saturating_sub(self.body.len()).min(n)
                } else {
                    n
                };
                self.body.extend_from_slice(&data[..want]);
            }
            self.left -= n;
            data = &data[n..];
            if self.left == 0 {
                self.have_header = 0;
                out(Message {
                    tag: self.tag,
                    body: std::mem::take(&mut self.body),
                    cut: self.cut,
                });
            }
        }
    }
}

/// A startup packet (what comes first from a client), read in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Startup {
    Ssl,
    GssEnc,
    Cancel,
    /// Protocol 3 with its parameters (user, database, options, ...).
    Params(Vec<(String, String)>),
    /// Another protocol version.
    Version(u32),
}

/// Reads a startup packet's code and parameters (`packet` includes the length).
pub fn startup(packet: &[u8]) -> Option<Startup> {
    if packet.len() < 8 {
        return None;
    }
    let code = u32::from_be_bytes([packet[4], packet[5], packet[6], packet[7]]);
    Some(match code {
        SSL_REQUEST => Startup::Ssl,
        GSSENC_REQUEST => Startup::GssEnc,
        CANCEL_REQUEST => Startup::Cancel,
        PROTOCOL_3 => {
            let mut r = Reader(&packet[8..]);
            let mut params = Vec::new();
            loop {
                let k = r.cstr()?;
                if k.is_empty() {
                    break;
                }
                let v = r.cstr()?;
                params.push((k, v));
            }
            Startup::Params(params)
        }
        v => Startup::Version(v),
    })
}

/// A cursor over a message body.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    pub fn cstr(&mut self) -> Option<String> {
        let end = self.0.iter().position(|&b| b == 0)?;
        let s = String::from_utf8_lossy(&self.0[..end]).into_owned();
        self.0 = &self.0[end + 1..];
        Some(s)
    }

    pub fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    pub fn i16(&mut self) -> Option<i16> {
        if self.0.len() < 2 {
            return None;
        }
        let mut b = &self.0[..2];
        let v = b.get_i16();
        self.0 = &self.0[2..];
        Some(v)
    }

    pub fn i32(&mut self) -> Option<i32> {
        if self.0.len() < 4 {
            return None;
        }
        let mut b = &self.0[..4];
        let v = b.get_i32();
        self.0 = &self.0[4..];
        Some(v)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(a)
    }
}

/// A client message the capture reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromClient {
    Query(String),
    Parse {
        name: String,
        text: String,
    },
    Bind {
        portal: String,
        statement: String,
        /// Each parameter's value (`None`: NULL) and whether it is binary.
        params: Vec<(Option<Vec<u8>>, bool)>,
    },
    Execute {
        portal: String,
    },
    /// `b'S'` statement or `b'P'` portal.
    Close {
        kind: u8,
        name: String,
    },
    Sync,
    /// A fast-path function call (libpq's large objects use it): answered
    /// by FunctionCallResponse, then ReadyForQuery, like a simple Query.
    FunctionCall,
    Terminate,
    /// Framed but not read (Describe, Flush, COPY data).
    Other(u8),
}

/// Reads a client message; `None` when its body does not parse.
pub fn from_client(m: &Message) -> Option<FromClient> {
    let mut r = Reader(&m.body);
    Some(match m.tag {
        b'Q' => FromClient::Query(r.cstr()?),
        b'P' => FromClient::Parse {
            name: r.cstr()?,
            text: r.cstr()?,
        },
        b'B' => {
            let portal = r.cstr()?;
            let statement = r.cstr()?;
            let nformats = r.i16()?.max(0) as usize;
            let mut formats = Vec::with_capacity(nformats);
            for _ in 0..nformats {
                formats.push(r.i16()? == 1);
            }
            let nparams = r.i16()?.max(0) as usize;
            let mut params = Vec::with_capacity(nparams);
            for i in 0..nparams {
                let binary = match formats.len() {
                    0 => false,
                    1 => formats[0],
                    _ => *formats.get(i)?,
                };
                let len = r.i32()?;
                let value = if len < 0 {
                    None
                } else {
                    Some(r.bytes(len as usize)?.to_vec())
                };
                params.push((value, binary));
            }
            FromClient::Bind {
                portal,
                statement,
                params,
            }
        }
        b'E' => FromClient::Execute { portal: r.cstr()? },
        b'C' => FromClient::Close {
            kind: r.u8()?,
            name: r.cstr()?,
        },
        b'S' => FromClient::Sync,
        b'X' => FromClient::Terminate,
        b'F' => FromClient::FunctionCall,
        t @ (b'D' | b'H' | b'd' | b'c' | b'f') => FromClient::Other(t),
        _ => return None,
    })
}

/// A server message the capture reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromServer {
    /// Authentication: only its code (0 is AuthenticationOk).
    Auth(i32),
    CommandComplete(String),
    EmptyQuery,
    PortalSuspended,
    /// Its SQLSTATE.
    Error(String),
    /// `I`, `T` or `E`.
    Ready(u8),
    /// CopyInResponse: the server waits for the client's COPY data.
    CopyIn,
    /// Anything else: rows, descriptions, notices, COPY responses.
    Other(u8),
}

pub fn from_server(m: &Message) -> Option<FromServer> {
    let mut r = Reader(&m.body);
    Some(match m.tag {
        b'R' => FromServer::Auth(r.i32()?),
        b'C' => FromServer::CommandComplete(r.cstr()?),
        b'I' => FromServer::EmptyQuery,
        b's' => FromServer::PortalSuspended,
        b'G' => FromServer::CopyIn,
        b'E' => {
            let mut code = String::new();
            loop {
                let field = r.u8()?;
                if field == 0 {
                    break;
                }
                let v = r.cstr()?;
                if field == b'C' {
                    code = v;
                }
            }
            FromServer::Error(code)
        }
        b'Z' => FromServer::Ready(r.u8()?),
        t => FromServer::Other(t),
    })
}

/// A startup packet whose length cannot be one (a TLS ClientHello starts
/// with 0x16 and reads as a huge length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotStartup;

/// Reads one startup packet from the front of `buf` when it is whole: its
/// bytes (length included).
pub fn take_startup(buf: &mut BytesMut) -> Result<Option<Vec<u8>>, NotStartup> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if !(8..=10_000).contains(&len) {
        return Err(NotStartup);
    }
    if buf.len() < len {
        return Ok(None);
    }
    Ok(Some(buf.split_to(len).to_vec()))
}

/// Builds messages for tests and for the relay's own answers.
pub fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(body.len() + 5);
    v.push(tag);
    v.extend_from_slice(&((body.len() as u32 + 4).to_be_bytes()));
    v.extend_from_slice(body);
    v
}

/// An ErrorResponse the relay sends a client itself (FATAL, SQLSTATE 08P01
/// or as given).
pub fn error_response(code: &str, text: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (f, v) in [(b'S', "FATAL"), (b'V', "FATAL"), (b'C', code), (b'M', text)] {
        body.push(f);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    message(b'E', &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cstr(s: &str) -> Vec<u8> {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        v
    }

    fn all(d: &mut Decoder, bytes: &[u8]) -> Vec<Message> {
        let mut out = Vec::new();
        d.feed(bytes, &mut |m| out.push(m));
        out
    }

    #[test]
    fn messages_split_anywhere_are_framed_whole() {
        let mut stream = message(b'Q', &cstr("select 1; select 2"));
        stream.extend(message(b'H', b""));
        let mut bind = cstr("p1");
        bind.extend(cstr("s1"));
        bind.extend(1i16.to_be_bytes()); // one format for all: text
        bind.extend(0i16.to_be_bytes());
        bind.extend(2i16.to_be_bytes());
        bind.extend(2i32.to_be_bytes());
        bind.extend(b"42");
        bind.extend((-1i32).to_be_bytes());
        bind.extend(0i16.to_be_bytes());
        stream.extend(message(b'B', &bind));
        stream.extend(message(b'S', b""));
        // Every split point gives the same messages.
        for cut in 0..stream.len() {
            let mut d = Decoder::new(Side::Client);
            d.authenticating = false;
            let mut got = all(&mut d, &stream[..cut]);
            got.extend(all(&mut d, &stream[cut..]));
            let read: Vec<_> = got.iter().map(|m| from_client(m).unwrap()).collect();
            assert_eq!(
                read,
                vec![
                    FromClient::Query("select 1; select 2".into()),
                    FromClient::Other(b'H'),
                    FromClient::Bind {
                        portal: "p1".into(),
                        statement: "s1".into(),
                        params: vec![(Some(b"42".to_vec()), false), (None, false)],
                    },
                    FromClient::Sync,
                ],
                "split at {cut}"
            );
        }
    }

    #[test]
    fn authentication_is_framed_but_never_kept() {
        let mut d = Decoder::new(Side::Client);
        let mut pw = message(b'p', &cstr("s3cret-password"));
        pw.extend(message(b'Q', &cstr("select 1")));
        let got = all(&mut d, &pw);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|m| m.body.is_empty()), "{got:?}");
        // The server's SASL data is cut to its 4-byte code.
        let mut s = Decoder::new(Side::Server);
        let mut body = 11i32.to_be_bytes().to_vec();
        body.extend(b"r=nonce,s=salt,i=4096");
        let got = all(&mut s, &message(b'R', &body));
        assert_eq!(got[0].body, 11i32.to_be_bytes());
        assert_eq!(from_server(&got[0]), Some(FromServer::Auth(11)));
    }

    #[test]
    fn server_messages_are_read() {
        let mut s = Decoder::new(Side::Server);
        let mut stream = message(b'C', &cstr("UPDATE 1"));
        let mut err = Vec::new();
        for (f, v) in [(b'S', "ERROR"), (b'C', "57014"), (b'M', "canceling")] {
            err.push(f);
            err.extend(cstr(v));
        }
        err.push(0);
        stream.extend(message(b'E', &err));
        stream.extend(message(b'D', &[0, 1, 0, 0, 0, 1, b'x']));
        stream.extend(message(b'Z', b"T"));
        stream.extend(message(b's', b""));
        stream.extend(message(b'I', b""));
        let got: Vec<_> = all(&mut s, &stream)
            .iter()
            .map(|m| from_server(m).unwrap())
            .collect();
        assert_eq!(
            got,
            vec![
                FromServer::CommandComplete("UPDATE 1".into()),
                FromServer::Error("57014".into()),
                FromServer::Other(b'D'),
                FromServer::Ready(b'T'),
                FromServer::PortalSuspended,
                FromServer::EmptyQuery,
            ]
        );
    }

    #[test]
    fn an_impossible_length_stops_the_reader_without_panicking() {
        let mut d = Decoder::new(Side::Client);
        d.authenticating = false;
        let got = all(&mut d, &[b'Q', 0, 0, 0, 2, b'x', b'y']);
        assert!(got.is_empty());
        assert!(d.broken());
        // A body that does not parse is reported as such, not a crash.
        let m = Message {
            tag: b'B',
            body: vec![b'p', 0, b's', 0, 0, 5],
            cut: false,
        };
        assert_eq!(from_client(&m), None);
        assert_eq!(
            from_client(&Message {
                tag: b'~',
                body: vec![],
                cut: false
            }),
            None
        );
    }

    #[test]
    fn long_bodies_are_skipped_and_marked() {
        let mut d = Decoder::new(Side::Client);
        d.authenticating = false;
        let text = "x".repeat(MAX_BODY + 10);
        let got = all(&mut d, &message(b'Q', &cstr(&text)));
        assert_eq!(got.len(), 1);
        assert!(got[0].cut && got[0].body.is_empty());
    }

    #[test]
    fn startup_packets_are_read() {
        let mut body = PROTOCOL_3.to_be_bytes().to_vec();
        for s in ["user", "app", "database", "shop", ""] {
            body.extend(cstr(s));
        }
        let mut p = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        p.extend(&body);
        assert_eq!(
            startup(&p),
            Some(Startup::Params(vec![
                ("user".into(), "app".into()),
                ("database".into(), "shop".into())
            ]))
        );
        let mut ssl = 8u32.to_be_bytes().to_vec();
        ssl.extend(SSL_REQUEST.to_be_bytes());
        assert_eq!(startup(&ssl), Some(Startup::Ssl));
        let mut buf = BytesMut::from(&ssl[..5]);
        assert_eq!(take_startup(&mut buf), Ok(None));
        buf.extend_from_slice(&ssl[5..]);
        assert_eq!(take_startup(&mut buf), Ok(Some(ssl.clone())));
        let mut bad = BytesMut::from(&[0x16, 3, 1, 2, 0][..]);
        assert_eq!(take_startup(&mut bad), Err(NotStartup));
    }
}
