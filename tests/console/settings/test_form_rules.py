"""The settings and audit forms take their limits from the rule's one place (issue 33).

The session lease in days and the unclaimed-run warning in minutes are the
store's limits (stateroom.leases, tenancy_app.store), the audit filters the
log's column lengths: the largest value each allows passes, one more fails.
"""

import pytest

from audit_app.models import AuditEvent
from console_app.forms.audit import AuditFilterForm
from console_app.forms.settings import SessionLeaseForm, UnclaimedRunWarningForm
from stateroom.leases import DAY, MAX_SESSION_LEASE_SECONDS
from tenancy_app.store import MAX_UNCLAIMED_WARNING
from tests.conftest import login


def test_the_lease_form_allows_the_stores_longest_lease_and_no_more():
    days = MAX_SESSION_LEASE_SECONDS // DAY
    assert SessionLeaseForm({"days": days}).is_valid()
    assert not SessionLeaseForm({"days": days + 1}).is_valid()


def test_the_warning_form_allows_the_stores_longest_warning_and_no_more():
    minutes = MAX_UNCLAIMED_WARNING // 60
    assert UnclaimedRunWarningForm({"minutes": minutes}).is_valid()
    assert not UnclaimedRunWarningForm({"minutes": minutes + 1}).is_valid()


@pytest.mark.parametrize(
    ("field", "column"),
    [
        ("actor", "actor_label"),
        ("action", "action"),
        ("target_type", "target_type"),
        ("target_id", "target_id"),
    ],
)
def test_an_audit_filter_is_as_long_as_its_column(field, column):
    length = AuditEvent._meta.get_field(column).max_length
    assert AuditFilterForm({field: "x" * length}).is_valid()
    assert not AuditFilterForm({field: "x" * (length + 1)}).is_valid()


def test_the_settings_page_states_the_same_limits(admin_a):
    page = login(admin_a).get("/t/acme/settings/").content.decode()
    assert f"Days (1 to {MAX_SESSION_LEASE_SECONDS // DAY})" in page
    assert f"Minutes (1 to {MAX_UNCLAIMED_WARNING // 60})" in page
