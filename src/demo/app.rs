//! The bundled example's test run: plays its API and its background jobs
//! against `DATABASE_URL`, the way the application's test suite would, so
//! `planck record -- tools/example-app` captures what the application sends.
//!
//! - API requests run as `app_user` (password `app_user`; override the whole
//!   URL with `APP_DATABASE_URL`), inside a transaction that sets
//!   `app.account_id` (with `set_config` or `SET LOCAL`, as drivers and ORMs
//!   do), with parameters bound through the extended protocol
//!   (tokio-postgres prepares every statement), and some literals inlined in
//!   the SQL as ORMs write them (`status = 'open'`, `LIMIT 50`).
//! - Background jobs run as the owner of the tables: `DATABASE_URL`'s user.
//!
//! Fixtures are loaded with COPY (so they do not pass for application
//! statements), once: on a database that already has them, the COPY fails
//! on the primary key and is rolled back.
//!
//! It is part of planck (the hidden `planck example-app` subcommand) so that
//! `planck demo` can record it without a separate build; run it on a migrated
//! database with `DATABASE_URL=... tools/example-app`.

use std::str::FromStr;

use futures_util::SinkExt;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The fixtures' tenants and pouches. Ids far above what `planck seed`
/// generates, so the example also runs on a seeded database, and a range of
/// their own per table (accounts 9000001xxx, users 9000002xxx, pouches
/// 9000003xxx, ...): `planck record` links a value that reappears in a later
/// statement of a transaction (`bind`), so one id shared by an account, a
/// pouch and a device made it bind a pouch id from the device's UPDATE.
const ACME: i64 = 9_000_001_001;
const GLOBEX: i64 = 9_000_001_002;
const ACME_POUCH: i64 = 9_000_003_001;
const GLOBEX_POUCH: i64 = 9_000_003_003;

/// Items one test session creates (POST /pouches/:id/items): the import of
/// a few skills at once, the path whose counter row is the hot spot.
const CREATED_PER_SESSION: usize = 3;

/// Fixture tables, in foreign-key order: (COPY statement, rows).
const FIXTURES: &[(&str, &str)] = &[
    (
        "COPY accounts (id, name, slug, plan) FROM STDIN",
        "9000001001\tAcme\texample-app-acme\tteam\n9000001002\tGlobex\texample-app-globex\tfree\n",
    ),
    (
        "COPY users (id, account_id, email, display_name, role) FROM STDIN",
        "9000002001\t9000001001\tada@acme.test\tAda\towner\n\
         9000002002\t9000001001\tbob@acme.test\tBob\tmember\n\
         9000002003\t9000001002\tcy@globex.test\tCy\towner\n",
    ),
    (
        "COPY pouches (id, account_id, name, visibility) FROM STDIN",
        "9000003001\t9000001001\tSkills\tprivate\n9000003002\t9000001001\tShared\taccount\n9000003003\t9000001002\tMain\tprivate\n",
    ),
    (
        "COPY items (id, account_id, pouch_id, slug, title, body, status, tags) FROM STDIN",
        "9000004001\t9000001001\t9000003001\trust-errors\tRust errors\tUse thiserror.\topen\t{rust,errors}\n\
         9000004002\t9000001001\t9000003001\tsql-plans\tReading plans\tEXPLAIN first.\topen\t{sql}\n\
         9000004003\t9000001001\t9000003001\tdraft-idea\tAn idea\t\tdraft\t{}\n\
         9000004004\t9000001001\t9000003002\tonboarding\tOnboarding\tWelcome.\topen\t{team}\n\
         9000004005\t9000001002\t9000003003\tglobex-notes\tNotes\tMisc.\topen\t{}\n",
    ),
    (
        "COPY items (id, account_id, pouch_id, slug, title, status, updated_at) FROM STDIN",
        "9000004006\t9000001001\t9000003001\told-skill\tOld skill\topen\t2020-01-01 00:00:00+00\n",
    ),
    (
        "COPY revisions (id, account_id, item_id, number, author_id, message, content_hash, size_bytes) FROM STDIN",
        "9000005001\t9000001001\t9000004001\t1\t9000002001\tfirst\th1\t120\n\
         9000005002\t9000001001\t9000004001\t2\t9000002002\tsecond\th2\t180\n\
         9000005003\t9000001001\t9000004002\t1\t9000002001\tfirst\th3\t90\n",
    ),
    (
        "COPY files (id, account_id, revision_id, path, mime_type, size_bytes, sha256) FROM STDIN",
        "9000006001\t9000001001\t9000005002\tSKILL.md\ttext/markdown\t150\ts1\n\
         9000006002\t9000001001\t9000005002\tscripts/check.sh\ttext/x-sh\t30\ts2\n",
    ),
    (
        "COPY events (id, account_id, actor_id, kind, subject_type, subject_id) FROM STDIN",
        "9000007001\t9000001001\t9000002001\titem.created\titem\t9000004001\n\
         9000007002\t9000001001\t9000002002\trevision.created\trevision\t9000005002\n\
         9000007003\t9000001002\t9000002003\titem.created\titem\t9000004005\n",
    ),
    (
        "COPY devices (id, account_id, user_id, name, public_key) FROM STDIN",
        "9000008001\t9000001001\t9000002001\tada-laptop\tpk1\n9000008002\t9000001001\t9000002002\tbob-cli\tpk2\n9000008003\t9000001002\t9000002003\tcy-cli\tpk3\n",
    ),
    (
        "COPY api_tokens (id, account_id, device_id, token_hash, expires_at) FROM STDIN",
        "9000009001\t9000001001\t9000008001\texample-app-tok-ada\t2999-01-01 00:00:00+00\n\
         9000009002\t9000001001\t9000008002\texample-app-tok-bob\t2999-01-01 00:00:00+00\n\
         9000009003\t9000001002\t9000008003\texample-app-tok-cy\t2999-01-01 00:00:00+00\n\
         9000009004\t9000001001\t9000008001\texample-app-tok-expired\t2020-01-01 00:00:00+00\n",
    ),
    (
        "COPY dpop_replays (jti, seen_at) FROM STDIN",
        "example-app-old-1\t2020-01-01 00:00:00+00\nexample-app-old-2\t2020-01-01 00:00:00+00\n",
    ),
];

