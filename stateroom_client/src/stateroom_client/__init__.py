"""Python client for the Stateroom runtime API.

    from stateroom_client import StateroomClient

    with StateroomClient("http://127.0.0.1:8000", token) as sr:
        session = sr.create_session(user_id="u-42")
        sr.append_items(session.session_id, [{"role": "user", "item_type": "message",
                                              "payload": {"text": "hi"}}])

`AsyncStateroomClient` has the same methods, awaited. The OpenAI Agents SDK
adapter lives in `stateroom_client.agents` (install the `agents` extra).
"""

from .aio import AsyncStateroomClient
from .client import StateroomClient
from .errors import (
    AlreadyDecided,
    AlreadyExists,
    BadRequest,
    Conflict,
    ContentDeleted,
    Forbidden,
    IdempotencyKeyReused,
    InvalidTransition,
    ItemTooLarge,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    RunClaimed,
    ServerError,
    StateroomError,
    TransportError,
    Unauthorized,
    ValidationError,
    VersionConflict,
)
from .models import (
    AppendResult,
    Approval,
    Checkpoint,
    CheckpointRef,
    Deletion,
    Effect,
    Erasure,
    Me,
    Page,
    Run,
    RunEvent,
    Session,
    SessionItem,
    Task,
)

__all__ = [
    "AlreadyDecided",
    "AlreadyExists",
    "AppendResult",
    "Approval",
    "AsyncStateroomClient",
    "BadRequest",
    "Checkpoint",
    "CheckpointRef",
    "Conflict",
    "ContentDeleted",
    "Deletion",
    "Effect",
    "Erasure",
    "Forbidden",
    "IdempotencyKeyReused",
    "InvalidTransition",
    "ItemTooLarge",
    "Me",
    "NotFound",
    "Page",
    "PayloadTooLarge",
    "RateLimited",
    "Run",
    "RunClaimed",
    "RunEvent",
    "ServerError",
    "Session",
    "SessionItem",
    "StateroomClient",
    "StateroomError",
    "Task",
    "TransportError",
    "Unauthorized",
    "ValidationError",
    "VersionConflict",
]
