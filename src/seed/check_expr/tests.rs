//! Tests of [`super`]: CHECK definitions as the server prints them, read
//! into facts.

use super::*;

#[test]
fn in_lists() {
    let f = facts(
        "CHECK ((plan = ANY (ARRAY['free'::text, 'pro'::text, 'team'::text])))",
        None,
    )
    .unwrap();
    assert_eq!(
        f["plan"].in_list,
        Some(vec![
            Lit::Str("free".into()),
            Lit::Str("pro".into()),
            Lit::Str("team".into())
        ])
    );
    let f = facts(
        "CHECK (((status)::text = ANY ((ARRAY['a'::character varying, 'b'::character varying])::text[])))",
        None,
    )
    .unwrap();
    assert_eq!(f["status"].in_list.as_ref().map(Vec::len), Some(2));
}

#[test]
fn bounds_and_domains() {
    let f = facts(
        "CHECK (((VALUE >= 1901) AND (VALUE <= 2155)))",
        Some("release_year"),
    )
    .unwrap();
    assert_eq!(f["release_year"].lo, Some((Lit::Num(1901.0), true)));
    assert_eq!(f["release_year"].hi, Some((Lit::Num(2155.0), true)));
    let f = facts("CHECK ((number > 0))", None).unwrap();
    assert_eq!(f["number"].lo, Some((Lit::Num(0.0), false)));
    let f = facts("CHECK ((price >= (0)::numeric))", None).unwrap();
    assert_eq!(f["price"].lo, Some((Lit::Num(0.0), true)));
    let f = facts("CHECK ((char_length(name) <= 20))", None).unwrap();
    assert_eq!(f["name"].max_len, Some(20));
}

#[test]
fn an_or_prefers_the_branch_the_table_can_honour() {
    use crate::seed::row::generate::Val;
    let def = "CHECK ((((draft IS NULL) AND (build_id IS NULL) AND (repo <> 0)) OR ((draft IS NOT NULL) AND (build_id IS NOT NULL) AND (repo = 0))))";
    // Fewest NOT NULL demands: the first branch.
    let f = facts(def, None).unwrap();
    assert_eq!(f["repo"].not_eq, vec![Lit::Num(0.0)]);
    // The parent holds only key 0: the second branch.
    let keys = [Val::Int(0)];
    let ok = |m: &BTreeMap<String, ColFacts>| {
        m.get("repo")
            .is_none_or(|f| keys.iter().all(|k| admits(f, k)))
    };
    let f = facts_where(def, None, &ok).unwrap();
    assert_eq!(f["repo"].in_list, Some(vec![Lit::Num(0.0)]));
    assert!(f["draft"].not_null && f["build_id"].not_null);
    // No branch honoured: the old choice stands.
    let f = facts_where(def, None, &|_| false).unwrap();
    assert_eq!(f["repo"].not_eq, vec![Lit::Num(0.0)]);
}

#[test]
fn admits_checks_equality_and_bounds() {
    use crate::seed::row::generate::Val;
    let f = facts("CHECK (((n > 1) AND (n <= 5) AND (n <> 3)))", None).unwrap();
    let n = &f["n"];
    let ok: Vec<i64> = (0..7).filter(|i| admits(n, &Val::Int(*i))).collect();
    assert_eq!(ok, vec![2, 4, 5]);
    let f = facts("CHECK ((kind = ANY (ARRAY['a'::text, 'b'::text])))", None).unwrap();
    assert!(admits(&f["kind"], &Val::Text("a".into())));
    assert!(!admits(&f["kind"], &Val::Text("c".into())));
    assert!(!admits(&f["kind"], &Val::Int(1)));
}

#[test]
fn koji_paired_nulls_read_their_second_branch() {
    let f = facts(
        "CHECK ((((active IS NULL) AND (revoke_event IS NOT NULL) AND (revoker_id IS NOT NULL)) OR ((active IS NOT NULL) AND (revoke_event IS NULL) AND (revoker_id IS NULL))))",
        None,
    )
    .unwrap();
    assert!(f["active"].not_null);
    assert!(f["revoke_event"].is_null && f["revoker_id"].is_null);
    let f = facts("CHECK (((a IS NOT NULL) <> (b IS NOT NULL)))", None).unwrap();
    assert_eq!(f["a"].nulls.map(|n| n.0), Some(NullRule::ExactlyOne));
    let f = facts("CHECK ((num_nonnulls(x, y, z) = 1))", None).unwrap();
    assert_eq!(
        f["z"].nulls.map(|n| (n.0, n.2, n.3)),
        Some((NullRule::ExactlyOne, 2, 3))
    );
    // The same count spelled as a sum of CASEs and of casts.
    let f = facts(
        "CHECK ((((CASE WHEN (x IS NULL) THEN 0 ELSE 1 END + CASE WHEN (y IS NOT NULL) \
         THEN 1 ELSE 0 END) + ((z IS NOT NULL))::integer) = 1))",
        None,
    )
    .unwrap();
    assert_eq!(
        f["z"].nulls.map(|n| (n.0, n.2, n.3)),
        Some((NullRule::ExactlyOne, 2, 3))
    );
    // A CASE that counts something else is not a count of the set.
    let f = facts(
        "CHECK (((CASE WHEN (x IS NULL) THEN 1 ELSE 0 END + CASE WHEN (y IS NULL) \
         THEN 0 ELSE 1 END) = 1))",
        None,
    );
    assert!(f.is_none_or(|f| f.get("x").is_none_or(|x| x.nulls.is_none())));
    let f = facts("CHECK (((ended IS NULL) OR (started <= ended)))", None).unwrap();
    assert_eq!(f["ended"].after, vec![("started".to_string(), false)]);
    let f = facts("CHECK (active)", None).unwrap();
    assert_eq!(f["active"].in_list, Some(vec![Lit::Bool(true)]));
}

