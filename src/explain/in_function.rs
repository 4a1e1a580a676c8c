//! Statements that ran inside functions (pg_stat_statements `toplevel =
//! false`): their text names the function's parameters (`f.slug`, a bare
//! `slug`, `$1`), its DECLAREd variables and their fields (`v_user.id`), and
//! in a trigger function `NEW`/`OLD`, none of which exists outside it.
//!
//! pg_stat_statements does not say which function a nested statement came
//! from, so the enclosing functions are found by matching the text against
//! `pg_proc.prosrc` (case and whitespace ignored, a normalized `$n` standing
//! for whatever the source has there, plpgsql's `INTO target` dropped as
//! plpgsql drops it before sending). Then the server says which names it
//! cannot resolve, one at a time (42703 / 42P01 with a position), and each is
//! replaced with a typed parameter (`$16::uuid`): the type is the parameter's
//! or the variable's, a field's is read from the catalog, and `NEW.col` is
//! the trigger table's column. Nothing is executed: the statement is only
//! prepared (parsed and analyzed), outside any transaction.
//!
//! plpgsql's own evaluations without FROM (`SELECT v + 1`, `PERFORM f(x)`)
//! are noise: what the functions they call do is recorded on its own.

use std::collections::BTreeSet;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::catalog::functions::Function;
use crate::error::{Error, Result};
use crate::params::binding::{self, Tok};
use crate::session::{StatsMode, tag};

/// The functions, with their source squashed for matching.
#[derive(Debug, Default)]
pub struct Sources {
    funcs: Vec<(Function, String)>,
}

impl Sources {
    pub fn new(funcs: Vec<Function>) -> Sources {
        Sources {
            funcs: funcs
                .into_iter()
                .map(|f| {
                    let s = squash(&without_into(&code_only(&f.src)));
                    (f, s)
                })
                .collect(),
        }
    }
}

/// How a statement recorded inside a function is to be planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InFunction {
    /// It plans as it is (or fails for reasons the engine handles).
    Plain,
    /// Its function's names became typed parameters.
    Bound {
        text: String,
        /// The enclosing function's signature.
        function: String,
        security_definer: bool,
        /// `v_user.id as $16::uuid`, one per name bound.
        names: Vec<String>,
    },
    /// A name the function's scope does not explain: skipped, with why.
    Unbound(String),
}

/// A SELECT without FROM anywhere: plpgsql evaluating an expression
/// (`SELECT v + 1`, `SELECT $1 IS NULL`, `PERFORM f(x)`).
pub fn is_expression(text: &str) -> bool {
    let toks = binding::lex(text);
    let mut words = toks
        .iter()
        .filter(|t| t.kind == Tok::Word)
        .map(|t| text[t.start..t.end].to_ascii_lowercase());
    let first = toks
        .iter()
        .find(|t| !matches!(t.kind, Tok::Space | Tok::Comment | Tok::Punct('(')));
    let starts_with_select = first.is_some_and(|t| {
        t.kind == Tok::Word && text[t.start..t.end].eq_ignore_ascii_case("select")
    });
    starts_with_select && !words.any(|w| w == "from")
}

/// The text without its comments (each becomes a space).
fn code_only(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    for t in binding::lex(src) {
        if t.kind == Tok::Comment {
            out.push(' ');
        } else {
            out.push_str(&src[t.start..t.end]);
        }
    }
    out
}

