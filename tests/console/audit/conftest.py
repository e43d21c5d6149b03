"""The operator and admin console fixtures (tests/console/fixtures.py) for the tests of this page."""

from tests.console.fixtures import csrf_client, record_audit  # noqa: F401  (fixtures)
