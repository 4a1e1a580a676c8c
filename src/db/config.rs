//! Parsing connection strings the way libpq does, once, into keyword/value pairs.
//!
//! Both forms libpq accepts are read here: a `postgres://` (or `postgresql://`)
//! URL and a keyword string (`host=h password='my pw'`). Each becomes a
//! [`Spec`]: libpq's keywords with their decoded values. Everything later
//! (the `tokio_postgres::Config`, TLS, timeouts, what is shown to the user)
//! is built from that parsed form, never by cutting the text again, so a
//! password is hidden however it was written (quoted, with spaces around `=`,
//! percent-encoded, in a query parameter).

use std::collections::BTreeMap;
use std::fmt;

/// One keyword libpq knows: its name and the environment variable that gives
/// its default (libpq's `PQconndefaults` table).
pub(crate) struct Keyword {
    pub name: &'static str,
    pub env: Option<&'static str>,
}

const fn kw(name: &'static str, env: Option<&'static str>) -> Keyword {
    Keyword { name, env }
}

/// The keywords planck honours, in libpq's order.
pub(crate) const KEYWORDS: &[Keyword] = &[
    kw("service", Some("PGSERVICE")),
    kw("user", Some("PGUSER")),
    kw("password", Some("PGPASSWORD")),
    kw("passfile", Some("PGPASSFILE")),
    kw("channel_binding", Some("PGCHANNELBINDING")),
    kw("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    kw("dbname", Some("PGDATABASE")),
    kw("host", Some("PGHOST")),
    kw("hostaddr", Some("PGHOSTADDR")),
    kw("port", Some("PGPORT")),
    kw("client_encoding", Some("PGCLIENTENCODING")),
    kw("options", Some("PGOPTIONS")),
    kw("application_name", Some("PGAPPNAME")),
    kw("fallback_application_name", None),
    kw("keepalives", None),
    kw("keepalives_idle", None),
    kw("keepalives_interval", None),
    kw("keepalives_count", None),
    kw("tcp_user_timeout", None),
    kw("sslmode", Some("PGSSLMODE")),
    kw("requiressl", Some("PGREQUIRESSL")),
    kw("sslnegotiation", Some("PGSSLNEGOTIATION")),
    kw("sslcompression", Some("PGSSLCOMPRESSION")),
    kw("sslcert", Some("PGSSLCERT")),
    kw("sslkey", Some("PGSSLKEY")),
    kw("sslrootcert", Some("PGSSLROOTCERT")),
    kw("sslcrl", Some("PGSSLCRL")),
    kw("sslcrldir", Some("PGSSLCRLDIR")),
    kw("sslsni", Some("PGSSLSNI")),
    kw("ssl_min_protocol_version", Some("PGSSLMINPROTOCOLVERSION")),
    kw("ssl_max_protocol_version", Some("PGSSLMAXPROTOCOLVERSION")),
    kw("gssencmode", Some("PGGSSENCMODE")),
    kw("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    kw("load_balance_hosts", Some("PGLOADBALANCEHOSTS")),
];

/// libpq keywords planck knows but cannot honour: refused by name rather
/// than silently ignored (a key whose passphrase is not asked for, say).
const UNSUPPORTED: &[&str] = &[
    "sslpassword",
    "sslcertmode",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "requirepeer",
    "require_auth",
    "replication",
];

/// Keywords whose values are secrets and never shown.
pub(crate) fn is_secret(keyword: &str) -> bool {
    keyword == "password"
}

/// A parse failure, with the byte offset in the text where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn err(message: impl Into<String>) -> ParseError {
    ParseError {
        message: message.into(),
    }
}

/// libpq's keywords with their values, as parsed (later duplicates win, as in libpq).
///
/// Its `Debug` never shows a secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Spec {
    values: BTreeMap<String, String>,
}

impl fmt::Debug for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (k, v) in &self.values {
            if is_secret(k) {
                m.entry(k, &"***");
            } else {
                m.entry(k, v);
            }
        }
        m.finish()
    }
}

impl Spec {
    pub fn get(&self, keyword: &str) -> Option<&str> {
        self.values.get(keyword).map(String::as_str)
    }

    /// Sets a keyword (checked against libpq's list).
    pub fn set(&mut self, keyword: &str, value: impl Into<String>) -> Result<(), ParseError> {
        let keyword = check_keyword(keyword)?;
        let value = value.into();
        match keyword {
            // JDBC's and old libpq's spellings of sslmode=require.
            "requiressl" => {
                if value == "1" {
                    self.values.insert("sslmode".into(), "require".into());
                }
            }
            _ => {
                self.values.insert(keyword.to_string(), value);
            }
        }
        Ok(())
    }

