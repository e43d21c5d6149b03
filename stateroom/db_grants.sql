-- What the app role may do in one Stateroom database: read and write rows,
-- nothing else. Run as the owner role in that database after migrating
-- (`manage.py migrate` does); idempotent. The caller sets
-- stateroom.app_role in the same session.
DO $grants$
DECLARE
    app_role text := current_setting('stateroom.app_role');
BEGIN
    EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO %I', current_database(), app_role);
    EXECUTE format('GRANT USAGE ON SCHEMA public TO %I', app_role);
    EXECUTE format(
        'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %I', app_role);
    EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO %I', app_role);
    -- Tables a later migration creates get the same grants.
    EXECUTE format(
        'ALTER DEFAULT PRIVILEGES IN SCHEMA public'
        ' GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I', app_role);
    EXECUTE format(
        'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO %I',
        app_role);
    -- The audit log is append-only for the app: the trigger refuses UPDATE and
    -- DELETE, and the app is not even allowed to try.
    IF to_regclass('public.audit_app_auditevent') IS NOT NULL THEN
        EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON audit_app_auditevent FROM %I', app_role);
    END IF;
END
$grants$;