/// The source as plpgsql sends its statements: `INTO [STRICT] target, ...`
/// removed (`INSERT INTO` and `MERGE INTO` kept), `PERFORM` as `SELECT`.
fn without_into(src: &str) -> String {
    let toks = binding::lex(src);
    let word = |i: usize| -> Option<String> {
        let t = toks.get(i)?;
        (t.kind == Tok::Word).then(|| src[t.start..t.end].to_ascii_lowercase())
    };
    let next_solid = |mut i: usize| {
        while toks
            .get(i)
            .is_some_and(|t| matches!(t.kind, Tok::Space | Tok::Comment))
        {
            i += 1;
        }
        i
    };
    let mut out = String::with_capacity(src.len());
    let mut last_word = String::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if word(i).as_deref() == Some("into") && last_word != "insert" && last_word != "merge" {
            // INTO [STRICT] name[.field] [, name ...]
            let mut j = next_solid(i + 1);
            if word(j).as_deref() == Some("strict") {
                j = next_solid(j + 1);
            }
            loop {
                if !toks
                    .get(j)
                    .is_some_and(|t| matches!(t.kind, Tok::Word | Tok::Quoted))
                {
                    break;
                }
                j += 1;
                while toks.get(j).map(|t| t.kind) == Some(Tok::Punct('.'))
                    && toks
                        .get(j + 1)
                        .is_some_and(|t| matches!(t.kind, Tok::Word | Tok::Quoted))
                {
                    j += 2;
                }
                let k = next_solid(j);
                if toks.get(k).map(|t| t.kind) == Some(Tok::Punct(',')) {
                    j = next_solid(k + 1);
                } else {
                    break;
                }
            }
            out.push(' ');
            last_word = "into".to_string();
            i = j;
            continue;
        }
        if let Some(w) = word(i) {
            // plpgsql sends `PERFORM query` as `SELECT query`.
            if w == "perform" {
                out.push_str("select");
                last_word = w;
                i += 1;
                continue;
            }
            last_word = w;
        }
        out.push_str(&src[t.start..t.end]);
        i += 1;
    }
    out
}

/// Lowercase, whitespace only kept (as one space) between two word
/// characters: how text and source are compared.
fn squash(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_whitespace() {
            pending = true;
            continue;
        }
        if pending && out.chars().next_back().is_some_and(is_word) && is_word(c) {
            out.push(' ');
        }
        pending = false;
        out.push(c);
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The functions whose source holds `text`, each with the `$n` of the text
/// that are `$n` in the source too (the function's own positional
/// parameters, not normalized constants).
pub fn enclosing<'a>(sources: &'a Sources, text: &str) -> Vec<(&'a Function, BTreeSet<u32>)> {
    let code = code_only(text);
    // The text's literal pieces (squashed), and the `$n` between them; read
    // before squashing, which would glue `limit $1` into one word.
    let mut chunks = Vec::new();
    let mut numbers = Vec::new();
    let mut at = 0;
    for t in binding::lex(&code) {
        if let Tok::Param(n) = t.kind {
            chunks.push(squash(&code[at..t.start]));
            numbers.push(n);
            at = t.end;
        }
    }
    chunks.push(squash(&code[at..]));
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for (f, src) in &sources.funcs {
        if let Some(gaps) = find_with_gaps(src, &chunks) {
            let own: BTreeSet<u32> = numbers
                .iter()
                .zip(&gaps)
                .filter(|(n, g)| g.trim() == format!("${n}"))
                .map(|(n, _)| *n)
                .collect();
            out.push((f, own));
        }
    }
    out
}

/// Where `chunks` occur in `src` in order, each gap between two of them one
/// to [`MAX_GAP`] bytes (a constant the text normalized to `$n`): the gaps,
/// from the first start that fits (each later chunk at its first fit).
fn find_with_gaps<'s>(src: &'s str, chunks: &[&str]) -> Option<Vec<&'s str>> {
    let (first, rest) = chunks.split_first()?;
    let mut from = 0;
    while let Some(p) = src.get(from..).and_then(|s| s.find(first)) {
        let start = from + p;
        let mut at = start + first.len();
        let mut gaps = Vec::new();
        let mut ok = true;
        for c in rest {
            let Some(q) = src
                .get(at + 1..)
                .and_then(|s| if c.is_empty() { Some(0) } else { s.find(c) })
            else {
                ok = false;
                break;
            };
            let gap_end = at + 1 + q;
            if q >= MAX_GAP {
                ok = false;
                break;
            }
            gaps.push(&src[at..gap_end]);
            at = gap_end + c.len();
        }
        // Whole words at both ends: `from app.u` is not in `from app.users`.
        let before = src[..start].chars().next_back();
        let after = src[at..].chars().next();
        let bounded = |edge: Option<char>, chunk: Option<char>| {
            !(edge.is_some_and(is_word) && chunk.is_some_and(is_word))
        };
        if ok
            && bounded(before, first.chars().next())
            && bounded(after, chunks.last().and_then(|c| c.chars().next_back()))
        {
            return Some(gaps);
        }
        // Next start: one character on.
        from = start + first.chars().next().map_or(1, char::len_utf8);
        if first.is_empty() {
            return None;
        }
    }
    None
}