    /// Sets a keyword only when it has no value yet (service file and environment defaults).
    pub fn set_default(&mut self, keyword: &str, value: impl Into<String>) {
        if keyword == "requiressl" {
            if !self.values.contains_key("sslmode") {
                let _ = self.set(keyword, value);
            }
            return;
        }
        self.values
            .entry(keyword.to_string())
            .or_insert_with(|| value.into());
    }

    pub fn remove(&mut self, keyword: &str) -> Option<String> {
        self.values.remove(keyword)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

fn check_keyword(keyword: &str) -> Result<&'static str, ParseError> {
    if let Some(k) = KEYWORDS.iter().find(|k| k.name == keyword) {
        return Ok(k.name);
    }
    if UNSUPPORTED.contains(&keyword) {
        return Err(err(format!(
            "connection option \"{keyword}\" is not supported by planck"
        )));
    }
    Err(err(format!("invalid connection option \"{keyword}\"")))
}

fn url_rest(text: &str) -> Option<&str> {
    let t = text.trim_start();
    t.strip_prefix("postgresql://")
        .or_else(|| t.strip_prefix("postgres://"))
}

/// Parses a URL or a keyword string into a [`Spec`].
pub fn parse(text: &str) -> Result<Spec, ParseError> {
    let pairs = match url_rest(text) {
        Some(rest) => parse_url(rest)?,
        None => parse_keywords(text)?,
    };
    let mut spec = Spec::default();
    for (k, v) in pairs {
        spec.set(&k, v)?;
    }
    Ok(spec)
}

// ---- keyword strings -------------------------------------------------------

/// One token of a keyword string: the keyword, and its value when it was read.
struct Pair {
    keyword: String,
    value: String,
}

/// Reads `keyword = value` pairs with libpq's rules: spaces may surround `=`,
/// a value is either single-quoted (`\'` and `\\` escape) or runs to the next
/// space (a backslash escapes any character).
///
/// Returns the pairs read before a failure too, so a malformed string can still
/// be shown with its passwords hidden.
fn scan_keywords(text: &str) -> (Vec<Pair>, Option<ParseError>) {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return (out, None);
        }
        let mut keyword = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            keyword.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return (out, Some(err(missing_equals(&keyword))));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            value.push(n);
                        }
                    }
                    '\'' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                out.push(Pair { keyword, value });
                return (
                    out,
                    Some(err("unterminated quoted string in connection info string")),
                );
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                chars.next();
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        value.push(n);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        out.push(Pair { keyword, value });
    }
}

/// The error for a word not followed by `=`. The word is shown only when it
/// could be a keyword: anything else may be a URL or a password, which an
/// error must never print.
fn missing_equals(word: &str) -> String {
    if let Some((scheme, _)) = word.split_once("://") {
        let scheme: String = scheme
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(20)
            .collect();
        return format!(
            "a {scheme}:// URL is not a PostgreSQL connection string (a URL starts with postgres:// or postgresql://)"
        );
    }
    let keyword_like = !word.is_empty()
        && word.len() <= 40
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if keyword_like {
        format!("missing \"=\" after \"{word}\" in connection info string")
    } else {
        "a word without \"=\" in connection info string (not shown: it may hold a password)"
            .to_string()
    }
}

fn parse_keywords(text: &str) -> Result<Vec<(String, String)>, ParseError> {
    let (pairs, failure) = scan_keywords(text);
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(pairs.into_iter().map(|p| (p.keyword, p.value)).collect())
}

/// Quotes a value for a keyword string (libpq's rules), so it reads back unchanged.
pub fn quote_value(value: &str) -> String {
    let plain = !value.is_empty()
        && !value
            .chars()
            .any(|c| c.is_whitespace() || c == '\'' || c == '\\');
    if plain {
        return value.to_string();
    }
    let mut s = String::with_capacity(value.len() + 2);
    s.push('\'');
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('\'');
    s
}

// ---- URLs ------------------------------------------------------------------

fn percent_decode(s: &str) -> Result<String, ParseError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| err("invalid percent-encoded token in URL"))?;
            if hex == 0 {
                return Err(err("forbidden value %00 in percent-encoded value"));
            }
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| err("percent-encoded value in URL is not UTF-8"))
}

/// Percent-encodes everything but URL's unreserved characters.
pub fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The parts of a URL, each still percent-encoded.
struct UrlParts<'a> {
    userinfo: Option<&'a str>,
    hosts: &'a str,
    dbname: Option<&'a str>,
    query: Option<&'a str>,
}

fn split_url(rest: &str) -> UrlParts<'_> {
    // libpq looks for '@' before the first '/'.
    let (userinfo, after) = match rest.find(['@', '/']) {
        Some(i) if rest.as_bytes()[i] == b'@' => (Some(&rest[..i]), &rest[i + 1..]),
        _ => (None, rest),
    };
    let host_end = after.find(['/', '?']).unwrap_or(after.len());
    let hosts = &after[..host_end];
    let tail = &after[host_end..];
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    let dbname = path.strip_prefix('/').filter(|d| !d.is_empty());
    UrlParts {
        userinfo,
        hosts,
        dbname,
        query,
    }
}

