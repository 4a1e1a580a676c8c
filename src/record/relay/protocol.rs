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

/// The major protocol version the relay frames: a StartupMessage's version
/// is the major in its high 16 bits and the minor in the low 16. Protocol
/// 3.2 (PostgreSQL 18) frames messages as 3.0 does: only BackendKeyData's
/// key and so the CancelRequest grew, and neither is read here.
pub const PROTOCOL_MAJOR: u32 = 3;
/// Protocol 3.0, the version most clients send (tests build startup packets with it).
#[cfg(test)]
pub const PROTOCOL_3_0: u32 = PROTOCOL_MAJOR << 16;
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
    /// A CancelRequest: the backend's pid and its secret key, 4 bytes under
    /// protocol 3.0 and up to [`MAX_CANCEL_KEY`] under 3.2, as the server's
    /// BackendKeyData gave it (the relay passes that message through
    /// unchanged, so the key is the server's own).
    Cancel {
        pid: i32,
        key: Vec<u8>,
    },
    /// Protocol 3.`minor` with its parameters (user, database, options,
    /// `_pq_.` protocol options, ...). Any minor: the server answers one it
    /// does not speak with NegotiateProtocolVersion, and the relay passes
    /// that through as it passes everything.
    Params {
        minor: u16,
        params: Vec<(String, String)>,
    },
}

/// The longest secret key a CancelRequest carries (protocol 3.2).
pub const MAX_CANCEL_KEY: usize = 256;

/// A startup packet the relay refuses (answered with SQLSTATE 08P01): what
/// it cannot frame, it cannot forward as a session it reads. The text is
/// what the client and the run's warnings say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadStartup {
    /// A length no startup packet has (under 8 bytes or over 10,000, the
    /// server's own limit). A TLS ClientHello reads as one (0x16 ...).
    #[error("a startup packet of {0} bytes (a startup packet is 8 to 10000 bytes)")]
    Length(u32),
    /// A protocol version whose major is not 3 (the relay frames v3 only).
    #[error(
        "protocol {}.{} (the relay reads protocol 3: 3.0, 3.2 and any later 3.x)",
        .0 >> 16,
        .0 & 0xffff
    )]
    Version(u32),
    /// The packet's body does not match its code.
    #[error("a malformed startup packet ({0})")]
    Layout(&'static str),
}

