//! Issue 30: the CHECK solver against the server, on a corpus of CHECK
//! expressions taken from real schemas (the fixtures under ../shared/fixtures,
//! each case naming its schema, file and constraint), plus a few written here
//! for shapes the corpus lacks (marked "written here"). Each case is its own
//! table holding the columns the CHECK reads, with the source's types and
//! NOT NULLs; one `planck seed --no-spec` fills them all, and the server is
//! the judge: the CHECK stays validated, every row is there, and where the
//! CHECK is a disjunction over a kind, more than one branch occurs.

use crate::common;

use common::{TestDb, assert_exit, project_dir, stderr};

struct Case {
    /// Schema, file and constraint the CHECK comes from.
    source: &'static str,
    /// Column definitions (as in the source, NOT NULL as in the source).
    columns: &'static str,
    check: &'static str,
    /// Rows the table can hold (its unique capacity), else `ROWS`.
    rows: Option<i64>,
    /// An expression that tells the CHECK's branches apart: more than one
    /// distinct value must occur.
    branches: Option<&'static str>,
}

const ROWS: i64 = 200;

const fn case(source: &'static str, columns: &'static str, check: &'static str) -> Case {
    Case {
        source,
        columns,
        check,
        rows: None,
        branches: None,
    }
}

const fn branching(
    source: &'static str,
    columns: &'static str,
    check: &'static str,
    branches: &'static str,
) -> Case {
    Case {
        source,
        columns,
        check,
        rows: None,
        branches: Some(branches),
    }
}

/// Types the cases' columns use, as the sources define them.
const TYPES: &str = r#"
CREATE TYPE volume_state AS ENUM ('creating', 'created', 'destroying', 'failed');
CREATE TYPE worker_state AS ENUM ('running', 'stalled', 'landing', 'landed', 'retiring');
CREATE TYPE river_job_state AS ENUM ('available', 'cancelled', 'completed', 'discarded',
    'pending', 'retryable', 'running', 'scheduled');
CREATE TYPE v1_payload_location AS ENUM ('INLINE', 'EXTERNAL');
CREATE TYPE v1_incoming_webhook_auth_type AS ENUM ('BASIC', 'API_KEY', 'HMAC');
CREATE TYPE modlog_kind AS ENUM ('AdminAdd', 'AdminBan', 'AdminAllowInstance',
    'AdminBlockInstance', 'AdminPurgeComment', 'AdminPurgeCommunity', 'AdminPurgePerson',
    'AdminPurgePost', 'ModAddToCommunity', 'ModBanFromCommunity', 'ModFeaturePostCommunity',
    'AdminFeaturePostSite', 'ModChangeCommunityVisibility', 'ModLockPost', 'ModRemoveComment',
    'AdminRemoveCommunity', 'ModRemovePost', 'ModTransferCommunity', 'ModLockComment');
CREATE DOMAIN year AS integer CONSTRAINT year_check CHECK (((VALUE >= 1901) AND (VALUE <= 2155)));
"#;

const KOJI_REVOKE: &str = "(active IS NULL AND revoke_event IS NOT NULL AND revoker_id IS NOT NULL)
    OR (active IS NOT NULL AND revoke_event IS NULL AND revoker_id IS NULL)";
const KOJI_REVOKE_COLS: &str = "active boolean DEFAULT 'true' CHECK (active),
    revoke_event integer, revoker_id integer";