fn parse_url(rest: &str) -> Result<Vec<(String, String)>, ParseError> {
    let parts = split_url(rest);
    let mut out = Vec::new();
    if let Some(ui) = parts.userinfo {
        let (user, password) = match ui.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (ui, None),
        };
        if !user.is_empty() {
            out.push(("user".to_string(), percent_decode(user)?));
        }
        if let Some(p) = password {
            out.push(("password".to_string(), percent_decode(p)?));
        }
    }
    if !parts.hosts.is_empty() {
        let mut hosts = Vec::new();
        let mut ports = Vec::new();
        for spec in parts.hosts.split(',') {
            let (host, port) = if let Some(v6) = spec.strip_prefix('[') {
                let (h, after) = v6.split_once(']').ok_or_else(|| {
                    err(format!(
                        "missing \"]\" in IPv6 host address in URL: \"{spec}\""
                    ))
                })?;
                let port = match after {
                    "" => "",
                    p => p.strip_prefix(':').ok_or_else(|| {
                        err(format!(
                            "unexpected character after IPv6 host address in URL: \"{spec}\""
                        ))
                    })?,
                };
                (h, port)
            } else {
                match spec.rsplit_once(':') {
                    Some((h, p)) => (h, p),
                    None => (spec, ""),
                }
            };
            hosts.push(percent_decode(host)?);
            ports.push(percent_decode(port)?);
        }
        if hosts.iter().any(|h| !h.is_empty()) {
            out.push(("host".to_string(), hosts.join(",")));
        }
        if ports.iter().any(|p| !p.is_empty()) {
            out.push(("port".to_string(), ports.join(",")));
        }
    }
    if let Some(d) = parts.dbname {
        out.push(("dbname".to_string(), percent_decode(d)?));
    }
    if let Some(q) = parts.query {
        for kv in q.split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                err(format!(
                    "missing key/value separator \"=\" in URL query parameter \"{}\"",
                    percent_decode(kv).unwrap_or_default()
                ))
            })?;
            let k = percent_decode(k)?;
            let v = percent_decode(v)?;
            // JDBC's ssl=true, which libpq also accepts.
            if k == "ssl" {
                if v == "true" {
                    out.push(("sslmode".to_string(), "require".to_string()));
                    continue;
                }
                return Err(err(format!("invalid value for \"ssl\": \"{v}\"")));
            }
            out.push((k, v));
        }
    }
    Ok(out)
}

// ---- showing a string that did not parse ------------------------------------

