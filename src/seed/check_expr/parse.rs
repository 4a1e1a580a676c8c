//! The CHECK text as `pg_get_constraintdef` prints it, lexed and parsed
//! into an [`Ex`] tree by a small recursive-descent parser; what the tree
//! says about each column is the module's own work.

#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Str(String),
    Num(f64),
    Bool(bool),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ex {
    Col(String),
    Lit(Lit),
    Func(String, Vec<Ex>),
    Array(Vec<Ex>),
    Cmp(Box<Ex>, String, Box<Ex>),
    Any(Box<Ex>, String, Box<Ex>),
    And(Vec<Ex>),
    Or(Vec<Ex>),
    Not(Box<Ex>),
    IsNull(Box<Ex>, bool),
}

/// The name a CASE expression is parsed under (a reserved word: no
/// function has it), its arguments `[c1, v1, c2, v2, ..., else?]`.
pub(crate) const CASE_FN: &str = "case";

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    Op(String),
    LParen,
    RParen,
    LBrack,
    RBrack,
    Comma,
    Cast,
}

fn lex(s: &str) -> Option<Vec<Tok>> {
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < cs.len() {
        let c = cs[i];
        match c {
            ' ' | '\n' | '\t' => i += 1,
            '(' => {
                out.push(Tok::LParen);
                i += 1
            }
            ')' => {
                out.push(Tok::RParen);
                i += 1
            }
            '[' => {
                out.push(Tok::LBrack);
                i += 1
            }
            ']' => {
                out.push(Tok::RBrack);
                i += 1
            }
            ',' => {
                out.push(Tok::Comma);
                i += 1
            }
            ':' if cs.get(i + 1) == Some(&':') => {
                out.push(Tok::Cast);
                i += 2
            }
            '\'' => out.push(Tok::Str(quoted(&cs, &mut i, '\'')?)),
            '"' => out.push(Tok::Ident(quoted(&cs, &mut i, '"')?)),
            c if c.is_ascii_digit()
                || (c == '-'
                    && cs.get(i + 1).is_some_and(|d| d.is_ascii_digit())
                    && matches!(
                        out.last(),
                        Some(Tok::LParen | Tok::Comma | Tok::Op(_)) | None
                    )) =>
            {
                let st = i;
                i += 1;
                while i < cs.len() && (cs[i].is_ascii_digit() || cs[i] == '.' || cs[i] == 'e') {
                    i += 1;
                }
                out.push(Tok::Num(cs[st..i].iter().collect()));
            }
            c if c.is_alphabetic() || c == '_' => {
                let st = i;
                while i < cs.len()
                    && (cs[i].is_alphanumeric() || cs[i] == '_' || cs[i] == '.' || cs[i] == '$')
                {
                    i += 1;
                }
                out.push(Tok::Ident(cs[st..i].iter().collect()));
            }
            '<' | '>' | '=' | '!' | '~' | '+' | '-' | '*' | '/' | '%' | '|' | '&' => {
                let st = i;
                while i < cs.len() && "<>=!~+-*/%|&".contains(cs[i]) {
                    i += 1;
                }
                out.push(Tok::Op(cs[st..i].iter().collect()));
            }
            _ => return None,
        }
    }
    Some(out)
}

struct P {
    t: Vec<Tok>,
    i: usize,
}

const TYPE_WORDS: &[&str] = &["varying", "precision", "with", "without", "time", "zone"];