/// The longest constant a normalized `$n` stands for, in the squashed source.
const MAX_GAP: usize = 4096;

/// The variables a plpgsql body DECLAREs, with their declared types as
/// written (lowercase): `v_user app_public.users;` -> (`v_user`, `app_public.users`).
pub fn declared(src: &str) -> Vec<(String, String)> {
    let code = code_only(src).to_lowercase();
    let toks = binding::lex(&code);
    let is = |t: &binding::Token, w: &str| t.kind == Tok::Word && &code[t.start..t.end] == w;
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !is(&toks[i], "declare") {
            i += 1;
            continue;
        }
        let from = toks[i].end;
        let Some(j) = toks[i..].iter().position(|t| is(t, "begin")) else {
            break;
        };
        let to = toks[i + j].start;
        i += j;
        for decl in code[from..to].split(';') {
            let decl = decl.trim();
            let Some((name, rest)) = decl.split_once(char::is_whitespace) else {
                continue;
            };
            let name = name.trim_matches('"').to_string();
            let mut rest = rest.trim();
            if let Some(r) = rest.strip_prefix("constant ") {
                rest = r.trim();
            }
            let mut ty = rest;
            for stop in [" not null", " default ", ":=", "=", " collate "] {
                if let Some(k) = ty.find(stop) {
                    ty = &ty[..k];
                }
            }
            let ty = ty.trim();
            if !ty.is_empty() && !name.is_empty() {
                out.push((name, ty.to_string()));
            }
        }
    }
    out
}

/// A reference the server could not resolve: its parts (lowercase unless
/// quoted) and its byte range in the text (a `TG_ARGV[...]` subscript included).
fn chain_at(text: &str, byte: usize) -> Option<(Vec<String>, std::ops::Range<usize>)> {
    let toks = binding::lex(text);
    let i = toks.iter().position(|t| t.start == byte)?;
    let mut parts = Vec::new();
    let mut end;
    let mut j = i;
    loop {
        let t = toks.get(j)?;
        match t.kind {
            Tok::Word => parts.push(text[t.start..t.end].to_lowercase()),
            Tok::Quoted => parts.push(text[t.start + 1..t.end - 1].replace("\"\"", "\"")),
            _ => return None,
        }
        end = t.end;
        if toks.get(j + 1).map(|t| t.kind) == Some(Tok::Punct('.'))
            && toks
                .get(j + 2)
                .is_some_and(|t| matches!(t.kind, Tok::Word | Tok::Quoted))
        {
            j += 2;
        } else {
            break;
        }
    }
    if parts.len() == 1 && parts[0] == "tg_argv" && text[end..].starts_with('[') {
        let close = text[end..].find(']')?;
        end += close + 1;
    }
    Some((parts, toks[i].start..end))
}

/// The types of trigger functions' special variables.
fn trigger_variable(name: &str) -> Option<&'static str> {
    Some(match name {
        "tg_op" | "tg_name" | "tg_when" | "tg_level" => "text",
        "tg_table_name" | "tg_table_schema" | "tg_relname" => "name",
        "tg_nargs" => "integer",
        "tg_relid" => "oid",
        "tg_argv" => "text",
        _ => return None,
    })
}

