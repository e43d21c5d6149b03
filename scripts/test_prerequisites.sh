#!/usr/bin/env bash
# What `make test` needs beyond Python packages: Chromium for the browser tests
# (Debian's; Playwright's own download does not work here), PgBouncer for the
# tests behind a transaction pooler (tests/pooler), Prometheus for the metrics
# test that scrapes the web server (tests/stateroom/test_metrics_prometheus.py), and Redis for the tests that
# run a real Celery worker. Installed where this machine allows it (root with
# apt-get); otherwise one line each says what is missing and how to get it,
# and those tests skip (in CI, CI=true, they fail instead).
# STATEROOM_INSTALL_MISSING=0 only reports.
set -uo pipefail

chromium=${STATEROOM_CHROMIUM:-$(command -v chromium || true)}
pgbouncer=${STATEROOM_PGBOUNCER:-$(command -v pgbouncer || echo /usr/sbin/pgbouncer)}
prometheus=${STATEROOM_PROMETHEUS:-$(command -v prometheus || true)}
missing=()
if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then missing+=(chromium); fi
if [ ! -x "$pgbouncer" ]; then missing+=(pgbouncer); fi
if [ -z "$prometheus" ] || [ ! -x "$prometheus" ]; then missing+=(prometheus); fi

if [ ${#missing[@]} -gt 0 ] && [ "${STATEROOM_INSTALL_MISSING:-1}" != 0 ] \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make test: installing Debian's ${missing[*]} for the tests that need them"
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null; then
    missing=()
  fi
  # The metrics test starts its own Prometheus on loopback; the package's service must not run.
  if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
  fi
fi
for package in "${missing[@]}"; do
  case $package in
    chromium) echo "make test: Chromium is missing, so the browser tests will skip:" \
      "install Debian's (sudo apt-get install chromium) or set STATEROOM_CHROMIUM=/path/to/chromium" ;;
    pgbouncer) echo "make test: PgBouncer is missing, so the pooler tests will skip:" \
      "install Debian's (sudo apt-get install pgbouncer) or set STATEROOM_PGBOUNCER=/path/to/pgbouncer" ;;
    prometheus) echo "make test: Prometheus is missing, so the metrics scrape test will skip:" \
      "install Debian's (sudo apt-get install prometheus; the test starts its own, so" \
      "systemctl disable --now prometheus) or set STATEROOM_PROMETHEUS=/path/to/prometheus" ;;
  esac
done

if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && [ -z "${CELERY_BROKER_URL:-}" ]; then
  echo "make test: no Redis on 127.0.0.1:6379, so the real-worker tests will skip:" \
    "redis-server --port 6379 --bind 127.0.0.1 --daemonize yes --save '' --appendonly no"
fi
exit 0
