#!/usr/bin/env bash
# Run the Agents SDK adapter's tests (tests/runtime/agents, with the SDK's own session
# tests, which tests/runtime/agents/sdk collects) against the lowest and the newest
# openai-agents release that stateroom_client/pyproject.toml declares (its
# `agents` extra), each in a venv of its own under .venv/sdk-range/ (the SDK's
# tests are fetched into that venv). Everything installed for the checkout lives
# under .venv/.
#
#   scripts/test_sdk_range.sh            # both ends of the range
#   PYTEST_ARGS="-k gate" scripts/test_sdk_range.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
spec=$(sed -n 's/^agents = \["\(openai-agents[^"]*\)"\].*/\1/p' stateroom_client/pyproject.toml)
lowest=$(printf '%s' "$spec" | sed -n 's/.*>=\([0-9][0-9.]*\).*/\1/p')
if [ -z "$spec" ] || [ -z "$lowest" ]; then
  echo "test-sdk-range: no 'openai-agents>=X,<Y' in stateroom_client/pyproject.toml" >&2
  exit 2
fi
rm -rf .venv-sdk  # where these venvs lived before
for end in lowest newest; do
  if [ "$end" = lowest ]; then pin="openai-agents==$lowest"; else pin="$spec"; fi
  venv=".venv/sdk-range/$end"
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade -e ./stateroom_client -e ".[dev]" "$pin"
  "$venv/bin/python" scripts/fetch_sdk_tests.py  # the SDK's tests (a no-op once fetched)
  installed=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("openai-agents"))')
  echo "test-sdk-range: $end of $spec: openai-agents $installed"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pytest tests/runtime/agents ${PYTEST_ARGS:-}
done