async fn connect(config: &Config) -> Result<Client> {
    let (client, conn) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            eprintln!("example-app: connection error: {e}");
        }
    });
    Ok(client)
}

/// Loads the fixtures unless they are there already. Returns whether it did.
async fn fixtures(owner: &mut Client) -> Result<bool> {
    let tx = owner.transaction().await?;
    for (copy, rows) in FIXTURES {
        let sink = tx.copy_in(*copy).await?;
        futures_util::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(rows.as_bytes()))
            .await?;
        match sink.finish().await {
            Ok(_) => {}
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                tx.rollback().await?;
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        }
    }
    tx.commit().await?;
    Ok(true)
}

/// One API request's preamble: rate limit, DPoP replay check, token lookup.
/// Returns (device, user); the request touches its device with [`touch`]
/// once its transaction has committed.
async fn authenticate(
    tx: &tokio_postgres::Transaction<'_>,
    ip: &str,
    jti: &str,
    token: &str,
) -> Result<(i64, i64)> {
    tx.query_one(
        "INSERT INTO rate_limits (key, window_start, hits) VALUES ($1, now(), 1) \
         ON CONFLICT (key) DO UPDATE SET \
           hits = CASE WHEN rate_limits.window_start < now() - interval '1 minute' THEN 1 ELSE rate_limits.hits + 1 END, \
           window_start = CASE WHEN rate_limits.window_start < now() - interval '1 minute' THEN now() ELSE rate_limits.window_start END \
         RETURNING hits",
        &[&format!("ip:{ip}")],
    )
    .await?;
    tx.execute(
        "INSERT INTO dpop_replays (jti) VALUES ($1) ON CONFLICT (jti) DO NOTHING",
        &[&jti],
    )
    .await?;
    let row = tx
        .query_one(
            "SELECT t.device_id, d.user_id FROM api_tokens t JOIN devices d ON d.id = t.device_id \
             WHERE t.token_hash = $1 AND t.expires_at > now() AND d.revoked_at IS NULL",
            &[&token],
        )
        .await?;
    Ok((row.get(0), row.get(1)))
}