struct Scope<'a> {
    f: &'a Function,
    vars: Vec<(String, String)>,
}

impl Scope<'_> {
    /// The declared type (as written) of a parameter or variable.
    fn type_of(&self, name: &str) -> Option<String> {
        if let Some(a) = self.f.args.iter().find(|a| a.name.as_deref() == Some(name)) {
            return Some(a.ty.clone());
        }
        let (_, ty) = self.vars.iter().rev().find(|(n, _)| n == name)?;
        // `v alias for $1`
        if let Some(n) = ty.strip_prefix("alias for $") {
            let n: usize = n.trim().parse().ok()?;
            return self.f.inputs().nth(n.checked_sub(1)?).map(|a| a.ty.clone());
        }
        Some(ty.clone())
    }

    fn is_trigger(&self) -> bool {
        !self.f.trigger_tables.is_empty()
    }
}

/// Why a name cannot be bound, or its SQL type.
async fn resolve(
    client: &Client,
    stats: StatsMode,
    scope: &Scope<'_>,
    parts: &[String],
) -> Result<std::result::Result<String, String>> {
    let sig = &scope.f.signature;
    match parts {
        [name] => {
            if scope.is_trigger()
                && let Some(ty) = trigger_variable(name)
            {
                return Ok(Ok(ty.to_string()));
            }
            match scope.type_of(name) {
                Some(ty) => Ok(sql_type(client, stats, &ty).await?.ok_or(format!(
                    "{name} in {sig} is declared {ty}, a type planck cannot read"
                ))),
                None => Ok(Err(format!(
                    "{name} is neither a parameter nor a variable of {sig}"
                ))),
            }
        }
        [first, field] => {
            if *first == scope.f.name
                && let Some(a) = scope
                    .f
                    .args
                    .iter()
                    .find(|a| a.name.as_deref() == Some(field))
            {
                return Ok(Ok(a.ty.clone()));
            }
            if scope.is_trigger() && (first == "new" || first == "old") {
                for t in &scope.f.trigger_tables {
                    if let Some(ty) = column_type(client, stats, t, field).await? {
                        return Ok(Ok(ty));
                    }
                }
                return Ok(Err(format!(
                    "{first}.{field}: no column {field} in {} (the tables whose triggers call {sig})",
                    scope.f.trigger_tables.join(", ")
                )));
            }
            let Some(ty) = scope.type_of(first) else {
                return Ok(Err(format!(
                    "{first} is neither a parameter nor a variable of {sig}"
                )));
            };
            if ty == "record" {
                return Ok(Err(format!(
                    "{first} is a record in {sig}, whose fields planck cannot know"
                )));
            }
            let ty = ty.trim_end_matches("%rowtype").to_string();
            Ok(field_type(client, stats, &ty, field).await?.ok_or(format!(
                "{first}.{field}: {first} is declared {ty} in {sig}, which has no field {field}"
            )))
        }
        _ => Ok(Err(format!("{} is not a name of {sig}", parts.join(".")))),
    }
}

/// A declared type as the server names it (`%type` read from the column).
async fn sql_type(client: &Client, stats: StatsMode, ty: &str) -> Result<Option<String>> {
    if let Some(col) = ty.strip_suffix("%type") {
        let Some((rel, c)) = col.rsplit_once('.') else {
            return Ok(None);
        };
        return column_type(client, stats, rel, c).await;
    }
    let ty = ty.trim_end_matches("%rowtype");
    let row = client
        .query_one(
            &tag(stats, "SELECT format_type(to_regtype($1), NULL)"),
            &[&ty],
        )
        .await
        .map_err(|e| Error::db("reading a function variable's type", e))?;
    Ok(row.get(0))
}