/// A malformed connection string as it may be shown: the password of a URL's
/// user info and every `password` value (keyword string or query parameter)
/// replaced by `***`; for a keyword string that stops parsing, nothing after
/// the point where it stopped (it may hold a quoted password).
pub fn redact_unparsed(text: &str) -> String {
    if let Some(rest) = url_rest(text) {
        let scheme = &text.trim_start()[..text.trim_start().len() - rest.len()];
        let parts = split_url(rest);
        let mut s = scheme.to_string();
        if let Some(ui) = parts.userinfo {
            match ui.split_once(':') {
                Some((u, _)) => s.push_str(&format!("{u}:***@")),
                None => s.push_str(&format!("{ui}@")),
            }
        }
        s.push_str(parts.hosts);
        if let Some(d) = parts.dbname {
            s.push('/');
            s.push_str(d);
        }
        if let Some(q) = parts.query {
            let q: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if percent_decode(k).is_ok_and(|k| is_secret(&k)) => {
                        format!("{k}=***")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            s.push('?');
            s.push_str(&q.join("&"));
        }
        return s;
    }
    let (pairs, failure) = scan_keywords(text);
    let mut shown: Vec<String> = pairs
        .iter()
        .map(|p| {
            if is_secret(&p.keyword) {
                format!("{}=***", p.keyword)
            } else {
                format!("{}={}", p.keyword, quote_value(&p.value))
            }
        })
        .collect();
    if failure.is_some() {
        shown.push("…".to_string());
    }
    shown.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(text: &str, k: &str) -> Option<String> {
        parse(text).unwrap().get(k).map(str::to_string)
    }

    /// Issue 8, 3.1: `password='my Secret PW'` was cut at the first space.
    #[test]
    fn quoted_password_with_spaces_is_one_value() {
        let s = parse("host=h password='my Secret PW' dbname=d").unwrap();
        assert_eq!(s.get("password"), Some("my Secret PW"));
        assert_eq!(s.get("dbname"), Some("d"));
    }

    /// Issue 8, 3.1: `password =hunter2` (spaces around `=`) was not seen as a password.
    #[test]
    fn spaces_around_equals_are_allowed() {
        let s = parse("host = h password =hunter2 user= u").unwrap();
        assert_eq!(s.get("password"), Some("hunter2"));
        assert_eq!(s.get("host"), Some("h"));
        assert_eq!(s.get("user"), Some("u"));
    }

    #[test]
    fn keyword_escapes_follow_libpq() {
        assert_eq!(
            get(r"password='it\'s \\ ok'", "password").as_deref(),
            Some(r"it's \ ok")
        );
        assert_eq!(get(r"password=a\ b", "password").as_deref(), Some("a b"));
        assert_eq!(get("password=''", "password").as_deref(), Some(""));
        assert!(parse("password='open").is_err());
        assert!(parse("host").is_err());
        assert!(
            parse("nosuchkey=1")
                .unwrap_err()
                .message
                .contains("invalid connection option")
        );
        assert!(
            parse("sslpassword=x")
                .unwrap_err()
                .message
                .contains("not supported")
        );
    }

    #[test]
    fn quoting_reads_back_unchanged() {
        for v in ["plain", "", "a b", "it's", r"back\slash", "x'y z\\"] {
            let s = parse(&format!("password={}", quote_value(v))).unwrap();
            assert_eq!(s.get("password"), Some(v), "{v:?}");
        }
    }

    #[test]
    fn urls_decode_every_part() {
        let s = parse("postgresql://us%40r:p%3Ass%20w@db.example:6543/my%20db?sslmode=verify-full&application_name=a%26b").unwrap();
        assert_eq!(s.get("user"), Some("us@r"));
        assert_eq!(s.get("password"), Some("p:ss w"));
        assert_eq!(s.get("host"), Some("db.example"));
        assert_eq!(s.get("port"), Some("6543"));
        assert_eq!(s.get("dbname"), Some("my db"));
        assert_eq!(s.get("sslmode"), Some("verify-full"));
        assert_eq!(s.get("application_name"), Some("a&b"));
        assert_eq!(
            get("postgres://h/d?ssl=true", "sslmode").as_deref(),
            Some("require")
        );
        assert_eq!(
            get("postgres://%2Fvar%2Frun%2Fpostgresql/d", "host").as_deref(),
            Some("/var/run/postgresql")
        );
        assert_eq!(
            get("postgres:///d?host=/tmp", "host").as_deref(),
            Some("/tmp")
        );
        assert!(parse("postgres://h/d?bogus=1").is_err());
        assert!(parse("postgres://h/d?sslmode").is_err());
        assert!(parse("postgres://h/d?x=%zz").is_err());
    }

    #[test]
    fn multi_host_urls_become_lists() {
        let s =
            parse("postgres://h1:1,h2:2,[::1]:3,h4/db?target_session_attrs=read-write").unwrap();
        assert_eq!(s.get("host"), Some("h1,h2,::1,h4"));
        assert_eq!(s.get("port"), Some("1,2,3,"));
        assert_eq!(s.get("target_session_attrs"), Some("read-write"));
        let s = parse("host=a,b port=1,2").unwrap();
        assert_eq!(s.get("host"), Some("a,b"));
        assert_eq!(s.get("port"), Some("1,2"));
    }

    #[test]
    fn later_duplicates_win() {
        assert_eq!(get("host=a host=b", "host").as_deref(), Some("b"));
    }

    #[test]
    fn spec_debug_hides_the_password() {
        let s = parse("host=h password='my Secret PW'").unwrap();
        let d = format!("{s:?}");
        assert!(!d.contains("Secret"), "{d}");
        assert!(d.contains("***"), "{d}");
    }

    /// Issue 8, 3.1: a string that does not parse is still shown without its password.
    #[test]
    fn unparsed_strings_hide_passwords() {
        let shown = redact_unparsed("host=h password='my Secret PW' port=x'");
        assert!(!shown.contains("Secret"), "{shown}");
        let shown = redact_unparsed("host=h password='my Secret PW");
        assert!(!shown.contains("Secret"), "{shown}");
        assert!(shown.starts_with("host=h password=***"), "{shown}");
        let shown = redact_unparsed("postgres://u:top%20secret@h:x/d?password=zz&a=b");
        assert_eq!(shown, "postgres://u:***@h:x/d?password=***&a=b");
    }

    #[test]
    fn a_parse_error_never_prints_what_may_be_a_password() {
        let e = parse("mysql://u:hunter2@h/db").unwrap_err().message;
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains("mysql://") && e.contains("postgres://"), "{e}");
        let e = parse("host=h s3cr3t:pw@x").unwrap_err().message;
        assert!(!e.contains("s3cr3t"), "{e}");
        let e = parse("host=h dbnme").unwrap_err().message;
        assert!(e.contains("\"dbnme\""), "a keyword-like word is named: {e}");
    }
}
