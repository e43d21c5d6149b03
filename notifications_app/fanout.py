"""From an approval's notice to messages: who hears it, on which channels (TO BE BUILT)."""

from __future__ import annotations


def handle_notice(tenant_id: int, approval_id: str, kind: str, ref: str) -> str:
    raise NotImplementedError("notifications_app.fanout.handle_notice")
