//! A migration file cut into its statements, each with the line it starts
//! on, so `migrate` can run them one by one and say which line made which
//! index.
//!
//! The cut is made on the tokens (sqlparser's tokenizer knows strings,
//! dollar quotes, quoted identifiers and comments), at top-level semicolons.
//! Like psql, a `CREATE FUNCTION` or `CREATE PROCEDURE` with a SQL-standard
//! body (`BEGIN ATOMIC ... END`) is one statement: inside it, `BEGIN` and
//! `CASE` open a block and `END` closes one, and a semicolon inside a block
//! does not end the statement.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

/// One statement of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// The text to run: from the end of the previous statement to the end
    /// of this one's semicolon (leading comments included).
    pub text: String,
    /// Byte offset of `text` in the file.
    pub offset: usize,
    /// 1-based line of the statement's first token (comments skipped).
    pub line: usize,
}

/// Cuts `sql` into statements; `None` when the tokenizer cannot read it
/// (the file then runs whole, as one piece).
pub fn statements(sql: &str) -> Option<Vec<Piece>> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .ok()?;
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(sql.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    // Byte offset just past a token, from its end location (line, column of
    // the character after it, 1-based).
    let byte_at = |line: u64, column: u64| -> usize {
        let start = line_starts
            .get((line as usize).saturating_sub(1))
            .copied()
            .unwrap_or(sql.len());
        let rest = &sql[start..];
        rest.char_indices()
            .nth((column as usize).saturating_sub(1))
            .map(|(b, _)| start + b)
            .unwrap_or(sql.len())
    };
    let mut out = Vec::new();
    let mut begin = 0usize;
    let mut first_line: Option<usize> = None;
    let mut words: Vec<String> = Vec::new();
    let mut depth = 0i32;
    for t in &tokens {
        match &t.token {
            Token::Whitespace(
                Whitespace::Space
                | Whitespace::Tab
                | Whitespace::Newline
                | Whitespace::SingleLineComment { .. }
                | Whitespace::MultiLineComment(_),
            ) => continue,
            Token::SemiColon if depth <= 0 => {
                let end = byte_at(t.span.end.line, t.span.end.column);
                if let Some(line) = first_line.take() {
                    out.push(Piece {
                        text: sql[begin..end].to_string(),
                        offset: begin,
                        line,
                    });
                }
                begin = end;
                words.clear();
                depth = 0;
                continue;
            }
            Token::Word(w) if w.quote_style.is_none() => {
                let lower = w.value.to_lowercase();
                if words.len() < 4 {
                    words.push(lower.clone());
                }
                if routine_with_body(&words) {
                    match lower.as_str() {
                        "begin" | "case" => depth += 1,
                        "end" => depth -= 1,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        first_line.get_or_insert(t.span.start.line as usize);
    }
    if let Some(line) = first_line {
        out.push(Piece {
            text: sql[begin..].to_string(),
            offset: begin,
            line,
        });
    }
    Some(out)
}

/// `CREATE [OR REPLACE] FUNCTION|PROCEDURE`: the statements whose body may
/// hold semicolons outside any quote.
fn routine_with_body(words: &[String]) -> bool {
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(
        w.as_slice(),
        ["create", "function" | "procedure", ..]
            | ["create", "or", "replace", "function" | "procedure", ..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_and_texts(sql: &str) -> Vec<(usize, String)> {
        statements(sql)
            .unwrap()
            .into_iter()
            .map(|p| (p.line, p.text.trim().to_string()))
            .collect()
    }

    #[test]
    fn cuts_at_top_level_semicolons_only() {
        let sql = "-- header\nCREATE TABLE t (a text DEFAULT ';');\n\n\
                   /* two; */ CREATE INDEX t_a ON t (a);\n\
                   CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;\n\
                   CREATE FUNCTION g(x int) RETURNS int LANGUAGE sql\nBEGIN ATOMIC\n  SELECT CASE WHEN x > 0 THEN 1 ELSE 2 END;\n  SELECT 3;\nEND;\n\
                   INSERT INTO \"we;ird\" VALUES (1)";
        let got = lines_and_texts(sql);
        assert_eq!(
            got.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            [2, 4, 5, 6, 11]
        );
        assert_eq!(got[0].1, "-- header\nCREATE TABLE t (a text DEFAULT ';');");
        assert_eq!(got[1].1, "/* two; */ CREATE INDEX t_a ON t (a);");
        assert!(got[3].1.ends_with("SELECT 3;\nEND;"), "{}", got[3].1);
        assert_eq!(got[4].1, "INSERT INTO \"we;ird\" VALUES (1)");
        // Pieces tile the file: nothing is lost between them.
        let pieces = statements(sql).unwrap();
        let joined: String = pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(joined, sql);
        assert!(pieces.iter().all(|p| sql[p.offset..].starts_with(&p.text)));
    }

    #[test]
    fn quoted_bodies_of_every_kind_stay_whole() {
        let sql = "CREATE FUNCTION a() RETURNS text LANGUAGE plpgsql AS $fn$\nBEGIN\n  RETURN $$x;$$;\nEND\n$fn$;\n\
                   CREATE OR REPLACE FUNCTION b() RETURNS int LANGUAGE sql AS 'SELECT 1; SELECT 2';\n\
                   CREATE PROCEDURE c() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); END;\n\
                   SELECT E'it\\'s;', \"a;b\";\n";
        let got = lines_and_texts(sql);
        assert_eq!(
            got.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            [1, 6, 7, 8]
        );
        assert!(got[0].1.ends_with("$fn$;"), "{}", got[0].1);
        assert!(got[2].1.ends_with("END;"), "{}", got[2].1);
    }

    #[test]
    fn comments_alone_are_no_statement() {
        assert_eq!(statements("-- nothing\n/* here */\n").unwrap(), []);
        assert_eq!(lines_and_texts("SELECT 1; -- done\n").len(), 1);
    }

    #[test]
    fn multibyte_text_keeps_offsets_right() {
        let sql = "COMMENT ON TABLE t IS 'café; crème';\nCREATE INDEX é ON t (a);";
        let got = lines_and_texts(sql);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], (2, "CREATE INDEX é ON t (a);".to_string()));
    }
}