async fn column_type(
    client: &Client,
    stats: StatsMode,
    rel: &str,
    column: &str,
) -> Result<Option<String>> {
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                  WHERE attrelid = to_regclass($1) AND attname = $2 AND attnum > 0
                    AND NOT attisdropped",
            ),
            &[&rel, &column],
        )
        .await
        .map_err(|e| Error::db("reading a column's type", e))?;
    Ok(rows.first().map(|r| r.get(0)))
}

async fn field_type(
    client: &Client,
    stats: StatsMode,
    ty: &str,
    field: &str,
) -> Result<Option<String>> {
    let rows = client
        .query(
            &tag(
                stats,
                "SELECT format_type(a.atttypid, a.atttypmod)
                   FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid
                  WHERE t.oid = to_regtype($1) AND a.attname = $2 AND a.attnum > 0
                    AND NOT a.attisdropped",
            ),
            &[&ty, &field],
        )
        .await
        .map_err(|e| Error::db("reading a record field's type", e))?;
    Ok(rows.first().map(|r| r.get(0)))
}

/// A name the server could not resolve: the byte where it starts and the message.
fn unresolved(e: &tokio_postgres::Error, sent: &str, text: &str) -> Option<(usize, String)> {
    let db = e.as_db_error()?;
    if *db.code() != SqlState::UNDEFINED_COLUMN && *db.code() != SqlState::UNDEFINED_TABLE {
        return None;
    }
    let Some(tokio_postgres::error::ErrorPosition::Original(p)) = db.position() else {
        return None;
    };
    // Positions count characters of what was sent, which may carry a tag first.
    let offset = sent.chars().count() - text.chars().count();
    let ch = (*p as usize).checked_sub(1 + offset)?;
    let byte = text.char_indices().nth(ch).map(|(b, _)| b)?;
    Some((byte, db.message().to_string()))
}

/// Prepares `text`; when the server cannot resolve a name in it, finds the
/// functions it ran in and binds their names (see the module's doc).
pub async fn bind(
    client: &Client,
    stats: StatsMode,
    sources: &Sources,
    text: &str,
) -> Result<InFunction> {
    let sent = tag(stats, text);
    let first = match client.prepare(&sent).await {
        Ok(_) => return Ok(InFunction::Plain),
        Err(e) => e,
    };
    let Some((_, message)) = unresolved(&first, &sent, text) else {
        // Refused before any name was looked up (a constant's type): bind
        // the plpgsql variables a SELECT names bare, and let the engine type the rest.
        return Ok(bind_bare(client, stats, sources, text)
            .await?
            .unwrap_or(InFunction::Plain));
    };
    let candidates = enclosing(sources, text);
    if candidates.is_empty() {
        return Ok(InFunction::Unbound(format!(
            "ran only inside a function, but no SQL or plpgsql function's source \
             (pg_proc.prosrc) holds this text, so its names cannot be bound: {message}"
        )));
    }
    let mut why = Vec::new();
    for (f, own) in candidates {
        let scope = Scope {
            f,
            vars: if f.plpgsql {
                declared(&f.src)
            } else {
                Vec::new()
            },
        };
        match bind_in(client, stats, &scope, &own, text).await? {
            Ok(b) => return Ok(b),
            Err(reason) => why.push(reason),
        }
    }
    Ok(InFunction::Unbound(format!(
        "ran only inside a function; planck cannot bind its names: {}",
        why.join("; ")
    )))
}

