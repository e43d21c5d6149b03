"""The message one recipient gets of one notice: what it says, and what it never says.

A message names the call (tool and risk), the runtime's summary, its key
arguments only (the runtime's `key_arguments`, each value trimmed to
`VALUE_CHARS`; none for a support member), its deadline and the link to the
approval's page in the console (`STATEROOM_CONSOLE_URL`: following it asks to
log in, it decides nothing). Nothing else of the arguments, no secret.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.urls import reverse

from approvals_app.notices import (
    NOTICE_ASKED,
    NOTICE_ENDED,
    NOTICE_ESCALATED,
    NOTICE_EXPIRED,
    NOTICE_REASSIGNED,
    NOTICE_REMINDER,
)
from tenancy_app.models import Role, Tenant
from tenancy_app.permissions import Permission, role_has

from .channels.base import Message

VALUE_CHARS = 80
TEST_KIND = "test"

TITLES = {
    NOTICE_ASKED: "Approval needed: {tool} ({risk})",
    NOTICE_REMINDER: "Reminder: approval needed: {tool} ({risk})",
    NOTICE_ESCALATED: "Escalated: approval needed: {tool} ({risk})",
    NOTICE_REASSIGNED: "Assigned to you: {tool} ({risk})",
    NOTICE_EXPIRED: "Expired undecided: {tool} ({risk})",
    NOTICE_ENDED: "{status}: {tool} ({risk})",
}


def console_url(path: str) -> str:
    return settings.STATEROOM_CONSOLE_URL.rstrip("/") + path


def approval_url(tenant_slug: str, approval_id: str) -> str:
    """The approval's page in the console."""
    return console_url(
        reverse("approvals:detail", kwargs={"tenant_slug": tenant_slug, "approval_id": approval_id})
    )


def trimmed(value: Any, limit: int = VALUE_CHARS) -> str:
    """One line of at most `limit` characters: a string as is, anything else as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def key_values(approval: Any) -> list[tuple[str, str]]:
    """The runtime's key arguments, as (name, trimmed value); nothing else of the call."""
    arguments = approval.arguments if isinstance(approval.arguments, dict) else {}
    return [
        (name, trimmed(arguments[name])) for name in approval.key_arguments if name in arguments
    ]


def outcome_of(approval: Any) -> str:
    """How it ended, in words ("approved by ada"); empty while pending."""
    status = approval.status
    if approval.is_pending:
        return ""
    if approval.decided_by and status != "expired":
        return f"{status} by {approval.decided_by}"
    return str(status)


def for_approval(
    *, tenant: Tenant, approval: Any, kind: str, role: str | None, digest: str
) -> Message:
    """The message of notice `kind` for a member of `role` (None: a channel, not a person)."""
    show_values = role != Role.SUPPORT
    outcome = outcome_of(approval)
    title = TITLES.get(kind, TITLES[NOTICE_ASKED]).format(
        tool=approval.tool_name,
        risk=approval.risk,
        status=(str(approval.status).capitalize() if outcome else "Ended"),
    )
    url = approval_url(tenant.slug, approval.approval_id)
    key_arguments = key_values(approval) if show_values else []
    lines = [approval.summary or f"{approval.tool_name} asks for approval."]
    lines += [f"{name}: {value}" for name, value in key_arguments]
    if outcome:
        lines.append(f"Outcome: {outcome}")
    elif approval.expires_at is not None:
        lines.append(f"Expires: {approval.expires_at.isoformat()}")
    lines.append(f"Open: {url}")
    pending = approval.is_pending
    return Message(
        kind=kind,
        tenant_slug=tenant.slug,
        approval_id=approval.approval_id,
        title=title,
        text="\n".join(lines),
        url=url,
        tool_name=approval.tool_name,
        risk=approval.risk,
        summary=approval.summary,
        key_arguments=key_arguments,
        expires_at=approval.expires_at,
        status=approval.status,
        outcome=outcome,
        digest=digest,
        run_version=approval.run_version,
        allowed_decisions=list(approval.allowed_decisions),
        recipient_can_decide=bool(
            pending and role is not None and role_has(role, Permission.DECIDE)
        ),
    )


def for_test(*, tenant: Tenant, channel_name: str) -> Message:
    """An admin's test of a channel: it says so, and links to the tenant's console."""
    url = console_url(reverse("tenant-home", kwargs={"tenant_slug": tenant.slug}))
    return Message(
        kind=TEST_KIND,
        tenant_slug=tenant.slug,
        approval_id="",
        title=f"Stateroom test message ({channel_name})",
        text=f"This channel reaches you: approvals of {tenant.name} will arrive here.\nOpen: {url}",
        url=url,
        status="",
    )
