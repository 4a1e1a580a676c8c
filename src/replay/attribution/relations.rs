//! The relations a statement writes or row-locks, read from its text: what
//! a wait is matched against, and the relations replay's report names.

/// The relations a statement writes or row-locks: the target of
/// UPDATE / DELETE / INSERT / MERGE, and for `FOR UPDATE` / `FOR SHARE`
/// (any strength) the tables after FROM and JOIN. Lower case, unqualified.
pub fn locked_relations(sql: &str) -> Vec<String> {
    let toks = words(sql);
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        let n = name.rsplit('.').next().unwrap_or(name).to_string();
        if !n.is_empty() && !out.contains(&n) {
            out.push(n);
        }
    };
    let row_lock = toks
        .windows(2)
        .any(|w| w[0] == "for" && matches!(w[1].as_str(), "update" | "share" | "no" | "key"));
    for (i, t) in toks.iter().enumerate() {
        let next = |k: usize| toks.get(i + k).map(String::as_str);
        match t.as_str() {
            "update" if i == 0 || toks[i - 1] != "for" && toks[i - 1] != "key" => {
                if let Some(n) = next(1).filter(|n| *n != "only") {
                    push(n);
                } else if let Some(n) = next(2) {
                    push(n);
                }
            }
            "into" if i > 0 && (toks[i - 1] == "insert" || toks[i - 1] == "merge") => {
                if let Some(n) = next(1) {
                    push(n);
                }
            }
            "from" if i > 0 && toks[i - 1] == "delete" => {
                if let Some(n) = next(1) {
                    push(n);
                }
            }
            "from" | "join" if row_lock => {
                if let Some(n) = next(1).filter(|n| *n != "(" && *n != "only") {
                    push(n);
                }
            }
            _ => {}
        }
    }
    out
}

/// Lower-case words of SQL with quotes and punctuation dropped (a
/// qualified name stays one word, `audit.events`).
fn words(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_str = false;
    for c in sql.chars() {
        if in_str {
            if c == '\'' {
                in_str = false;
            }
            continue;
        }
        match c {
            '\'' => in_str = true,
            c if c.is_alphanumeric() || c == '_' || c == '.' || c == '$' => {
                cur.extend(c.to_lowercase())
            }
            '"' => {}
            _ => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if c == '(' {
                    out.push("(".into());
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_relations_of_common_shapes() {
        assert_eq!(
            locked_relations("UPDATE pgbench_accounts SET abalance = 1 WHERE aid = $1"),
            ["pgbench_accounts"]
        );
        assert_eq!(
            locked_relations("update public.\"Accounts\" set x = 1"),
            ["accounts"]
        );
        assert_eq!(
            locked_relations("INSERT INTO pgbench_history (tid) VALUES ($1)"),
            ["pgbench_history"]
        );
        assert_eq!(
            locked_relations("DELETE FROM items WHERE id = 1"),
            ["items"]
        );
        assert_eq!(
            locked_relations("SELECT * FROM a JOIN b ON a.id = b.a WHERE a.id = 1 FOR UPDATE OF a"),
            ["a", "b"]
        );
        assert_eq!(
            locked_relations("SELECT * FROM a WHERE note = 'for update'"),
            Vec::<String>::new()
        );
        assert_eq!(
            locked_relations("SELECT abalance FROM pgbench_accounts WHERE aid = $1"),
            Vec::<String>::new()
        );
        assert_eq!(locked_relations("SELECT 1 FROM t FOR NO KEY UPDATE"), ["t"]);
    }
}