/// Reads a startup packet (`packet` includes the length, as
/// [`take_startup`] returns it).
pub fn startup(packet: &[u8]) -> Result<Startup, BadStartup> {
    let mut r = Reader(packet);
    let len = r.i32().ok_or(BadStartup::Length(packet.len() as u32))? as u32;
    if len as usize != packet.len() || len < 8 {
        return Err(BadStartup::Length(len));
    }
    let code = r.i32().ok_or(BadStartup::Length(len))? as u32;
    Ok(match code {
        SSL_REQUEST | GSSENC_REQUEST if len != 8 => {
            return Err(BadStartup::Layout("an encryption request is 8 bytes"));
        }
        SSL_REQUEST => Startup::Ssl,
        GSSENC_REQUEST => Startup::GssEnc,
        CANCEL_REQUEST => {
            let pid = r
                .i32()
                .ok_or(BadStartup::Layout("a cancel request without its pid"))?;
            // Under 3.0 the key is 4 bytes; under 3.2 the rest of the packet.
            if r.0.is_empty() || r.0.len() > MAX_CANCEL_KEY {
                return Err(BadStartup::Layout(
                    "a cancel request's key is 1 to 256 bytes",
                ));
            }
            Startup::Cancel {
                pid,
                key: r.0.to_vec(),
            }
        }
        v if v >> 16 == PROTOCOL_MAJOR => {
            let mut params = Vec::new();
            let bad = || BadStartup::Layout("parameters without their terminator");
            loop {
                let k = r.cstr().ok_or_else(bad)?;
                if k.is_empty() {
                    break;
                }
                let v = r.cstr().ok_or_else(bad)?;
                params.push((k, v));
            }
            Startup::Params {
                minor: (v & 0xffff) as u16,
                params,
            }
        }
        v => return Err(BadStartup::Version(v)),
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

/// The longest startup packet the server reads (its
/// MAX_STARTUP_PACKET_LENGTH).
const MAX_STARTUP: usize = 10_000;

/// Reads one startup packet from the front of `buf` when it is whole: its
/// bytes (length included). A length that cannot be one's is refused before
/// the bytes are awaited (a TLS ClientHello starts with 0x16 and reads as a
/// huge length).
pub fn take_startup(buf: &mut BytesMut) -> Result<Option<Vec<u8>>, BadStartup> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if !(8..=MAX_STARTUP as u32).contains(&len) {
        return Err(BadStartup::Length(len));
    }
    if buf.len() < len as usize {
        return Ok(None);
    }
    Ok(Some(buf.split_to(len as usize).to_vec()))
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

    /// A startup packet: length, code, body.
    fn packet(code: u32, body: &[u8]) -> Vec<u8> {
        let mut p = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        p.extend(code.to_be_bytes());
        p.extend(body);
        p
    }

    fn params(pairs: &[&str]) -> Vec<u8> {
        let mut body: Vec<u8> = pairs.iter().flat_map(|s| cstr(s)).collect();
        body.push(0);
        body
    }

    #[test]
    fn startup_packets_are_read() {
        let p = packet(PROTOCOL_3_0, &params(&["user", "app", "database", "shop"]));
        assert_eq!(
            startup(&p),
            Ok(Startup::Params {
                minor: 0,
                params: vec![
                    ("user".into(), "app".into()),
                    ("database".into(), "shop".into())
                ]
            })
        );
        let ssl = packet(SSL_REQUEST, b"");
        assert_eq!(startup(&ssl), Ok(Startup::Ssl));
        assert_eq!(startup(&packet(GSSENC_REQUEST, b"")), Ok(Startup::GssEnc));
        let mut buf = BytesMut::from(&ssl[..5]);
        assert_eq!(take_startup(&mut buf), Ok(None));
        buf.extend_from_slice(&ssl[5..]);
        assert_eq!(take_startup(&mut buf), Ok(Some(ssl.clone())));
        let mut bad = BytesMut::from(&[0x16, 3, 1, 2, 0][..]);
        assert_eq!(take_startup(&mut bad), Err(BadStartup::Length(0x1603_0102)));
    }

    /// Issue 31: protocol 3.2 (PostgreSQL 18's `max_protocol_version`) and
    /// libpq's grease (3.9999, with `_pq_.` options) are read as 3.0 is,
    /// their parameters whole; the code read them as another protocol and
    /// lost the user and database its statements are attributed to.
    #[test]
    fn any_3_x_minor_is_read_with_its_parameters() {
        for (minor, extra) in [(2u16, None), (9999, Some("_pq_.test_protocol_negotiation"))] {
            let mut pairs = vec!["user", "app", "database", "shop"];
            pairs.extend(extra.iter().flat_map(|o| [*o, "on"]));
            let p = packet((3 << 16) | u32::from(minor), &params(&pairs));
            let Ok(Startup::Params { minor: got, params }) = startup(&p) else {
                panic!("3.{minor} not read: {:?}", startup(&p));
            };
            assert_eq!(got, minor);
            assert_eq!(params[1], ("database".into(), "shop".into()));
            assert_eq!(
                params.get(2).map(|(k, _)| k.as_str()),
                extra,
                "3.{minor}: a protocol option is kept to be forwarded"
            );
        }
    }

    /// Issue 31: a 3.2 CancelRequest carries the server's key whatever its
    /// length (32 bytes from PostgreSQL 18), a 3.0 one its 4 bytes; a key
    /// of no length or over 256 bytes is no cancel request.
    #[test]
    fn cancel_requests_carry_keys_of_any_length() {
        for len in [4usize, 32, MAX_CANCEL_KEY] {
            let key: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut body = 4242i32.to_be_bytes().to_vec();
            body.extend(&key);
            let p = packet(CANCEL_REQUEST, &body);
            let mut buf = BytesMut::from(&p[..]);
            assert_eq!(take_startup(&mut buf), Ok(Some(p.clone())), "key of {len}");
            assert_eq!(startup(&p), Ok(Startup::Cancel { pid: 4242, key }));
        }
        for len in [0usize, MAX_CANCEL_KEY + 1] {
            let mut body = 4242i32.to_be_bytes().to_vec();
            body.extend(vec![7u8; len]);
            assert!(
                matches!(
                    startup(&packet(CANCEL_REQUEST, &body)),
                    Err(BadStartup::Layout(_))
                ),
                "key of {len}"
            );
        }
    }

    /// Issue 31: what the relay cannot read is refused with a reason that
    /// names it, never a panic: another major version, parameters without
    /// their terminator, an encryption request with a body.
    #[test]
    fn other_versions_and_malformed_packets_are_refused() {
        let v2 = packet(2 << 16, &params(&["user", "app"]));
        assert_eq!(startup(&v2), Err(BadStartup::Version(2 << 16)));
        assert!(
            BadStartup::Version(2 << 16)
                .to_string()
                .contains("protocol 2.0"),
            "{}",
            BadStartup::Version(2 << 16)
        );
        let cut = packet(PROTOCOL_3_0, &cstr("user")[..]);
        assert!(matches!(startup(&cut), Err(BadStartup::Layout(_))));
        assert!(matches!(
            startup(&packet(SSL_REQUEST, b"xx")),
            Err(BadStartup::Layout(_))
        ));
        let mut short = BytesMut::from(&[0, 0, 0, 4, 0, 3, 0, 0][..]);
        assert_eq!(take_startup(&mut short), Err(BadStartup::Length(4)));
        let mut long = BytesMut::from(&[0, 0, 0x27, 0x11][..]);
        assert_eq!(take_startup(&mut long), Err(BadStartup::Length(10_001)));
        // A length that is not the packet's own is caught too.
        let mut lying = packet(PROTOCOL_3_0, &params(&["user", "app"]));
        lying.push(0);
        assert!(matches!(startup(&lying), Err(BadStartup::Length(_))));
    }
}