/// The bare words of a SELECT that are a plpgsql function's variables or
/// parameters (not after `.` or `AS`, not before `.` or `(`), bound in the
/// first function holding the text that has any. plpgsql reads such a word
/// as the variable (a column of that name would be an error there, by
/// default `variable_conflict = error`); a SELECT has no target column
/// lists where a variable's name could be a column's.
async fn bind_bare(
    client: &Client,
    stats: StatsMode,
    sources: &Sources,
    text: &str,
) -> Result<Option<InFunction>> {
    let toks = binding::lex(text);
    let solid: Vec<&binding::Token> = toks
        .iter()
        .filter(|t| !matches!(t.kind, Tok::Space | Tok::Comment))
        .collect();
    let starts_select = solid.first().is_some_and(|t| {
        t.kind == Tok::Word
            && matches!(
                text[t.start..t.end].to_ascii_lowercase().as_str(),
                "select" | "with"
            )
    });
    if !starts_select {
        return Ok(None);
    }
    for (f, _) in enclosing(sources, text) {
        if !f.plpgsql {
            continue;
        }
        let scope = Scope {
            f,
            vars: declared(&f.src),
        };
        let mut found: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for (i, t) in solid.iter().enumerate() {
            if t.kind != Tok::Word {
                continue;
            }
            let word = text[t.start..t.end].to_lowercase();
            let before = i.checked_sub(1).map(|j| solid[j]);
            let after = solid.get(i + 1);
            let qualified = before.is_some_and(|b| {
                b.kind == Tok::Punct('.') || text[b.start..b.end].eq_ignore_ascii_case("as")
            }) || after
                .is_some_and(|a| matches!(a.kind, Tok::Punct('.') | Tok::Punct('(')));
            if !qualified && scope.type_of(&word).is_some() {
                found.push((t.start..t.end, word));
            }
        }
        if found.is_empty() {
            continue;
        }
        let mut out = text.to_string();
        let mut next = binding::params(text).last().copied().unwrap_or(0) + 1;
        let mut given: Vec<(String, u32, String)> = Vec::new();
        let mut names = Vec::new();
        let mut edits = Vec::new();
        for (range, word) in found {
            let (n, ty) = match given.iter().find(|(w, _, _)| *w == word) {
                Some((_, n, ty)) => (*n, ty.clone()),
                None => match resolve(client, stats, &scope, std::slice::from_ref(&word)).await? {
                    Ok(ty) => {
                        names.push(format!("{word} as {ty}"));
                        given.push((word.clone(), next, ty.clone()));
                        next += 1;
                        (next - 1, ty)
                    }
                    Err(_) => return Ok(None),
                },
            };
            edits.push((range, format!("${n}::{ty}")));
        }
        for (range, with) in edits.into_iter().rev() {
            out.replace_range(range, &with);
        }
        return Ok(Some(InFunction::Bound {
            text: binding::renumber(&out),
            function: f.signature.clone(),
            security_definer: f.security_definer,
            names,
        }));
    }
    Ok(None)
}

