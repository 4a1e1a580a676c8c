//! replay's lean path: prepared executions on a connection's lent socket
//! (src/db/lent.rs, src/replay/lean.rs), against the real server. What it
//! counts, the errors it reports, and that the connection's tokio-postgres
//! client goes on working around it.

use crate::common;

use common::{TestDb, cluster};
use planck::db::ConnInfo;
use planck::replay::lean::{Lean, LeanError};

async fn lean_of(db: &TestDb) -> (tokio_postgres::Client, Lean) {
    let (client, lender) = db.conn().connect_lending().await.unwrap();
    let lender = lender.expect("a plain TCP connection lends its socket");
    (client, Lean::new(lender))
}

#[tokio::test(flavor = "current_thread")]
async fn lean_executions_count_rows_and_leave_the_client_working() {
    let db = test_db!();
    db.exec("CREATE TABLE t (id int PRIMARY KEY, note text)");
    let (client, mut lean) = lean_of(&db).await;
    // Rows a SELECT returns, rows an INSERT or UPDATE wrote.
    assert_eq!(
        lean.execute(
            0,
            "SELECT generate_series(1, $1::int)",
            [Some("7")].into_iter()
        )
        .await,
        Ok(7)
    );
    let insert = "INSERT INTO t SELECT g, $2 FROM generate_series(1, $1::int) g";
    assert_eq!(
        lean.execute(1, insert, [Some("5"), None].into_iter()).await,
        Ok(5)
    );
    assert_eq!(
        lean.execute(
            2,
            "UPDATE t SET note = $1 WHERE id <= 2",
            [Some("x")].into_iter()
        )
        .await,
        Ok(2)
    );
    // The same statement again: prepared once, bound again.
    assert_eq!(
        lean.execute(
            0,
            "SELECT generate_series(1, $1::int)",
            [Some("3")].into_iter()
        )
        .await,
        Ok(3)
    );
    // The client, between and after: it sees what the lean path wrote, and
    // the lean path sees what it does.
    let n: i64 = client
        .query_one("SELECT count(*) FROM t WHERE note IS NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 3);
    client
        .batch_execute("INSERT INTO t VALUES (100, 'from the client')")
        .await
        .unwrap();
    assert_eq!(
        lean.execute(
            3,
            "SELECT * FROM t WHERE id > $1::int",
            [Some("4")].into_iter()
        )
        .await,
        Ok(2)
    );
    // Inside the client's transaction: the lean statement is part of it.
    client.batch_execute("BEGIN").await.unwrap();
    assert_eq!(
        lean.execute(
            4,
            "DELETE FROM t WHERE id = $1::int",
            [Some("100")].into_iter()
        )
        .await,
        Ok(1)
    );
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(db.query_strings("SELECT count(*) FROM t"), vec!["6"]);
}

#[tokio::test(flavor = "current_thread")]
async fn lean_errors_carry_the_servers_sqlstate_and_the_connection_goes_on() {
    let db = test_db!();
    let (client, mut lean) = lean_of(&db).await;
    let div = "SELECT 1 / $1::int";
    match lean.execute(0, div, [Some("0")].into_iter()).await {
        Err(LeanError::Db { code, message }) => {
            assert_eq!(code, "22012");
            assert!(message.contains("division by zero"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Prepared by that first try (the error came at execution), so not
    // prepared twice.
    assert_eq!(lean.execute(0, div, [Some("2")].into_iter()).await, Ok(1));
    // A statement the server cannot prepare fails the same way, each time
    // it is sent (nothing was prepared).
    for _ in 0..2 {
        match lean
            .execute(1, "SELEC 1 WHERE $1::int = 1", [Some("1")].into_iter())
            .await
        {
            Err(LeanError::Db { code, .. }) => assert_eq!(code, "42601"),
            other => panic!("{other:?}"),
        }
    }
    // A bad parameter value.
    match lean.execute(0, div, [Some("two")].into_iter()).await {
        Err(LeanError::Db { code, .. }) => assert_eq!(code, "22P02"),
        other => panic!("{other:?}"),
    }
    // COPY FROM STDIN (allowed with --allow-side-effects): replay has no
    // data for it; the copy fails, not the connection.
    client
        .batch_execute("CREATE TABLE c (n int)")
        .await
        .unwrap();
    let copy = lean.execute(2, "COPY c FROM STDIN", std::iter::empty());
    match tokio::time::timeout(std::time::Duration::from_secs(20), copy)
        .await
        .expect("COPY FROM STDIN waited for data")
    {
        Err(LeanError::Db { code, message }) => {
            assert_eq!(code, "57014");
            assert!(
                message.contains("planck replay sends no COPY data"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(lean.execute(0, div, [Some("1")].into_iter()).await, Ok(1));
    let v: i32 = client.query_one("SELECT 42", &[]).await.unwrap().get(0);
    assert_eq!(v, 42);
    // The server ends the backend: the connection is lost, not an error.
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    db.exec(&format!("SELECT pg_terminate_backend({pid})"));
    match lean.execute(0, div, [Some("2")].into_iter()).await {
        Err(LeanError::Lost(_)) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_unix_socket_connection_lends_nothing() {
    let db = test_db!();
    let c = cluster();
    let text = format!(
        "host={} port={} user=planck dbname={}",
        c.cluster.socket_dir().display(),
        c.port,
        db.name
    );
    let (client, lender) = ConnInfo::parse(&text, true)
        .unwrap()
        .connect_lending()
        .await
        .unwrap();
    assert!(lender.is_none());
    let v: i32 = client.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(v, 1);
}

/// tokio-postgres leaves replies on the wire that no awaited call waits
/// for: a prepare returns before its ReadyForQuery is read, and a dropped
/// statement's Close goes out with no one waiting for its answer. A lean
/// execution straight after either must neither read those replies as its
/// own nor leave its own for the client (the desync hung replay's steps).
#[tokio::test(flavor = "current_thread")]
async fn a_loan_waits_for_the_replies_the_client_left_on_the_wire() {
    let db = test_db!();
    let (client, mut lean) = lean_of(&db).await;
    let sum = "SELECT generate_series(1, $1::int)";
    let round = async {
        for i in 1..=200u32 {
            // A query by text: prepared, executed, its statement dropped
            // (Close sent, its reply unread).
            let v: i32 = client
                .query_one("SELECT $1::int", &[&(i as i32)])
                .await
                .unwrap()
                .get(0);
            assert_eq!(v, i as i32);
            let n = i % 7 + 1;
            assert_eq!(
                lean.execute(0, sum, [Some(n.to_string().as_str())].into_iter())
                    .await,
                Ok(u64::from(n)),
                "round {i}, after a dropped statement"
            );
            // A prepare: returns before its ReadyForQuery is read.
            let p = client.prepare("SELECT 2").await.unwrap();
            assert_eq!(
                lean.execute(1, "SELECT $1::text", [Some("x")].into_iter())
                    .await,
                Ok(1),
                "round {i}, after a prepare"
            );
            let v: i32 = client.query_one(&p, &[]).await.unwrap().get(0);
            assert_eq!(v, 2);
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), round)
        .await
        .expect("the lean path and the client went out of step");
}

/// A unit's COMMIT goes on the lent socket too ([`Lean::simple`]): the
/// COMMIT that fails (a deferred foreign key checked only then) returns the
/// server's SQLSTATE, the transaction is gone (nothing it wrote is there),
/// and both paths go on working on the connection.
#[tokio::test(flavor = "current_thread")]
async fn a_commit_on_the_lean_path_reports_its_error_and_the_connection_goes_on() {
    let db = test_db!();
    db.exec(
        "CREATE TABLE parent (id int PRIMARY KEY); \
         CREATE TABLE child (id int PRIMARY KEY, \
           parent_id int REFERENCES parent DEFERRABLE INITIALLY DEFERRED)",
    );
    let (client, mut lean) = lean_of(&db).await;
    assert_eq!(lean.simple("BEGIN").await, Ok(()));
    let orphan = "INSERT INTO child VALUES ($1::int, $2::int)";
    assert_eq!(
        lean.execute(0, orphan, [Some("1"), Some("99")].into_iter())
            .await,
        Ok(1)
    );
    match lean.simple("COMMIT").await {
        Err(LeanError::Db { code, .. }) => assert_eq!(code, "23503"),
        other => panic!("the COMMIT should fail on the deferred key: {other:?}"),
    }
    // A COMMIT that succeeds, on the same socket, then the client.
    assert_eq!(lean.simple("BEGIN").await, Ok(()));
    assert_eq!(
        lean.execute(
            1,
            "INSERT INTO parent VALUES ($1::int)",
            [Some("99")].into_iter()
        )
        .await,
        Ok(1)
    );
    assert_eq!(lean.simple("COMMIT").await, Ok(()));
    let rows: Vec<(i64, i64)> = client
        .query(
            "SELECT (SELECT count(*) FROM parent), (SELECT count(*) FROM child)",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(rows, [(1, 0)]);
}
