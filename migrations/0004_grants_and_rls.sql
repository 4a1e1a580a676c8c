-- 0004: privileges for app_user and row-level security.
--
-- app_user gets what the API needs: the schema, DML on the tenant tables and
-- the app tables, and the identity sequences. It owns nothing.
--
-- Every tenant-owned table ENABLEs (does not FORCE) row-level security with
-- one policy for app_user, keyed on the app.account_id setting the API sets
-- per transaction (SET LOCAL app.account_id = '42'). The table owner, which
-- runs background jobs and the admin dashboard, is not filtered. With
-- app.account_id unset, app_user's queries on these tables fail rather than
-- return rows. rate_limits and dpop_replays have no owner and no RLS.

GRANT USAGE ON SCHEMA public TO app_user;

GRANT SELECT, INSERT, UPDATE, DELETE ON
    accounts, users, pouches, items, revisions, files, events,
    devices, api_tokens, rate_limits, dpop_replays
TO app_user;

GRANT USAGE ON
    accounts_id_seq, users_id_seq, pouches_id_seq, items_id_seq,
    revisions_id_seq, files_id_seq, events_id_seq,
    devices_id_seq, api_tokens_id_seq
TO app_user;

ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON accounts FOR ALL TO app_user
    USING (id = current_setting('app.account_id')::bigint)
    WITH CHECK (id = current_setting('app.account_id')::bigint);

ALTER TABLE users ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON users FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);

ALTER TABLE pouches ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON pouches FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);

ALTER TABLE items ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON items FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);

ALTER TABLE revisions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON revisions FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);

ALTER TABLE files ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON files FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);

ALTER TABLE events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON events FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);

ALTER TABLE devices ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON devices FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);

ALTER TABLE api_tokens ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_tokens FOR ALL TO app_user
    USING (account_id = current_setting('app.account_id')::bigint)
    WITH CHECK (account_id = current_setting('app.account_id')::bigint);