/// Binds `text`'s names in one function's scope, one server answer at a time.
async fn bind_in(
    client: &Client,
    stats: StatsMode,
    scope: &Scope<'_>,
    own: &BTreeSet<u32>,
    text: &str,
) -> Result<std::result::Result<InFunction, String>> {
    let sig = &scope.f.signature;
    let mut text = text.to_string();
    let mut names = Vec::new();
    // The function's own `$n`, typed as its parameters.
    for n in own {
        if let Some(a) = scope.f.inputs().nth((*n as usize).saturating_sub(1)) {
            text = binding::cast_params(&text, &BTreeSet::from([*n]), &a.ty);
            names.push(format!("its own ${n} as {}", a.ty));
        }
    }
    let mut next = binding::params(&text).last().copied().unwrap_or(0) + 1;
    let mut given: Vec<(Vec<String>, u32, String)> = Vec::new();
    // Each round binds one name; a statement has few.
    for _ in 0..64 {
        let sent = tag(stats, &text);
        let err = match client.prepare(&sent).await {
            Ok(_) => break,
            Err(e) => e,
        };
        let Some((byte, message)) = unresolved(&err, &sent, &text) else {
            // Another kind of error (a parameter's type): the engine's to handle.
            break;
        };
        let Some((parts, range)) = chain_at(&text, byte) else {
            return Ok(Err(format!("in {sig}: {message}")));
        };
        let (n, ty) = match given.iter().find(|(p, _, _)| *p == parts) {
            Some((_, n, ty)) => (*n, ty.clone()),
            None => match resolve(client, stats, scope, &parts).await? {
                Ok(ty) => {
                    let n = next;
                    next += 1;
                    names.push(format!("{} as {ty}", parts.join(".")));
                    given.push((parts, n, ty.clone()));
                    (n, ty)
                }
                Err(reason) => return Ok(Err(format!("{reason} ({message})"))),
            },
        };
        text.replace_range(range, &format!("${n}::{ty}"));
    }
    // plpgsql numbers the constants after its own variables (`$9`, ...):
    // the gaps would be parameters of unknown type.
    Ok(Ok(InFunction::Bound {
        text: binding::renumber(&text),
        function: sig.clone(),
        security_definer: scope.f.security_definer,
        names,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, src: &str) -> Function {
        Function {
            signature: format!("{name}()"),
            name: name.to_string(),
            plpgsql: true,
            src: src.to_string(),
            args: Vec::new(),
            security_definer: false,
            trigger_tables: Vec::new(),
        }
    }

    #[test]
    fn expressions_without_from_are_noise_queries_are_not() {
        assert!(is_expression("SELECT v + 1"));
        assert!(is_expression("select $1 IS NULL"));
        assert!(is_expression(
            "SELECT app_private.assert_valid_password(password)"
        ));
        assert!(!is_expression("select * from t where id = v"));
        assert!(!is_expression("SELECT exists(select 1 from t)"));
        assert!(!is_expression("update t set a = v"));
    }

    #[test]
    fn the_text_is_found_in_the_source_without_into_case_or_whitespace() {
        let sources = Sources::new(vec![
            f(
                "a",
                "declare v_user app.users; begin\n  SELECT * INTO v_user FROM app.users\n    \
                 WHERE id = v_id AND n > 5; -- why\nend",
            ),
            f(
                "b",
                "begin insert into app.t (x) values ($1, 'k'); perform 1 from app.u; end",
            ),
        ]);
        let found = enclosing(
            &sources,
            "select *   from app.users where id = v_id and n > $1",
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.name, "a");
        assert!(found[0].1.is_empty(), "{:?}", found[0].1);
        // `$1` is the function's own parameter, `$2` a normalized constant.
        let found = enclosing(&sources, "insert into app.t (x) values ($1, $2)");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.name, "b");
        assert_eq!(found[0].1, BTreeSet::from([1]));
        assert!(enclosing(&sources, "select * from app.other").is_empty());
        assert_eq!(enclosing(&sources, "SELECT $3 FROM app.u").len(), 1);
    }

    #[test]
    fn declared_variables_and_their_types() {
        let src = "DECLARE\n  v_user app_public.users;\n  v_n int := 0;\n  \
                   v_c CONSTANT text NOT NULL default 'x';\n  v_a alias for $1;\n  \
                   v_t app.t.id%type;\nBEGIN\n  null;\nEND";
        assert_eq!(
            declared(src),
            vec![
                ("v_user".into(), "app_public.users".into()),
                ("v_n".into(), "int".into()),
                ("v_c".into(), "text".into()),
                ("v_a".into(), "alias for $1".into()),
                ("v_t".into(), "app.t.id%type".into()),
            ]
        );
    }

    #[test]
    fn the_reference_at_an_error_position_with_its_fields() {
        let t = "select * from t where id = v_user.id and x = tg_argv[$3]";
        let at = t.find("v_user").unwrap();
        let (parts, range) = chain_at(t, at).unwrap();
        assert_eq!(parts, vec!["v_user", "id"]);
        assert_eq!(&t[range], "v_user.id");
        let (parts, range) = chain_at(t, t.find("tg_argv").unwrap()).unwrap();
        assert_eq!(parts, vec!["tg_argv"]);
        assert_eq!(&t[range], "tg_argv[$3]");
    }
}