impl P {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn kw(&self, k: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s.eq_ignore_ascii_case(k))
    }
    fn eat(&mut self, t: &Tok) -> Option<()> {
        (self.peek()? == t).then(|| self.i += 1)
    }
    fn or(&mut self) -> Option<Ex> {
        let mut v = vec![self.and()?];
        while self.kw("OR") {
            self.i += 1;
            v.push(self.and()?);
        }
        Some(if v.len() == 1 { v.remove(0) } else { Ex::Or(v) })
    }
    fn and(&mut self) -> Option<Ex> {
        let mut v = vec![self.unary()?];
        while self.kw("AND") {
            self.i += 1;
            v.push(self.unary()?);
        }
        Some(if v.len() == 1 {
            v.remove(0)
        } else {
            Ex::And(v)
        })
    }
    fn unary(&mut self) -> Option<Ex> {
        if self.kw("NOT") {
            self.i += 1;
            return Some(Ex::Not(Box::new(self.unary()?)));
        }
        let left = self.primary()?;
        if self.kw("IS") {
            self.i += 1;
            let not = self.kw("NOT");
            if not {
                self.i += 1;
            }
            // `x IS [NOT] TRUE/FALSE` (never NULL) spelt with IS NULL, as
            // exact under three-valued logic: `x IS TRUE` is `x IS NOT
            // NULL AND x`, `x IS NOT TRUE` is `x IS NULL OR NOT x`.
            let truth = if self.kw("TRUE") {
                Some(true)
            } else if self.kw("FALSE") {
                Some(false)
            } else {
                None
            };
            if let Some(t) = truth {
                self.i += 1;
                let value = if t != not {
                    left.clone()
                } else {
                    Ex::Not(Box::new(left.clone()))
                };
                let null = Ex::IsNull(Box::new(left), not);
                return Some(if not {
                    Ex::Or(vec![null, value])
                } else {
                    Ex::And(vec![null, value])
                });
            }
            if !self.kw("NULL") && !self.kw("UNKNOWN") {
                return None;
            }
            self.i += 1;
            return Some(Ex::IsNull(Box::new(left), !not));
        }
        if let Some(Tok::Op(op)) = self.peek().cloned() {
            self.i += 1;
            if self.kw("ANY") {
                self.i += 1;
                self.eat(&Tok::LParen)?;
                let arr = self.or()?;
                self.eat(&Tok::RParen)?;
                self.casts()?;
                return Some(Ex::Any(Box::new(left), op, Box::new(arr)));
            }
            // `x op ALL (ARRAY[a, b])` holds as `x op a AND x op b` does,
            // under three-valued logic too (river's `state <> ALL (...)`,
            // how the server spells `state NOT IN (...)`).
            if self.kw("ALL") {
                self.i += 1;
                self.eat(&Tok::LParen)?;
                let arr = self.or()?;
                self.eat(&Tok::RParen)?;
                self.casts()?;
                let Ex::Array(items) = arr else { return None };
                return Some(Ex::And(
                    items
                        .into_iter()
                        .map(|i| Ex::Cmp(Box::new(left.clone()), op.clone(), Box::new(i)))
                        .collect(),
                ));
            }
            let right = self.primary()?;
            return Some(Ex::Cmp(Box::new(left), op, Box::new(right)));
        }
        Some(left)
    }
    /// After `CASE`: `[subject] WHEN c THEN v ... [ELSE v] END`, as
    /// [`CASE_FN`] over `[c1, v1, c2, v2, ..., else?]`, a simple CASE's
    /// `WHEN x` read as `subject = x` (see [`desugar`]).
    fn case(&mut self) -> Option<Ex> {
        let subject = if self.kw("WHEN") {
            None
        } else {
            Some(self.or()?)
        };
        let mut args = Vec::new();
        while self.kw("WHEN") {
            self.i += 1;
            let c = self.or()?;
            if !self.kw("THEN") {
                return None;
            }
            self.i += 1;
            let v = self.or()?;
            args.push(match &subject {
                Some(s) => Ex::Cmp(Box::new(s.clone()), "=".into(), Box::new(c)),
                None => c,
            });
            args.push(v);
        }
        if args.is_empty() {
            return None;
        }
        if self.kw("ELSE") {
            self.i += 1;
            args.push(self.or()?);
        }
        if !self.kw("END") {
            return None;
        }
        self.i += 1;
        Some(Ex::Func(CASE_FN.into(), args))
    }

    /// After `TRIM(`: how the server prints `btrim` and its kin,
    /// `TRIM(BOTH FROM x)`, `TRIM(LEADING 'chars' FROM x)`, as
    /// `btrim(x)` / `ltrim(x, 'chars')` / `rtrim(x)`.
    fn trim(&mut self) -> Option<Ex> {
        let f = if self.kw("BOTH") {
            "btrim"
        } else if self.kw("LEADING") {
            "ltrim"
        } else if self.kw("TRAILING") {
            "rtrim"
        } else {
            return None;
        };
        self.i += 1;
        let chars = if self.kw("FROM") {
            None
        } else {
            Some(self.or()?)
        };
        if !self.kw("FROM") {
            return None;
        }
        self.i += 1;
        let mut args = vec![self.or()?];
        args.extend(chars);
        self.eat(&Tok::RParen)?;
        Some(Ex::Func(f.into(), args))
    }

    fn casts(&mut self) -> Option<()> {
        while self.eat(&Tok::Cast).is_some() {
            match self.peek()? {
                Tok::Ident(_) => self.i += 1,
                _ => return None,
            }
            while TYPE_WORDS.iter().any(|w| self.kw(w)) {
                self.i += 1;
            }
            if self.peek() == Some(&Tok::LParen) {
                while self.peek()? != &Tok::RParen {
                    self.i += 1;
                }
                self.i += 1;
            }
            while self.peek() == Some(&Tok::LBrack) {
                self.i += 1;
                self.eat(&Tok::RBrack)?;
            }
        }
        Some(())
    }
    fn primary(&mut self) -> Option<Ex> {
        let e = match self.peek()?.clone() {
            Tok::LParen => {
                self.i += 1;
                let e = self.or()?;
                self.eat(&Tok::RParen)?;
                e
            }
            Tok::Str(s) => {
                self.i += 1;
                Ex::Lit(Lit::Str(s))
            }
            Tok::Num(n) => {
                self.i += 1;
                Ex::Lit(Lit::Num(n.parse().ok()?))
            }
            Tok::Ident(id) if id.eq_ignore_ascii_case("ARRAY") => {
                self.i += 1;
                self.eat(&Tok::LBrack)?;
                let mut v = Vec::new();
                if self.peek() != Some(&Tok::RBrack) {
                    loop {
                        v.push(self.or()?);
                        if self.eat(&Tok::Comma).is_none() {
                            break;
                        }
                    }
                }
                self.eat(&Tok::RBrack)?;
                Ex::Array(v)
            }
            Tok::Ident(id)
                if id.eq_ignore_ascii_case("true") || id.eq_ignore_ascii_case("false") =>
            {
                self.i += 1;
                Ex::Lit(Lit::Bool(id.eq_ignore_ascii_case("true")))
            }
            Tok::Ident(id) if id.eq_ignore_ascii_case("CASE") => {
                self.i += 1;
                self.case()?
            }
            Tok::Ident(id)
                if id.eq_ignore_ascii_case("TRIM")
                    && self.t.get(self.i + 1) == Some(&Tok::LParen) =>
            {
                self.i += 2;
                self.trim()?
            }
            Tok::Ident(id) => {
                self.i += 1;
                if self.peek() == Some(&Tok::LParen) {
                    self.i += 1;
                    let mut args = Vec::new();
                    if self.peek() != Some(&Tok::RParen) {
                        loop {
                            args.push(self.or()?);
                            if self.eat(&Tok::Comma).is_none() {
                                break;
                            }
                        }
                    }
                    self.eat(&Tok::RParen)?;
                    Ex::Func(id.to_lowercase(), args)
                } else {
                    Ex::Col(id)
                }
            }
            _ => return None,
        };
        self.casts()?;
        Some(e)
    }
}

