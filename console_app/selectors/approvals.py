"""What the approval page shows around the approval: its conversation, run events and effects."""

from __future__ import annotations

from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.jsonview import highlight_json
from tenancy_app.models import Tenant

CONVERSATION_ITEMS = 10
RUN_EVENTS = 20
RUN_EFFECTS = 20


def around_approval(tenant: Tenant, actor: Actor, approval) -> tuple[list, list, list]:
    """The session's last items, the run's last events (payloads highlighted) and its effects."""
    run = approval.run
    session = run.session
    items = []
    if session is not None:
        items = SessionStore(tenant, actor).get_items(
            session_id=session.session_id,
            limit=CONVERSATION_ITEMS,
            before_seq=session.last_seq + 1,
        )
    events = RunStateStore(tenant, actor).get_events(
        run_id=run.run_id, after=max(run.last_event_seq - RUN_EVENTS, 0), limit=RUN_EVENTS
    )
    effects = list(
        EffectStore(tenant, actor).list_effects(run_id=run.run_id).order_by("-id")[:RUN_EFFECTS]
    )
    for row in (*items, *events):
        row.payload_html = highlight_json(row.payload) if row.payload is not None else ""
    return items, events, effects
