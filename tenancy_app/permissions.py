"""The console's role matrix: one table, enforced by `tenancy_app.access.require_permission`.

Each permission names the least role that has it; roles are ranked
`support < operator < admin`, so a higher role has everything a lower one
has. README.md ("Who may do what") shows this same table, and
tests/tenancy/test_role_matrix.py checks that they agree.
"""

from __future__ import annotations

from django.db import models

from .models import ROLE_RANK, Role


class Permission(models.TextChoices):
    READ = "read", "Read sessions, timelines, runs, tasks, approvals, effects and the audit log"
    EXPORT_TRANSCRIPTS = "export_transcripts", "Export a session's transcript"
    DECIDE = "decide", "Approve, edit, answer or reject a tool call"
    CONTROL_RUNS = "control_runs", "Cancel, suspend and resume runs (one or in bulk)"
    SETTLE_EFFECTS = "settle_effects", "Settle an effect whose outcome is unknown"
    EXPORT_AUDIT = "export_audit", "Export the whole audit log"
    CLOSE = "close", "Close or expire sessions, place and release legal holds"
    DELETE = "delete", "Delete a session's content"
    ERASE = "erase", "Erase everything of one end user"
    MANAGE = "manage", "Members, runtime tokens, retention, four-eyes and quick-approve settings"


# The least role that has each permission.
ROLE_MATRIX: dict[Permission, Role] = {
    Permission.READ: Role.SUPPORT,
    # Support audits sessions: reading a transcript out is their job.
    Permission.EXPORT_TRANSCRIPTS: Role.SUPPORT,
    Permission.DECIDE: Role.OPERATOR,
    Permission.CONTROL_RUNS: Role.OPERATOR,
    Permission.SETTLE_EFFECTS: Role.OPERATOR,
    # The whole log names every person and action of the tenant: admins only.
    Permission.EXPORT_AUDIT: Role.ADMIN,
    Permission.CLOSE: Role.ADMIN,
    Permission.DELETE: Role.ADMIN,
    Permission.ERASE: Role.ADMIN,
    Permission.MANAGE: Role.ADMIN,
}


def role_has(role: str, permission: str) -> bool:
    return ROLE_RANK[Role(role)] >= ROLE_RANK[ROLE_MATRIX[Permission(permission)]]


def permissions_of(role: str) -> dict[str, bool]:
    """{permission: bool} for a role, as templates read it (`can.decide`)."""
    return {p.value: role_has(role, p) for p in Permission}