/// Marks the session's device as seen: once a session, after its first
/// request, in a transaction of its own (the tenant set again: the
/// row-level security policies read it). It used to run inside every
/// request's transaction, so the device's row stayed locked until COMMIT:
/// every request of one device waited on the one before, and a request
/// queued on its account's counter held its device meanwhile, so the
/// device row looked as hot as the counter it was only waiting behind
/// (replay runs many clients as one tenant, on that tenant's few devices).
async fn touch(app: &mut Client, account: i64, device: i64) -> Result<()> {
    let tx = app.transaction().await?;
    tx.query_one(
        "SELECT set_config('app.account_id', $1, true)",
        &[&account.to_string()],
    )
    .await?;
    tx.execute(
        "UPDATE devices SET last_seen_at = now() WHERE id = $1",
        &[&device],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The API of one tenant, as app_user under row-level security.
async fn api(app: &mut Client, account: i64, token: &str, pouch: i64, round: usize) -> Result<()> {
    let jti = |n: usize| format!("jti-{account}-{round}-{n}");

    // GET /pouches: set_config, as node-postgres apps do.
    let tx = app.transaction().await?;
    tx.query_one(
        "SELECT set_config('app.account_id', $1, true)",
        &[&account.to_string()],
    )
    .await?;
    let (device, _) = authenticate(&tx, "203.0.113.7", &jti(1), token).await?;
    tx.query(
        "SELECT id, name, visibility, updated_at FROM pouches \
         WHERE deleted_at IS NULL ORDER BY updated_at DESC LIMIT $1",
        &[&50i64],
    )
    .await?;
    tx.commit().await?;
    touch(app, account, device).await?;

    // GET /pouches/:id/items: SET LOCAL, and an ORM's inlined literals.
    let tx = app.transaction().await?;
    tx.batch_execute(&format!("SET LOCAL app.account_id = '{account}'"))
        .await?;
    authenticate(&tx, "203.0.113.7", &jti(2), token).await?;
    let items = tx
        .query(
            "SELECT id, slug, title, updated_at FROM items \
             WHERE pouch_id = $1 AND status = 'open' ORDER BY updated_at DESC LIMIT 50",
            &[&pouch],
        )
        .await?;
    tx.query(
        "SELECT id, slug FROM items WHERE tags @> $1 AND deleted_at IS NULL",
        &[&vec!["rust".to_string()]],
    )
    .await?;
    tx.commit().await?;

    for item in items.iter().take(2) {
        let slug: String = item.get(1);
        let (item_id, user) = get_item(app, account, token, pouch, &slug, &jti(3)).await?;
        put_item(app, account, token, item_id, user, &slug, round, &jti(4)).await?;
    }

    // POST /pouches/:id/items, for each item of an import: the account's
    // item counter first (its row stays locked until COMMIT: the hot path),
    // then the item and an event.
    for n in 0..CREATED_PER_SESSION {
        post_item(app, account, token, pouch, round, &jti(10 + n)).await?;
    }

    // GET /events and GET /devices.
    let tx = app.transaction().await?;
    tx.query_one(
        "SELECT set_config('app.account_id', $1, true)",
        &[&account.to_string()],
    )
    .await?;
    let (_, user) = authenticate(&tx, "203.0.113.7", &jti(5), token).await?;
    tx.query(
        "SELECT id, kind, subject_type, subject_id, created_at FROM events \
         WHERE account_id = $1 ORDER BY created_at DESC LIMIT $2",
        &[&account, &50i64],
    )
    .await?;
    tx.query(
        "SELECT id, name, last_seen_at FROM devices WHERE user_id = $1 AND revoked_at IS NULL",
        &[&user],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// GET /pouches/:id/items/:slug, its revisions, files and history: the
/// item's id and the user the token authenticates.
async fn get_item(
    app: &mut Client,
    account: i64,
    token: &str,
    pouch: i64,
    slug: &str,
    jti: &str,
) -> Result<(i64, i64)> {
    let tx = app.transaction().await?;
    tx.query_one(
        "SELECT set_config('app.account_id', $1, true)",
        &[&account.to_string()],
    )
    .await?;
    let (_, user) = authenticate(&tx, "203.0.113.7", jti, token).await?;
    let row = tx
        .query_one(
            "SELECT id, title, body, status, tags, metadata FROM items \
             WHERE pouch_id = $1 AND slug = $2 AND deleted_at IS NULL",
            &[&pouch, &slug],
        )
        .await?;
    let item_id: i64 = row.get(0);
    let revisions = tx
        .query(
            "SELECT id, number, message, created_at FROM revisions \
             WHERE item_id = $1 ORDER BY number DESC LIMIT $2",
            &[&item_id, &20i64],
        )
        .await?;
    if let Some(rev) = revisions.first() {
        tx.query(
            "SELECT path, mime_type, size_bytes, sha256 FROM files \
             WHERE revision_id = $1 ORDER BY path",
            &[&rev.get::<_, i64>(0)],
        )
        .await?;
    }
    tx.query(
        "SELECT id, kind, actor_id, created_at FROM events \
         WHERE subject_type = 'item' AND subject_id = $1 ORDER BY created_at DESC",
        &[&item_id],
    )
    .await?;
    tx.commit().await?;

    Ok((item_id, user))
}

/// PUT /items/:id: a new revision, the item, an event.
#[allow(clippy::too_many_arguments)]
async fn put_item(
    app: &mut Client,
    account: i64,
    token: &str,
    item_id: i64,
    user: i64,
    slug: &str,
    round: usize,
    jti: &str,
) -> Result<()> {
    let tx = app.transaction().await?;
    tx.query_one(
        "SELECT set_config('app.account_id', $1, true)",
        &[&account.to_string()],
    )
    .await?;
    authenticate(&tx, "203.0.113.7", jti, token).await?;
    let hash = format!("h-{item_id}-{round}");
    tx.query_one(
        "INSERT INTO revisions (account_id, item_id, number, author_id, message, content_hash, size_bytes) \
         VALUES ($1, $2, (SELECT coalesce(max(number), 0) + 1 FROM revisions WHERE item_id = $2), $3, $4, $5, $6) \
         RETURNING id, number",
        &[&account, &item_id, &user, &"edit", &hash, &64i32],
    )
    .await?;
    tx.query_one(
        "UPDATE items SET title = $1, body = $2, updated_at = now() WHERE id = $3 RETURNING updated_at",
        &[&format!("{slug} (edited)"), &"new body", &item_id],
    )
    .await?;
    tx.execute(
        "INSERT INTO events (account_id, actor_id, kind, subject_type, subject_id, payload) \
         VALUES ($1, $2, 'item.updated', 'item', $3, $4)",
        &[
            &account,
            &user,
            &item_id,
            &serde_json::json!({ "round": round }),
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// POST /pouches/:id/items, one item: the account's item counter (its
/// row locked until COMMIT), then the item and an event.
async fn post_item(
    app: &mut Client,
    account: i64,
    token: &str,
    pouch: i64,
    round: usize,
    jti: &str,
) -> Result<()> {
    let tx = app.transaction().await?;
    tx.query_one(
        "SELECT set_config('app.account_id', $1, true)",
        &[&account.to_string()],
    )
    .await?;
    let (_, user) = authenticate(&tx, "203.0.113.7", jti, token).await?;
    let seq: i64 = tx
        .query_one(
            "UPDATE accounts SET item_seq = item_seq + 1 WHERE id = $1 RETURNING item_seq",
            &[&account],
        )
        .await?
        .get(0);
    let created: i64 = tx
        .query_one(
            "INSERT INTO items (account_id, pouch_id, slug, title) VALUES ($1, $2, $3, $4) RETURNING id",
            &[&account, &pouch, &format!("new-{seq}-{round}"), &"New item"],
        )
        .await?
        .get(0);
    tx.execute(
        "INSERT INTO events (account_id, actor_id, kind, subject_type, subject_id, payload) \
         VALUES ($1, $2, 'item.created', 'item', $3, $4)",
        &[
            &account,
            &user,
            &created,
            &serde_json::json!({ "seq": seq }),
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The background jobs, as the owner of the tables (no row-level security).
async fn jobs(owner: &Client) -> Result<()> {
    owner
        .execute(
            "DELETE FROM dpop_replays WHERE seen_at < now() - interval '10 minutes'",
            &[],
        )
        .await?;
    owner
        .execute("DELETE FROM api_tokens WHERE expires_at < now()", &[])
        .await?;
    owner
        .query(
            "SELECT account_id, count(*) FROM items WHERE deleted_at IS NULL \
             GROUP BY account_id ORDER BY account_id",
            &[],
        )
        .await?;
    owner
        .execute(
            "UPDATE items SET status = 'archived', updated_at = now() \
             WHERE status = 'open' AND updated_at < now() - $1::int * interval '1 day'",
            &[&90i32],
        )
        .await?;
    Ok(())
}

/// Plays the API and the jobs: as the owner through `owner_url` (fixtures and
/// jobs), as the application through `app_url` (default: `owner_url` with user
/// and password `app_user`). Returns a one-line summary.
pub async fn play(owner_url: &str, app_url: Option<&str>) -> Result<String> {
    let owner_config = Config::from_str(owner_url)?;
    let app_config = match app_url {
        Some(u) => Config::from_str(u)?,
        None => {
            let mut c = owner_config.clone();
            c.user("app_user").password("app_user");
            c
        }
    };
    let mut owner = connect(&owner_config).await?;
    let loaded = fixtures(&mut owner).await?;
    let mut app = connect(&app_config).await?;
    for round in 0..2 {
        api(&mut app, ACME, "example-app-tok-ada", ACME_POUCH, round).await?;
        api(&mut app, GLOBEX, "example-app-tok-cy", GLOBEX_POUCH, round).await?;
    }
    jobs(&owner).await?;
    Ok(format!(
        "example-app: {} fixtures, played 4 API sessions and 4 jobs",
        if loaded { "loaded" } else { "kept existing" }
    ))
}
