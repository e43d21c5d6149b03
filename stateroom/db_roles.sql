-- Stateroom's two PostgreSQL roles: the one definition, used by
-- scripts/setup_postgres.sh (through psql) and by the embedded server
-- (stateroom/database.py). Run as a superuser; idempotent.
--
-- The caller first sets, in the same session:
--   stateroom.owner_role, stateroom.owner_password,
--   stateroom.app_role,   stateroom.app_password   (an empty password: none)
--
-- * The owner role owns the database and every table: it runs migrations.
--   It may create databases (the test runner's and the bench's).
-- * The app role is what the web processes, workers, the demo, the tests and
--   the bench connect as. NOSUPERUSER NOBYPASSRLS and owning no table, it is
--   subject to every row-level security policy and cannot disable the audit
--   table's append-only trigger. It is not a member of the owner role, so it
--   cannot SET ROLE its way around either.
DO $roles$
DECLARE
    owner_role text := current_setting('stateroom.owner_role');
    owner_password text := current_setting('stateroom.owner_password');
    app_role text := current_setting('stateroom.app_role');
    app_password text := current_setting('stateroom.app_password');
BEGIN
    IF owner_role = app_role THEN
        RAISE EXCEPTION 'the owner role and the app role must differ (both %)', owner_role;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = owner_role) THEN
        EXECUTE format('CREATE ROLE %I', owner_role);
    END IF;
    EXECUTE format(
        'ALTER ROLE %I LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB NOCREATEROLE NOREPLICATION',
        owner_role);
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = app_role) THEN
        EXECUTE format('CREATE ROLE %I', app_role);
    END IF;
    EXECUTE format(
        'ALTER ROLE %I LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOREPLICATION',
        app_role);
    EXECUTE format('ALTER ROLE %I PASSWORD %L', owner_role, NULLIF(owner_password, ''));
    EXECUTE format('ALTER ROLE %I PASSWORD %L', app_role, NULLIF(app_password, ''));
    IF pg_has_role(app_role, owner_role, 'MEMBER') THEN
        EXECUTE format('REVOKE %I FROM %I', owner_role, app_role);
    END IF;
END
$roles$;
