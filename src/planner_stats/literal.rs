//! PostgreSQL's array literal (`{a,"b c",NULL}`), read back into its
//! elements: pg_stats' value lists are `anyarray`, which a client can only
//! receive as text, and which no single cast turns into `text[]` for every
//! type (a box's elements are separated by `;`, an array column's values
//! are arrays themselves). One level only: an element that is itself an
//! array comes back as its own quoted literal, as the server writes it.

/// The elements of `literal`, an array's text output with `delim` between
/// elements (`pg_type.typdelim`); `None` for an unquoted NULL. `Err` says
/// what is wrong and where.
pub(crate) fn parse(literal: &str, delim: char) -> Result<Vec<Option<String>>, String> {
    // A lower bound other than 1 is written before the braces: `[0:2]={...}`.
    let body = match literal.find('=') {
        Some(i) if literal.starts_with('[') => &literal[i + 1..],
        _ => literal,
    };
    let inner = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| format!("not an array literal: {}", shorten(literal)))?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        let mut quoted = false;
        let mut depth = 0usize;
        match chars.peek() {
            Some('"') => {
                quoted = true;
                chars.next();
                loop {
                    match chars.next() {
                        Some('\\') => match chars.next() {
                            Some(c) => value.push(c),
                            None => {
                                return Err(format!("unfinished escape in {}", shorten(literal)));
                            }
                        },
                        Some('"') => break,
                        Some(c) => value.push(c),
                        None => return Err(format!("unfinished quote in {}", shorten(literal))),
                    }
                }
            }
            _ => {
                while let Some(&c) = chars.peek() {
                    if c == delim && depth == 0 {
                        break;
                    }
                    match c {
                        '{' => depth += 1,
                        '}' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    value.push(c);
                    chars.next();
                }
                value.truncate(value.trim_end().len());
            }
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        out.push(if !quoted && value.eq_ignore_ascii_case("NULL") {
            None
        } else {
            Some(value)
        });
        match chars.next() {
            None => return Ok(out),
            Some(c) if c == delim => {}
            Some(c) => return Err(format!("unexpected {c:?} in {}", shorten(literal))),
        }
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn s(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|x| x.map(str::to_string)).collect()
    }

    #[test]
    fn reads_plain_quoted_null_and_escaped_elements() {
        assert_eq!(
            parse(r#"{a,"b c",NULL,"NULL","x\"y\\z",""}"#, ',').unwrap(),
            s(&[
                Some("a"),
                Some("b c"),
                None,
                Some("NULL"),
                Some(r#"x"y\z"#),
                Some("")
            ])
        );
        assert_eq!(parse("{}", ',').unwrap(), s(&[]));
        assert_eq!(
            parse("{1,2.5,-3}", ',').unwrap(),
            s(&[Some("1"), Some("2.5"), Some("-3")])
        );
    }

    #[test]
    fn reads_other_delimiters_nested_arrays_and_bounds() {
        assert_eq!(
            parse("{(1,1),(0,0);(2,2),(1,1)}", ';').unwrap(),
            s(&[Some("(1,1),(0,0)"), Some("(2,2),(1,1)")])
        );
        assert_eq!(
            parse(r#"{"{1,2}","{3}"}"#, ',').unwrap(),
            s(&[Some("{1,2}"), Some("{3}")])
        );
        assert_eq!(
            parse("{{1,2},{3,4}}", ',').unwrap(),
            s(&[Some("{1,2}"), Some("{3,4}")])
        );
        assert_eq!(
            parse("[0:1]={a,b}", ',').unwrap(),
            s(&[Some("a"), Some("b")])
        );
    }

    #[test]
    fn refuses_what_is_not_an_array() {
        assert!(
            parse("a,b", ',')
                .unwrap_err()
                .contains("not an array literal")
        );
        assert!(
            parse(r#"{"a}"#, ',')
                .unwrap_err()
                .contains("unfinished quote")
        );
    }
}