const MODLOG: &str = "(kind = 'AdminAdd'
        AND num_nonnulls (target_person_id) = 1
        AND num_nonnulls (target_community_id, target_post_id, target_comment_id, target_instance_id) = 0)
        OR (kind = 'AdminBan'
        AND num_nonnulls (target_person_id, target_instance_id) = 2
        AND num_nonnulls (target_community_id, target_post_id, target_comment_id) = 0)
        OR (kind = 'ModRemovePost'
        AND num_nonnulls (target_post_id, target_person_id) = 2
        AND num_nonnulls (target_community_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'ModRemoveComment'
        AND num_nonnulls (target_comment_id, target_person_id, target_post_id) = 3
        AND num_nonnulls (target_community_id, target_instance_id) = 0)
        OR (kind = 'ModLockComment'
        AND num_nonnulls (target_comment_id, target_person_id) = 2
        AND num_nonnulls (target_community_id, target_instance_id, target_post_id) = 0)
        OR (kind = 'ModLockPost'
        AND num_nonnulls (target_post_id, target_person_id, target_community_id) = 3
        AND num_nonnulls (target_instance_id, target_comment_id) = 0)
        OR (kind = 'AdminRemoveCommunity'
        AND num_nonnulls (target_community_id) = 1
        AND num_nonnulls (target_post_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'ModChangeCommunityVisibility'
        AND num_nonnulls (target_community_id) = 1
        AND num_nonnulls (target_post_id, target_instance_id, target_person_id, target_comment_id) = 0)
        OR (kind = 'ModBanFromCommunity'
        AND num_nonnulls (target_community_id, target_person_id) = 2
        AND num_nonnulls (target_post_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'ModAddToCommunity'
        AND num_nonnulls (target_community_id, target_person_id) = 2
        AND num_nonnulls (target_post_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'ModTransferCommunity'
        AND num_nonnulls (target_community_id, target_person_id) = 2
        AND num_nonnulls (target_post_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'AdminAllowInstance'
        AND num_nonnulls (target_instance_id) = 1
        AND num_nonnulls (target_post_id, target_person_id, target_community_id, target_comment_id) = 0)
        OR (kind = 'AdminBlockInstance'
        AND num_nonnulls (target_instance_id) = 1
        AND num_nonnulls (target_post_id, target_person_id, target_community_id, target_comment_id) = 0)
        OR (kind = 'AdminPurgeComment'
        AND num_nonnulls (target_post_id, target_person_id, target_community_id) = 3
        AND num_nonnulls (target_instance_id, target_comment_id) = 0)
        OR (kind = 'AdminPurgePost'
        AND num_nonnulls (target_community_id) = 1
        AND num_nonnulls (target_post_id, target_person_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'AdminPurgeCommunity'
        AND num_nonnulls (target_post_id, target_person_id, target_community_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'AdminPurgePerson'
        AND num_nonnulls (target_post_id, target_person_id, target_community_id, target_instance_id, target_comment_id) = 0)
        OR (kind = 'ModFeaturePostCommunity'
        AND num_nonnulls (target_post_id, target_community_id) = 2
        AND num_nonnulls (target_instance_id, target_person_id, target_comment_id) = 0)
        OR (kind = 'AdminFeaturePostSite'
        AND num_nonnulls (target_post_id) = 1
        AND num_nonnulls (target_instance_id, target_person_id, target_comment_id, target_community_id) = 0)";

const CASES: &[Case] = &[
    // koji: schema.sql
    branching("koji schema.sql user_perms.active_revoke_sane", KOJI_REVOKE_COLS, KOJI_REVOKE, "active IS NULL"),
    case("koji schema.sql user_perms.active (column CHECK)", "active boolean DEFAULT 'true'", "active"),
    case("koji schema.sql sessions.exclusive (column CHECK)", "\"exclusive\" boolean", "\"exclusive\""),
    case("koji schema.sql sessions.no_exclusive_subsessions", "master integer, \"exclusive\" boolean", "master IS NULL OR \"exclusive\" IS NULL"),
    case("koji schema.sql sessions.no_closed_exclusive", "closed boolean NOT NULL DEFAULT FALSE, \"exclusive\" boolean", "closed IS FALSE OR \"exclusive\" IS NULL"),
    case("koji schema.sql host.task_load (column CHECK)", "task_load float NOT NULL DEFAULT 0.0", "NOT task_load < 0"),
    case("koji schema.sql host_config.capacity (column CHECK)", "capacity float NOT NULL DEFAULT 2.0", "capacity > 1"),
    case("koji schema.sql task.weight (column CHECK)", "weight float NOT NULL DEFAULT 1.0", "NOT weight < 0"),
    case("koji schema.sql task.parent_label_sane", "parent integer, label varchar(255)", "parent IS NOT NULL OR label IS NULL"),
    branching("koji schema.sql build.completion_sane", "state integer NOT NULL, completion_time timestamptz",
        "(state = 0 AND completion_time IS NULL) OR (state <> 0 AND completion_time IS NOT NULL)", "state = 0"),
    case("koji schema.sql build.promotion_sane", "draft boolean NOT NULL DEFAULT 'false', promotion_time timestamptz, promoter integer",
        "NOT draft OR (promotion_time IS NULL AND promoter IS NULL)"),
    case("koji schema.sql build.draft_release_sane", "draft boolean NOT NULL DEFAULT 'false', release text NOT NULL",
        "NOT draft OR release ~ ('^.*,draft_' || id::TEXT || '$')"),
    branching("koji schema.sql buildroot.cg_sane", "cg_id integer, cg_version text",
        "(cg_id IS NULL AND cg_version IS NULL) OR (cg_id IS NOT NULL AND cg_version IS NOT NULL)", "cg_id IS NULL"),
    branching("koji schema.sql buildroot.container_sane", "container_type text, container_arch text",
        "(container_type IS NULL AND container_arch IS NULL) OR (container_type IS NOT NULL AND container_arch IS NOT NULL)",
        "container_type IS NULL"),
    case("koji schema.sql tag_external_repos.only_one_event", "at_event integer, min_event integer", "at_event IS NULL OR min_event IS NULL"),
    case("koji schema.sql repo.active_sane", "active boolean NOT NULL DEFAULT TRUE, repo_id integer", "NOT active OR repo_id IS NULL"),
    branching("koji schema.sql rpminfo.build_id_draft_external_repo_id_sane",
        "build_id integer, draft boolean, external_repo_id integer NOT NULL",
        "(draft IS NULL AND build_id IS NULL AND external_repo_id <> 0)
        OR (draft IS NOT NULL AND build_id IS NOT NULL AND external_repo_id = 0)", "draft IS NULL"),
    // river: migration/main
    case("river 001_create_river_migration river_migration.version", "version bigint NOT NULL", "version >= 1"),
    branching("river 002_initial_schema river_job.finalized_or_finalized_at_null",
        "state river_job_state NOT NULL DEFAULT 'available', finalized_at timestamptz",
        "(state IN ('cancelled', 'completed', 'discarded') AND finalized_at IS NOT NULL) OR finalized_at IS NULL", "state"),
    branching("river 004_pending_and_more river_job.finalized_or_finalized_at_null",
        "state river_job_state NOT NULL DEFAULT 'available', finalized_at timestamptz",
        "(finalized_at IS NULL AND state NOT IN ('cancelled', 'completed', 'discarded')) OR
    (finalized_at IS NOT NULL AND state IN ('cancelled', 'completed', 'discarded'))", "finalized_at IS NULL"),
    case("river 002_initial_schema river_job.max_attempts_is_positive", "max_attempts smallint NOT NULL", "max_attempts > 0"),
    case("river 002_initial_schema river_job.priority_in_range", "priority smallint NOT NULL DEFAULT 1", "priority >= 1 AND priority <= 4"),
    case("river 002_initial_schema river_job.queue_length", "queue text NOT NULL DEFAULT 'default'", "char_length(queue) > 0 AND char_length(queue) < 128"),
    case("river 002_initial_schema river_job.kind_length", "kind text NOT NULL", "char_length(kind) > 0 AND char_length(kind) < 128"),
    case("river 002_initial_schema river_leader.name_length", "name text NOT NULL", "char_length(name) > 0 AND char_length(name) < 128"),
    case("river 004_pending_and_more river_leader.name_length", "name text NOT NULL DEFAULT 'default'", "name = 'default'"),
    case("river 005_migration_unique_client river_migration.line_length", "line text NOT NULL", "char_length(line) > 0 AND char_length(line) < 128"),
    case("river 005_migration_unique_client river_migration.version_gte_1", "version bigint NOT NULL", "version >= 1"),
    case("river 005_migration_unique_client river_client_queue.num_jobs_completed_zero_or_positive",
        "num_jobs_completed bigint NOT NULL DEFAULT 0", "num_jobs_completed >= 0"),
    case("river 007_notification_outbox river_notification.topic_length", "topic text NOT NULL", "length(topic) > 0 AND length(topic) < 128"),
    // lemmy: migrations
    case("lemmy 2025-08-01-000023_add_report_combined_table report_combined (num_nonnulls)",
        "post_report_id int, comment_report_id int, private_message_report_id int",
        "num_nonnulls (post_report_id, comment_report_id, private_message_report_id) = 1"),
    case("lemmy 2025-08-01-000032_community_report report_combined (num_nonnulls, 4 columns)",
        "post_report_id int, comment_report_id int, private_message_report_id int, community_report_id int",
        "num_nonnulls (post_report_id, comment_report_id, private_message_report_id, community_report_id) = 1"),
    case("lemmy 2025-08-01-000024 person_content_combined_check", "post_id int, comment_id int", "num_nonnulls (post_id, comment_id) = 1"),
    case("lemmy 2025-08-01-000026 inbox_combined_check",
        "comment_reply_id int, person_comment_mention_id int, person_post_mention_id int, private_message_id int",
        "num_nonnulls (comment_reply_id, person_comment_mention_id, person_post_mention_id, private_message_id) = 1"),
    case("lemmy 2025-08-01-000016_smoosh-tables-together comment_actions_check_liked",
        "liked timestamptz, vote_is_upvote boolean", "((liked IS NULL) = (vote_is_upvote IS NULL))"),
    case("lemmy 2025-08-01-000016 community_actions_check_followed",
        "followed timestamptz, follow_state text, follow_approver_id int",
        "(((followed IS NULL) = (follow_state IS NULL)) AND (NOT ((followed IS NULL) AND (follow_approver_id IS NOT NULL))))"),
    case("lemmy 2025-08-01-000016 community_actions_check_received_ban",
        "received_ban timestamptz, ban_expires timestamptz", "(NOT ((received_ban IS NULL) AND (ban_expires IS NOT NULL)))"),
    case("lemmy 2025-08-01-000016 person_actions_check_followed",
        "followed timestamptz, follow_pending boolean", "((followed IS NULL) = (follow_pending IS NULL))"),
    case("lemmy 2025-08-01-000016 post_actions_check_read_comments",
        "read_comments timestamptz, read_comments_amount int", "((read_comments IS NULL) = (read_comments_amount IS NULL))"),
    case("lemmy 2025-08-01-000063 notification_check", "post_id int, comment_id int, private_message_id int",
        "num_nonnulls (post_id, comment_id, private_message_id) = 1"),
    branching("lemmy 2025-10-15-114811-0000_merge-modlog-tables modlog (19 kinds)",
        "kind modlog_kind NOT NULL, target_person_id int, target_community_id int, target_post_id int,
        target_comment_id int, target_instance_id int",
        MODLOG, "kind"),
    // supabase-auth: migrations
    case("supabase-auth 20210730183235 users.email_change_confirm_status", "email_change_confirm_status smallint DEFAULT 0",
        "email_change_confirm_status >= 0 AND email_change_confirm_status <= 2"),
    case("supabase-auth 20221021082433_add_saml sso_providers.\"resource_id not empty\"", "resource_id text NULL",
        "resource_id = null or char_length(resource_id) > 0"),
    case("supabase-auth 20221021082433_add_saml saml_providers.\"metadata_url not empty\"", "metadata_url text null",
        "metadata_url = null or char_length(metadata_url) > 0"),
    case("supabase-auth 20260302000000_add_passkeys webauthn_challenges.challenge_type",
        "challenge_type text not null", "challenge_type in ('signup', 'registration', 'authentication')"),
    case("supabase-auth 20260121000000 oauth_clients.token_endpoint_auth_method", "token_endpoint_auth_method text not null",
        "token_endpoint_auth_method in ('client_secret_basic', 'client_secret_post', 'none')"),
    case("supabase-auth 20250804100000 oauth_authorizations_expires_at_future",
        "created_at timestamptz not null default now(), expires_at timestamptz not null", "expires_at > created_at"),
    case("supabase-auth 20250804100000 oauth_consents_revoked_after_granted",
        "granted_at timestamptz not null default now(), revoked_at timestamptz", "revoked_at is null or revoked_at >= granted_at"),
    case("supabase-auth 20250804100000 oauth_consents_scopes_not_empty", "scopes text not null", "char_length(trim(scopes)) > 0"),
    case("supabase-auth 20250804100000 oauth_authorizations_code_challenge_length", "code_challenge text null",
        "char_length(code_challenge) <= 128"),
    branching("supabase-auth 20260219120000 custom_oauth_providers.provider_type (column CHECK) + oidc_requires_issuer",
        "provider_type text not null check (provider_type in ('oauth2', 'oidc')), issuer text",
        "provider_type != 'oidc' or issuer is not null", "provider_type"),
    case("supabase-auth 20260219120000 custom_oauth_providers_oidc_issuer_https",
        "provider_type text not null, issuer text", "provider_type != 'oidc' or issuer is null or issuer like 'https://%'"),
    branching("supabase-auth 20260219120000 custom_oauth_providers_oauth2_requires_endpoints",
        "provider_type text not null check (provider_type in ('oauth2', 'oidc')), authorization_url text, token_url text, userinfo_url text",
        "provider_type != 'oauth2' or (authorization_url is not null and token_url is not null and userinfo_url is not null)",
        "provider_type"),
    case("supabase-auth 20260219120000 custom_oauth_providers_authorization_url_https", "authorization_url text",
        "authorization_url is null or authorization_url like 'https://%'"),
    case("supabase-auth 20260219120000 custom_oauth_providers_identifier_format", "identifier text not null",
        "identifier ~ '^[a-z0-9][a-z0-9:-]{0,48}[a-z0-9]$'"),
    case("supabase-auth 20260219120000 custom_oauth_providers_name_length", "name text not null",
        "char_length(name) >= 1 and char_length(name) <= 100"),
    case("supabase-auth 20260219120000 custom_oauth_providers_issuer_length", "issuer text",
        "issuer is null or (char_length(issuer) >= 1 and char_length(issuer) <= 2048)"),
    // graphile-starter: migrations
    case("graphile-starter migrations/committed/000001.sql users.username", "username citext not null",
        "length(username) >= 2 and length(username) <= 24 and username ~ '^[a-zA-Z]([_]?[a-zA-Z0-9])+$'"),
    case("graphile-starter migrations/committed/000001.sql users.avatar_url", "avatar_url text", "avatar_url ~ '^https?://[^/]+'"),
    case("graphile-starter migrations/committed/000001.sql user_emails.email", "email citext not null", "email ~ '[^@]+@[^@]+\\.[^@]+'"),
    case("graphile-starter migrations/committed/000001.sql user_emails_must_be_verified_to_be_primary",
        "is_verified boolean not null default false, is_primary boolean not null default false",
        "is_primary is false or is_verified is true"),
    // concourse: migrations
    case("concourse 1510262030_initial_schema teams.constraint_teams_name_not_empty", "name text NOT NULL", "(length(name) > 0)"),
    branching("concourse 1537197729 workers.addr_when_running",
        "state worker_state DEFAULT 'running'::worker_state NOT NULL, addr text, baggageclaim_url text",
        "((state <> 'stalled'::worker_state) AND (state <> 'landed'::worker_state) AND ((addr IS NOT NULL) OR (baggageclaim_url IS NOT NULL))) OR (state = 'stalled'::worker_state) OR (state = 'landed'::worker_state)",
        "state"),
    branching("concourse 1517330648 volumes.cannot_invalidate_during_initialization",
        "state volume_state DEFAULT 'creating'::volume_state NOT NULL, container_id integer, worker_base_resource_type_id integer,
        worker_resource_cache_id integer, worker_task_cache_id integer, worker_resource_certs_id integer",
        "(state = ANY (ARRAY['created'::volume_state, 'destroying'::volume_state, 'failed'::volume_state])) AND worker_resource_cache_id IS NULL AND worker_base_resource_type_id IS NULL AND worker_task_cache_id IS NULL AND container_id IS NULL OR worker_resource_cache_id IS NOT NULL OR worker_base_resource_type_id IS NOT NULL OR worker_task_cache_id IS NOT NULL OR container_id IS NOT NULL OR worker_resource_certs_id IS NOT NULL",
        "state"),
    case("concourse 1563983375 workers.active_tasks", "active_tasks integer DEFAULT 0", "active_tasks >= 0"),
    case("concourse 1747084615 resource_config_versions.temporary_digest_not_null", "version_sha256 text",
        "version_sha256 IS NOT NULL"),
    // hatchet: sql/schema
    branching("hatchet v0.sql Workflow.Workflow_PausedWorkflowCheck",
        "\"isPaused\" boolean DEFAULT false, \"pausedWorkflowCronRunQueueBehavior\" text,
        \"pausedWorkflowScheduledRunQueueBehavior\" text, \"pausedWorkflowQueueTTL\" text",
        "(\"isPaused\" = FALSE AND \"pausedWorkflowCronRunQueueBehavior\" IS NULL
            AND \"pausedWorkflowScheduledRunQueueBehavior\" IS NULL AND \"pausedWorkflowQueueTTL\" IS NULL)
        OR (\"isPaused\" = TRUE AND \"pausedWorkflowCronRunQueueBehavior\" IS NOT NULL
            AND \"pausedWorkflowScheduledRunQueueBehavior\" IS NOT NULL AND \"pausedWorkflowQueueTTL\" IS NOT NULL)",
        "\"isPaused\""),
    case("hatchet v0.sql QueueItem.QueueItem_priority_check", "\"priority\" integer NOT NULL DEFAULT 1",
        "\"priority\" >= 1 AND \"priority\" <= 4"),
    branching("hatchet v1-core.sql v1_payload (location CHECK)",
        "location v1_payload_location NOT NULL, external_location_key text, inline_content jsonb",
        "location = 'INLINE' OR (location = 'EXTERNAL' AND inline_content IS NULL AND external_location_key IS NOT NULL)",
        "location"),
    branching("hatchet v1-core.sql v1_incoming_webhook (auth_method CHECK)",
        "auth_method v1_incoming_webhook_auth_type NOT NULL, auth__basic__username text, auth__basic__password bytea,
        auth__api_key__header_name text, auth__api_key__key bytea, auth__hmac__algorithm text, auth__hmac__encoding text,
        auth__hmac__signature_header_name text, auth__hmac__webhook_signing_secret bytea",
        "(auth_method = 'BASIC' AND (auth__basic__username IS NOT NULL AND auth__basic__password IS NOT NULL))
        OR (auth_method = 'API_KEY' AND (auth__api_key__header_name IS NOT NULL AND auth__api_key__key IS NOT NULL))
        OR (auth_method = 'HMAC' AND (auth__hmac__algorithm IS NOT NULL AND auth__hmac__encoding IS NOT NULL
            AND auth__hmac__signature_header_name IS NOT NULL AND auth__hmac__webhook_signing_secret IS NOT NULL))",
        "auth_method"),
    case("hatchet v1-core.sql v1_incoming_webhook (event_key_expression)", "event_key_expression text NOT NULL",
        "LENGTH(event_key_expression) > 0"),
    case("hatchet v1-core.sql:927 (scope_expression)", "scope_expression text",
        "scope_expression IS NULL OR LENGTH(scope_expression) > 0"),
    // calcom, temporal, pagila
    case("calcom 20250812084523_add_system_segment_id (systemSegmentId non-empty)", "\"systemSegmentId\" text",
        "\"systemSegmentId\" IS NULL OR length(\"systemSegmentId\") > 0"),
    case("calcom 20250807134931_add_cal_ai_self_serve (userId or teamId)", "\"userId\" integer, \"teamId\" integer",
        "\"userId\" IS NOT NULL OR \"teamId\" IS NOT NULL"),
    case("pagila schema film.release_year (domain year.year_check)", "release_year year NOT NULL", "release_year IS NOT NULL"),
    // Written here, for shapes the corpus lacks.
    case("written here: column equality", "a integer NOT NULL, b integer NOT NULL", "a = b"),
    case("written here: IS TRUE / IS NOT FALSE", "flag boolean, other boolean", "flag IS TRUE AND other IS NOT FALSE"),
    case("written here: <> ALL", "code text NOT NULL", "code <> ALL (ARRAY['a', 'b', 'c'])"),
    case("written here: numeric range", "amount numeric(10, 2) NOT NULL", "amount > 0.5 AND amount <= 99.99"),
    case("written here: date range", "day date NOT NULL", "day >= '2020-01-01' AND day < '2021-01-01'"),
    branching("written here: numeric bound per kind", "kind text NOT NULL, amount numeric NOT NULL",
        "(kind = 'credit' AND amount > 0) OR (kind = 'debit' AND amount < 0)", "kind"),
];

fn count(db: &TestDb, sql: &str) -> i64 {
    db.query_strings(sql)[0].parse().unwrap()
}

/// Issue 30: every CHECK of the corpus holds on the rows planck seeds, by the
/// server's own reading, and disjunctions over a kind take more than one branch.
#[test]
fn issue30_check_corpus_holds_on_the_server() {
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    let db = test_db!();
    db.exec("CREATE EXTENSION IF NOT EXISTS citext");
    db.exec(TYPES);
    let mut ddl = String::new();
    for (i, c) in CASES.iter().enumerate() {
        ddl.push_str(&format!(
            "CREATE TABLE c{i:02} (id serial PRIMARY KEY, {}, CONSTRAINT corpus_check CHECK ({}));\n",
            c.columns, c.check
        ));
    }
    db.exec(&ddl);
    let dir = project_dir();
    let out = db.planck(
        &["seed", "--no-spec", "--rows", "200", "--verbose"],
        dir.path(),
    );
    let err = stderr(&out);
    let mut failures = Vec::new();
    for (i, c) in CASES.iter().enumerate() {
        let t = format!("c{i:02}");
        let valid = db.query_strings(&format!(
            "SELECT convalidated::text FROM pg_constraint WHERE conrelid = '{t}'::regclass AND conname = 'corpus_check'"
        ));
        if valid != ["true"] {
            failures.push(format!(
                "{t} ({}): the CHECK is not validated: {valid:?}",
                c.source
            ));
        }
        // The server's own reading of the CHECK over the rows (a row where it
        // is false would have failed the COPY; this also reads NULL as pass).
        let broken = count(
            &db,
            &format!("SELECT count(*) FROM {t} WHERE NOT ({})", c.check),
        );
        if broken != 0 {
            failures.push(format!("{t} ({}): {broken} rows break the CHECK", c.source));
        }
        let want = c.rows.unwrap_or(ROWS);
        let got = count(&db, &format!("SELECT count(*) FROM {t}"));
        if got != want {
            failures.push(format!("{t} ({}): {got} rows, want {want}", c.source));
        }
        if let Some(b) = c.branches {
            let n = count(&db, &format!("SELECT count(DISTINCT ({b})) FROM {t}"));
            if n < 2 {
                let seen = db.query_strings(&format!(
                    "SELECT coalesce(string_agg(v || ': ' || n, ', '), '') FROM
                       (SELECT ({b})::text AS v, count(*) AS n FROM {t} GROUP BY 1) s"
                ));
                failures.push(format!(
                    "{t} ({}): one branch only ({b}: {seen:?})",
                    c.source
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}\nplanck seed stderr:\n{err}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
    assert_exit(&out, 0);
}
