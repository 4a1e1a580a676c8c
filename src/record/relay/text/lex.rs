//! The small SQL lexer the relay reads statements with: enough to tell
//! literals, identifiers, parameters and comments apart.

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    Word(String),
    /// A double-quoted identifier, unquoted.
    Quoted(String),
    /// A string or number, its value.
    Literal(String),
    Param(u32),
    Op(String),
    Punct(u8),
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) kind: Kind,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) numeric: bool,
}

/// A small SQL lexer: enough to tell literals, identifiers and comments apart.
pub(super) struct Lexer<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(s: &'a str) -> Lexer<'a> {
        Lexer {
            s,
            b: s.as_bytes(),
            i: 0,
        }
    }

    pub(super) fn tokens(mut self) -> Vec<Token> {
        let mut v = Vec::new();
        while let Some(t) = self.next_token() {
            v.push(t);
        }
        v
    }

    fn peek(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    pub(super) fn next_token(&mut self) -> Option<Token> {
        loop {
            while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
            if self.i >= self.b.len() {
                return None;
            }
            if self.peek(0) == b'-' && self.peek(1) == b'-' {
                while self.i < self.b.len() && self.b[self.i] != b'\n' {
                    self.i += 1;
                }
                continue;
            }
            if self.peek(0) == b'/' && self.peek(1) == b'*' {
                let mut depth = 0;
                while self.i < self.b.len() {
                    if self.peek(0) == b'/' && self.peek(1) == b'*' {
                        depth += 1;
                        self.i += 2;
                    } else if self.peek(0) == b'*' && self.peek(1) == b'/' {
                        depth -= 1;
                        self.i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        self.i += 1;
                    }
                }
                continue;
            }
            break;
        }
        let start = self.i;
        let c = self.peek(0);
        let tok = |kind, end, numeric| {
            Some(Token {
                kind,
                start,
                end,
                numeric,
            })
        };
        // E'..', B'..', X'..', N'..', U&'..'
        let prefixed =
            matches!(c.to_ascii_lowercase(), b'e' | b'b' | b'x' | b'n') && self.peek(1) == b'\'';
        let unicode =
            c.eq_ignore_ascii_case(&b'u') && self.peek(1) == b'&' && self.peek(2) == b'\'';
        if c == b'\'' || prefixed || unicode {
            let escapes = c.eq_ignore_ascii_case(&b'e');
            self.i += if unicode {
                2
            } else if prefixed {
                1
            } else {
                0
            };
            let value = self.quoted(b'\'', escapes);
            return tok(Kind::Literal(value), self.i, false);
        }
        if c == b'"' {
            let value = self.quoted(b'"', false);
            return tok(Kind::Quoted(value), self.i, false);
        }
        if c == b'$' {
            if self.peek(1).is_ascii_digit() {
                self.i += 1;
                while self.peek(0).is_ascii_digit() {
                    self.i += 1;
                }
                let n = self.s[start + 1..self.i].parse().unwrap_or(0);
                return tok(Kind::Param(n), self.i, false);
            }
            // $tag$ ... $tag$
            let mut j = self.i + 1;
            while j < self.b.len() && (self.b[j].is_ascii_alphanumeric() || self.b[j] == b'_') {
                j += 1;
            }
            if j < self.b.len() && self.b[j] == b'$' {
                let tag = &self.s[self.i..=j];
                let body_start = j + 1;
                let end = self.s[body_start..]
                    .find(tag)
                    .map(|k| body_start + k)
                    .unwrap_or(self.b.len());
                let value = self.s[body_start..end].to_string();
                self.i = (end + tag.len()).min(self.b.len());
                return tok(Kind::Literal(value), self.i, false);
            }
        }
        if c.is_ascii_digit() || (c == b'.' && self.peek(1).is_ascii_digit()) {
            while self.peek(0).is_ascii_alphanumeric()
                || self.peek(0) == b'.'
                || self.peek(0) == b'_'
            {
                // 1e-5
                if self.peek(0).eq_ignore_ascii_case(&b'e') && matches!(self.peek(1), b'+' | b'-') {
                    self.i += 1;
                }
                self.i += 1;
            }
            let value = self.s[start..self.i].to_string();
            return tok(Kind::Literal(value), self.i, true);
        }
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while self.i < self.b.len()
                && (self.b[self.i].is_ascii_alphanumeric()
                    || self.b[self.i] == b'_'
                    || self.b[self.i] == b'$'
                    || self.b[self.i] >= 0x80)
            {
                self.i += 1;
            }
            return tok(Kind::Word(self.s[start..self.i].to_string()), self.i, false);
        }
        if matches!(c, b'(' | b')' | b',' | b';' | b'.' | b'[' | b']') {
            self.i += 1;
            return tok(Kind::Punct(c), self.i, false);
        }
        // Operators: a run of operator characters; `-` and `/` alone, so
        // comments and negative numbers stay readable.
        const OPS: &[u8] = b"+-*/<>=~!@#%^&|`?:";
        self.i += 1;
        if c != b'-' && c != b'/' {
            while self.i < self.b.len() && OPS.contains(&self.b[self.i]) && self.b[self.i] != b'-' {
                self.i += 1;
            }
        }
        tok(Kind::Op(self.s[start..self.i].to_string()), self.i, false)
    }

    /// Reads a quoted string starting at the quote; returns its value.
    fn quoted(&mut self, q: u8, escapes: bool) -> String {
        self.i += 1;
        let mut v = Vec::new();
        while self.i < self.b.len() {
            let c = self.b[self.i];
            if escapes && c == b'\\' && self.i + 1 < self.b.len() {
                v.push(self.b[self.i + 1]);
                self.i += 2;
                continue;
            }
            if c == q {
                if self.peek(1) == q {
                    v.push(q);
                    self.i += 2;
                    continue;
                }
                self.i += 1;
                break;
            }
            v.push(c);
            self.i += 1;
        }
        String::from_utf8_lossy(&v).into_owned()
    }
}
