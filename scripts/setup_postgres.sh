#!/usr/bin/env bash
# Create the application's PostgreSQL role and database.
#
# The app connects as `stateroom`: NOSUPERUSER NOBYPASSRLS, so row-level
# security applies to it (superusers always skip RLS). CREATEDB lets the test
# runner create its test database. Idempotent.
set -euo pipefail
PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
ADMIN_USER=${PGADMIN_USER:-postgres}
APP_ROLE=${APP_ROLE:-stateroom}
APP_DB=${APP_DB:-stateroom}
psql_admin() {
  # As root on a Debian machine, use the postgres OS user (peer auth); else TCP.
  if [ "$(id -u)" = 0 ] && id postgres >/dev/null 2>&1 && [ -z "${PGADMIN_USER:-}" ]; then
    (cd /tmp && runuser -u postgres -- psql -p "$PGPORT" -d postgres -v ON_ERROR_STOP=1 -qAt "$@")
  else
    psql -h "$PGHOST" -p "$PGPORT" -U "$ADMIN_USER" -d postgres -v ON_ERROR_STOP=1 -qAt "$@"
  fi
}

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$APP_ROLE'")" != "1" ]; then
  psql_admin -c "CREATE ROLE $APP_ROLE LOGIN NOSUPERUSER NOBYPASSRLS CREATEDB PASSWORD '$APP_ROLE'"
fi
psql_admin -c "ALTER ROLE $APP_ROLE NOSUPERUSER NOBYPASSRLS CREATEDB"
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$APP_DB'")" != "1" ]; then
  psql_admin -c "CREATE DATABASE $APP_DB OWNER $APP_ROLE"
fi
echo "postgres://$APP_ROLE:$APP_ROLE@$PGHOST:$PGPORT/$APP_DB"