/// A CHECK definition's body without the words `pg_get_constraintdef`
/// may put after it: `NOT VALID`, `NO INHERIT`, and 18's `NOT ENFORCED` (a
/// constraint the server does not check; seeded rows still obey it, as the
/// application's would).
pub fn strip_check_suffixes(mut body: &str) -> &str {
    loop {
        let before = body;
        for suffix in ["NOT VALID", "NO INHERIT", "NOT ENFORCED", "ENFORCED"] {
            body = body.strip_suffix(suffix).unwrap_or(body).trim_end();
        }
        if body == before {
            return body;
        }
    }
}

/// The expression tree of a CHECK as `pg_get_constraintdef` prints it,
/// before its CASEs are read as branches (the module's `parse`).
pub(super) fn tree(def: &str) -> Option<Ex> {
    let body = def.trim();
    let body = body.strip_prefix("CHECK")?.trim_start();
    let body = strip_check_suffixes(body);
    let mut p = P {
        t: lex(body)?,
        i: 0,
    };
    let e = p.or()?;
    (p.i == p.t.len()).then_some(e)
}

/// Reads a token quoted with `q` starting at `cs[*i]` (the opening quote),
/// where a doubled quote stands for one; leaves `*i` past the closing quote.
/// `None` when the text ends inside the quotes.
fn quoted(cs: &[char], i: &mut usize, q: char) -> Option<String> {
    let mut v = String::new();
    *i += 1;
    loop {
        let ch = *cs.get(*i)?;
        if ch == q {
            if cs.get(*i + 1) == Some(&q) {
                v.push(q);
                *i += 2;
                continue;
            }
            *i += 1;
            return Some(v);
        }
        v.push(ch);
        *i += 1;
    }
}
