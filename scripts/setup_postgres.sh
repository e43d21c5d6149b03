#!/usr/bin/env bash
# Create Stateroom's two roles and its database on a PostgreSQL server, and
# print the environment that points the app at them:
#
#   eval "$(scripts/setup_postgres.sh)"
#
# The roles are defined once, in stateroom/db_roles.sql (the embedded server
# of `make demo` / `make test` uses the same file): `stateroom_owner` owns the
# database and the tables and runs migrations; `stateroom_app` is the app
# role, NOSUPERUSER NOBYPASSRLS, owning no table. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
OWNER_ROLE=stateroom_owner
APP_ROLE=stateroom_app
OWNER_PASSWORD=${OWNER_PASSWORD:-stateroom_owner}
APP_PASSWORD=${APP_PASSWORD:-stateroom_app}
APP_DB=${APP_DB:-stateroom}

psql_admin() {
  # As root on a Debian machine, the postgres OS user (peer auth); else TCP as PGADMIN_USER.
  if [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1 && [ -z "${PGADMIN_USER:-}" ]; then
    (cd /tmp && runuser -u postgres -- psql -p "$PGPORT" -v ON_ERROR_STOP=1 -qAt "$@")
  else
    psql -h "$PGHOST" -p "$PGPORT" -U "${PGADMIN_USER:-postgres}" -v ON_ERROR_STOP=1 -qAt "$@"
  fi
}

psql_admin -d postgres \
  -c "SET stateroom.owner_role = '$OWNER_ROLE'" -c "SET stateroom.owner_password = '$OWNER_PASSWORD'" \
  -c "SET stateroom.app_role = '$APP_ROLE'" -c "SET stateroom.app_password = '$APP_PASSWORD'" \
  -f - <stateroom/db_roles.sql >/dev/null

if [ "$(psql_admin -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$APP_DB'")" != "1" ]; then
  psql_admin -d postgres -c "CREATE DATABASE \"$APP_DB\" OWNER $OWNER_ROLE" >/dev/null
elif [ "$(psql_admin -d postgres -c "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = '$APP_DB'")" != "$OWNER_ROLE" ]; then
  # A database made before the roles were split: the owner role takes it and its objects over.
  psql_admin -d postgres -c "ALTER DATABASE \"$APP_DB\" OWNER TO $OWNER_ROLE" >/dev/null
  psql_admin -d "$APP_DB" >/dev/null <<SQL
DO \$\$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm')
             AND pg_get_userbyid(c.relowner) <> '$OWNER_ROLE' LOOP
    EXECUTE format('ALTER TABLE %I OWNER TO $OWNER_ROLE', r.relname);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> '$OWNER_ROLE' LOOP
    EXECUTE format('ALTER FUNCTION %s OWNER TO $OWNER_ROLE', r.fn);
  END LOOP;
END
\$\$;
SQL
fi

echo "export DATABASE_URL=postgres://$APP_ROLE:$APP_PASSWORD@$PGHOST:$PGPORT/$APP_DB"
echo "export DATABASE_OWNER_URL=postgres://$OWNER_ROLE:$OWNER_PASSWORD@$PGHOST:$PGPORT/$APP_DB"
