#!/usr/bin/env bash
# What `make test` needs beyond Python packages: Chromium for the browser tests
# (Debian's; Playwright's own download does not work here) and Redis for the
# test that runs a real Celery worker. Installed where this machine allows it
# (root with apt-get); otherwise one line says what is missing and how to get
# it, and those tests skip (in CI, CI=true, they fail instead).
# STATEROOM_INSTALL_MISSING=0 only reports.
set -uo pipefail

chromium=${STATEROOM_CHROMIUM:-$(command -v chromium || true)}
can_install() {
  [ "${STATEROOM_INSTALL_MISSING:-1}" != 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null
}

if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then
  if can_install; then
    echo "make test: installing Debian's chromium for the browser tests"
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; then
      exit 0
    fi
  fi
  echo "make test: Chromium is missing, so the browser tests will skip:" \
    "install Debian's (sudo apt-get install chromium) or set STATEROOM_CHROMIUM=/path/to/chromium"
fi

if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && [ -z "${CELERY_BROKER_URL:-}" ]; then
  echo "make test: no Redis on 127.0.0.1:6379, so the real-worker test will skip:" \
    "redis-server --port 6379 --bind 127.0.0.1 --daemonize yes --save '' --appendonly no"
fi
exit 0