/// Issue 46: length bounds in every spelling the server prints, on
/// the value or its trimmed value, the tightest kept.
#[test]
fn length_bounds_in_every_spelling() {
    let f = facts("CHECK ((length(body) >= 6000))", None).unwrap();
    assert_eq!(f["body"].min_len, Some(6000));
    let f = facts(
        "CHECK (((length(body) >= 5) AND (length(body) <= 10)))",
        None,
    )
    .unwrap();
    assert_eq!((f["body"].min_len, f["body"].max_len), (Some(5), Some(10)));
    let f = facts("CHECK ((3 < length(code)))", None).unwrap();
    assert_eq!(f["code"].min_len, Some(4));
    let f = facts("CHECK ((character_length(pin) = 12))", None).unwrap();
    assert_eq!((f["pin"].min_len, f["pin"].max_len), (Some(12), Some(12)));
    let f = facts("CHECK ((octet_length(c) <= 30))", None).unwrap();
    assert!(f["c"].len_bytes && f["c"].max_len == Some(30));
    // PostgreSQL prints btrim(x) as TRIM(BOTH FROM x).
    let f = facts("CHECK ((char_length(TRIM(BOTH FROM c)) > 2))", None).unwrap();
    assert!(f["c"].trim && f["c"].nonempty);
    assert_eq!(f["c"].min_len, Some(3));
    let f = facts("CHECK ((length(btrim(c)) > 0))", None).unwrap();
    assert!(f["c"].trim && f["c"].nonempty);
    assert!(parse("CHECK ((length(TRIM(LEADING 'x'::text FROM c)) > 0))").is_some());
    let mut m = facts("CHECK ((length(a) <= 9))", None).unwrap()["a"].clone();
    merge(
        &mut m,
        facts("CHECK ((length(a) <= 20))", None).unwrap()["a"].clone(),
    );
    assert_eq!(m.max_len, Some(9));
    let bad = facts("CHECK (((length(a) > 9) AND (length(a) < 5)))", None).unwrap();
    assert!(contradicts(&bad["a"]));
}

/// Issue 46: a CASE in a positive place is the OR of its branches.
#[test]
fn a_case_reads_as_its_branches() {
    let e = parse(
        "CHECK ((1 =\nCASE\n    WHEN ((kind = 'bool'::text) AND (a IS NOT NULL)) THEN 1\n    WHEN ((kind = 'number'::text) AND (b IS NOT NULL)) THEN 1\n    ELSE 0\nEND))",
    )
    .unwrap();
    let kind = |k: &str| {
        Ex::Cmp(
            Box::new(Ex::Col("kind".into())),
            "=".into(),
            Box::new(Ex::Lit(Lit::Str(k.into()))),
        )
    };
    let set = |c: &str| Ex::IsNull(Box::new(Ex::Col(c.into())), false);
    let first = Ex::And(vec![kind("bool"), set("a")]);
    assert_eq!(
        e,
        Ex::Or(vec![
            first.clone(),
            Ex::And(vec![Ex::Not(Box::new(first)), kind("number"), set("b")]),
        ])
    );
    // A simple CASE compares its subject.
    let e = parse("CHECK (\nCASE kind\n    WHEN 'direct'::text THEN (x IS NOT NULL)\n    ELSE (x IS NULL)\nEND)").unwrap();
    assert_eq!(
        e,
        Ex::Or(vec![
            Ex::And(vec![kind("direct"), set("x")]),
            Ex::And(vec![
                Ex::Not(Box::new(kind("direct"))),
                Ex::IsNull(Box::new(Ex::Col("x".into())), true)
            ]),
        ])
    );
    // Facts read one branch; under NOT the CASE stays whole.
    let f = facts(
        "CHECK (CASE WHEN f THEN (n > 0) ELSE (n IS NULL) END)",
        None,
    )
    .unwrap();
    assert_eq!(f["f"].in_list, Some(vec![Lit::Bool(true)]));
    assert!(is_or(
        "CHECK (CASE WHEN f THEN (n > 0) ELSE (n IS NULL) END)"
    ));
    let e = parse("CHECK ((NOT CASE WHEN f THEN (n > 0) ELSE false END))").unwrap();
    assert!(matches!(e, Ex::Not(x) if matches!(&*x, Ex::Func(f, _) if f == CASE_FN)));
}

#[test]
fn json_kinds() {
    let f = facts("CHECK ((jsonb_typeof(meta) = 'array'::text))", None).unwrap();
    assert_eq!(f["meta"].json_type, Some(vec!["array".to_string()]));
    let f = facts(
        "CHECK ((json_typeof(x) = ANY (ARRAY['string'::text, 'number'::text])))",
        None,
    )
    .unwrap();
    assert_eq!(f["x"].json_type.as_ref().map(Vec::len), Some(2));
    assert!(facts("CHECK ((jsonb_typeof(x) = 'list'::text))", None).is_none());
}

#[test]
fn ordered_pairs_and_unknowns() {
    let f = facts("CHECK ((created_at <= updated_at))", None).unwrap();
    assert_eq!(
        f["updated_at"].after,
        vec![("created_at".to_string(), false)]
    );
    assert!(facts("CHECK ((lower(email) ~ '^x'::text))", None).is_none());
    assert!(facts("CHECK (((a + b) > 3))", None).is_none());
}
