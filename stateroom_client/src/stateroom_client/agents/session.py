"""`StateroomSession`: the Agents SDK `Session` protocol on a Stateroom session.

Stateroom session items are append-only with gap-free seqs (they are the
audited conversation record), so the two SDK operations that remove history
append a tombstone instead of deleting:

- `pop_item()` appends ``item_type="sdk.pop"`` with ``payload={"seq": n}``: the
  item at seq n is no longer part of the agent's history.
- `clear_session()` appends ``item_type="sdk.clear"``: every item before the
  tombstone is no longer part of the agent's history.
- `replace_call()` (the approval gate, after an operator's edit) appends
  ``item_type="sdk.edit"`` with ``payload={"seq": n, "call_id", "asked_arguments",
  ...}`` followed by the call with the approved arguments: the item at seq n
  (the call as the model asked it) is no longer part of the agent's history,
  the call that ran is, and the tombstone keeps what was asked and who changed it.

Readers fold the tombstones: `get_items()` returns what the agent should see,
in seq order; the console and exports still show everything, tombstones
included. Removing content for good is the admins' "delete content" action,
not the agent's. A pop's tombstone carries the idempotency key ``pop:<seq>``
and a nonce, so two concurrent pops cannot both take the same item: the loser's
append is refused (`idempotency_key_reused`) and it pops the next one, while a
retry of our own append replays it.

SDK items are stored as the item's JSON in ``payload``, with ``item_type``
``openai.<type>`` (``openai.message``, ``openai.function_call``, ...) and
``role`` the message role (``tool`` for tool outputs).

`add_items` appends in requests of at most 200 items that stay under the
server's body limit (`client.max_body_bytes`); an item that alone would be over
it is refused with `ItemTooLarge` before any of the items is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import agents.memory.session_settings as sdk_settings
from agents.items import TResponseInputItem
from agents.memory.session_settings import SessionSettings, resolve_session_limit

from .._core import Endpoints, encode_body
from ..aio import AsyncStateroomClient
from ..errors import IdempotencyKeyReused, ItemTooLarge, NotFound, PayloadTooLarge
from ..models import SessionItem

SDK_PREFIX = "openai."
POP = "sdk.pop"
CLEAR = "sdk.clear"
EDIT = "sdk.edit"
_REMOVES = (POP, EDIT)  # tombstones that take the item at their payload's seq out
_NEWEST = 2**53  # "before the end": larger than any seq
_PAGE = 200

_ROLES = {
    "function_call": "assistant",
    "function_call_output": "tool",
    "reasoning": "assistant",
    "computer_call": "assistant",
    "computer_call_output": "tool",
}


def coerce_settings(value: SessionSettings | Mapping[str, Any] | None) -> SessionSettings:
    """`SessionSettings` from what a caller passed, as the SDK's own sessions take it.

    A dict goes through the SDK's `coerce_session_settings` where the SDK has
    it, so an unknown key (``{"limitt": 1}``) is refused the same way; older
    SDK releases get the same check here.
    """
    if value is None:
        return SessionSettings()
    if isinstance(value, SessionSettings):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"session_settings must be SessionSettings or a dict, not {value!r}")
    coerce: Callable[[dict[str, Any]], SessionSettings] | None = getattr(
        sdk_settings, "coerce_session_settings", None
    )
    if coerce is not None:
        return coerce(dict(value))
    # Older SDK releases have no coerce_session_settings: the same check here.
    known = {f.name for f in dataclasses.fields(SessionSettings)}
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise TypeError(f"Unknown session settings: {', '.join(unknown)}")
    return SessionSettings(**value)


def item_digest(item: Any) -> str:
    """sha256 of an SDK item's JSON with sorted keys: the same item read back digests the same."""
    text = json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def to_stateroom(item: TResponseInputItem) -> dict[str, Any]:
    data = dict(item)
    item_type = str(data.get("type") or "message")
    role = str(data.get("role") or _ROLES.get(item_type, "assistant"))
    return {"role": role, "item_type": SDK_PREFIX + item_type, "payload": data}


class StateroomSession:
    """Conversation memory of an SDK agent, kept in Stateroom session `session_id`.

    The Stateroom session must exist (see `create`). `run_id`, when set, is
    recorded on every item appended (the approval gate sets it while it runs).
    `session_settings` (a `SessionSettings` or a dict of its fields) holds the
    default `limit` of `get_items`, as for the SDK's own sessions.
    """

    session_settings: SessionSettings | None  # as the SDK's `Session` protocol declares it

    def __init__(
        self,
        client: AsyncStateroomClient,
        session_id: str,
        *,
        user_id: str = "",
        run_id: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        self.session_settings = coerce_settings(session_settings)
        self.client = client
        self.session_id = session_id
        self.user_id = user_id
        self.run_id = run_id
        # The worker writing for `run_id` (the gate sets both while it runs the run and
        # holds its claim): items of a claimed run need it.
        self.worker: str | None = None
        # item digest -> the seqs this object read or wrote it at: lets the gate
        # reference a conversation by seq instead of copying it (`seqs_of`).
        self._known: dict[str, list[int]] = {}
        # The seqs already read: a stored item reads back the same every time, so an item
        # read again (every turn reads the history) is not digested again. What this
        # object wrote is digested as written and once more as first read (JSON may
        # read back otherwise: -0.0 as 0.0).
        self._read: set[int] = set()

    @classmethod
    async def create(
        cls,
        client: AsyncStateroomClient,
        *,
        user_id: str,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        lease_seconds: int | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> StateroomSession:
        """Create the Stateroom session and return the SDK session on it."""
        settings = coerce_settings(session_settings)  # refused before anything is created
        record = await client.create_session(
            user_id=user_id,
            session_id=session_id or f"ses-{uuid.uuid4().hex[:16]}",
            metadata=metadata,
            lease_seconds=lease_seconds,
        )
        return cls(client, record.session_id, user_id=user_id, session_settings=settings)

    @classmethod
    async def open(
        cls,
        client: AsyncStateroomClient,
        session_id: str,
        *,
        user_id: str,
        metadata: dict[str, Any] | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> StateroomSession:
        """The SDK session on `session_id`, creating the Stateroom session if it is missing."""
        settings = coerce_settings(session_settings)
        try:
            await client.get_session(session_id)
        except NotFound:
            await client.create_session(user_id=user_id, session_id=session_id, metadata=metadata)
        return cls(client, session_id, user_id=user_id, session_settings=settings)

    # --- reading: newest first, folding tombstones ---------------------------
    async def _visible_newest_first(self, want: int | None) -> list[SessionItem]:
        """Up to `want` visible SDK items, newest first (all of them when None)."""
        visible: list[SessionItem] = []
        popped: set[int] = set()
        before = _NEWEST
        size = _PAGE if want is None else min(_PAGE, want)  # the first page: what is asked
        while want is None or len(visible) < want:
            page = await self.client.get_items(self.session_id, before_seq=before, limit=size)
            rows = page.results
            for row in reversed(rows):
                self._remember(row.seq, row.payload, read=True)
                if row.item_type == CLEAR:
                    return visible
                if row.item_type in _REMOVES:
                    popped.add(int((row.payload or {}).get("seq", 0)))
                elif row.item_type.startswith(SDK_PREFIX) and row.seq not in popped:
                    visible.append(row)
                    if want is not None and len(visible) >= want:
                        return visible
            if len(rows) < size or rows[0].seq <= 1:
                return visible
            before, size = rows[0].seq, _PAGE  # tombstones took some: read on in full pages
        return visible

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with `limit`, the newest `limit` items."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit <= 0:
            return []
        rows = await self._visible_newest_first(limit)
        return [row.payload for row in reversed(rows)]

    # --- writing -------------------------------------------------------------
    async def add_items(self, items: list[TResponseInputItem]) -> None:
        rows = [to_stateroom(item) for item in items]
        batches = self._batches(rows)  # an item too large is refused before any is written
        while batches:
            limit = self.client.max_body_bytes
            try:
                # A fresh key per append lets the client retry a lost answer
                # without appending the items twice.
                appended = await self.client.append_items(
                    self.session_id,
                    batches[0],
                    run_id=self.run_id,
                    worker=self.worker,
                    idempotency_key=_add_key(),
                )
            except PayloadTooLarge:
                if self.client.max_body_bytes >= limit:
                    raise
                # The server's limit is lower than the client knew (the 413 said
                # which): the refused request wrote nothing, split the rest again.
                batches = self._batches([row for batch in batches for row in batch])
                continue
            for offset, row in enumerate(batches.pop(0)):
                self._remember(appended.first_seq + offset, row["payload"])

    def _batches(self, rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """`rows` in order, as appends of at most `_PAGE` items under the body limit."""
        limit = self.client.max_body_bytes
        empty = Endpoints.append_items(
            self.session_id,
            items=[],
            run_id=self.run_id,
            idempotency_key=_add_key(),
            worker=self.worker,
        )
        base = len(encode_body(empty.body) or b"")
        batches: list[list[dict[str, Any]]] = []
        size = base
        for index, row in enumerate(rows):
            grows = len(encode_body(row) or b"")
            if base + grows > limit:
                raise ItemTooLarge(
                    f"Item {index} of {len(rows)} ({row['item_type']}) makes a request of"
                    f" {base + grows} bytes, over the server's limit of {limit} bytes;"
                    " none of the items was written.",
                    code="item_too_large",
                    details={"size_bytes": base + grows, "limit_bytes": limit},
                )
            if batches and len(batches[-1]) < _PAGE and size + 1 + grows <= limit:
                batches[-1].append(row)  # after a comma
                size += 1 + grows
            else:
                batches.append([row])
                size = base + grows
        return batches

    async def replace_call(
        self,
        call_id: str,
        arguments: dict[str, Any],
        *,
        note: dict[str, Any],
        run_id: str,
        worker: str | None,
        idempotency_key: str,
    ) -> int | None:
        """Make the history hold function call `call_id` with `arguments` instead of as asked.

        For a call an operator edited before it ran: the model's later turns must
        see the call that ran next to its output. The stored call (written by run
        `run_id`) is tombstoned by an `sdk.edit` item that keeps the asked
        arguments and `note` (who decided, the approval), and the call is
        appended again with `arguments`, in one append. Returns the new call's
        seq; None when the history does not hold the call (the SDK has not
        stored it yet, and will store it as edited) or holds it edited already.
        """
        found = await self._newest_call(call_id, run_id)
        if found is None or _call_arguments(found.payload) == arguments:
            return None
        edited = {**found.payload, "arguments": json.dumps(arguments)}
        tombstone = {
            "seq": found.seq,
            "call_id": call_id,
            "asked_arguments": _call_arguments(found.payload),
            "approved_arguments": arguments,
            **note,
        }
        appended = await self.client.append_items(
            self.session_id,
            [
                {"role": "system", "item_type": EDIT, "payload": tombstone},
                {"role": found.role, "item_type": found.item_type, "payload": edited},
            ],
            run_id=run_id,
            worker=worker,
            idempotency_key=idempotency_key,
        )
        self._remember(appended.first_seq + 1, edited)
        return appended.first_seq + 1

    async def _newest_call(self, call_id: str, run_id: str) -> SessionItem | None:
        """The visible function call `call_id` among the newest items run `run_id` wrote."""
        removed: set[int] = set()
        before = _NEWEST
        while True:
            page = await self.client.get_items(self.session_id, before_seq=before, limit=_PAGE)
            for row in reversed(page.results):
                if row.item_type == CLEAR:
                    return None
                if row.item_type in _REMOVES:
                    removed.add(int((row.payload or {}).get("seq", 0)))
                elif row.item_type.startswith(SDK_PREFIX) and row.run_id != run_id:
                    return None  # older than the run: the call is not stored
                elif row.seq not in removed and _is_call(row, call_id):
                    return row
            if len(page.results) < _PAGE or page.results[0].seq <= 1:
                return None
            before = page.results[0].seq

    # --- seqs: a conversation by reference ------------------------------------
    def _remember(self, seq: int, payload: Any, *, read: bool = False) -> None:
        if read:
            if seq in self._read:
                return
            self._read.add(seq)
        seqs = self._known.setdefault(item_digest(payload), [])
        if seq not in seqs:
            seqs.append(seq)
            seqs.sort()

    def seq_of(self, item: Any, *, after: int = 0) -> int | None:
        """The first seq after `after` at which this object read or wrote `item`, if any."""
        return next((s for s in self._known.get(item_digest(item), ()) if s > after), None)

    async def items_at(self, seqs: list[int]) -> list[TResponseInputItem]:
        """The items stored at `seqs` (increasing), tombstoned or not, read in pages."""
        wanted = set(seqs)
        found: dict[int, Any] = {}
        for first, last in seq_ranges(seqs):
            after = first - 1
            while after < last:
                page = await self.client.get_items(
                    self.session_id, after_seq=after, limit=min(500, last - after)
                )
                if not page.results:
                    break
                for row in page.results:
                    if row.seq in wanted and row.seq <= last:
                        found[row.seq] = row.payload
                        self._remember(row.seq, row.payload, read=True)
                after = page.results[-1].seq
        missing = [seq for seq in seqs if seq not in found]
        if missing:
            raise NotFound(
                f"Session {self.session_id} has no items at seqs {missing[:5]}.",
                code="items_missing",
            )
        return [found[seq] for seq in seqs]

    async def pop_item(self) -> TResponseInputItem | None:
        while True:
            newest = await self._visible_newest_first(1)
            if not newest:
                return None
            item = newest[0]
            tombstone = {"seq": item.seq, "nonce": uuid.uuid4().hex}
            try:
                await self.client.append_items(
                    self.session_id,
                    [{"role": "system", "item_type": POP, "payload": tombstone}],
                    run_id=self.run_id,
                    worker=self.worker,
                    idempotency_key=f"pop:{item.seq}",
                )
            except IdempotencyKeyReused:
                continue  # another caller popped this item first: take the next one
            popped: TResponseInputItem = item.payload
            return popped

    async def clear_session(self) -> None:
        await self.client.append_items(
            self.session_id,
            [{"role": "system", "item_type": CLEAR, "payload": {}}],
            run_id=self.run_id,
            worker=self.worker,
            idempotency_key=f"clear:{uuid.uuid4().hex}",
        )


def _is_call(row: SessionItem, call_id: str) -> bool:
    payload = row.payload if isinstance(row.payload, dict) else {}
    return row.item_type == SDK_PREFIX + "function_call" and payload.get("call_id") == call_id


def _call_arguments(payload: dict[str, Any]) -> Any:
    """A stored function call's arguments as JSON values (the SDK stores them as text)."""
    raw = payload.get("arguments")
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _add_key() -> str:
    """The idempotency key of one append (always the same length: batches are sized with it)."""
    return f"add:{uuid.uuid4().hex}"


def seq_ranges(seqs: list[int]) -> list[list[int]]:
    """Increasing seqs as inclusive [first, last] runs: [1, 2, 3, 7] -> [[1, 3], [7, 7]]."""
    ranges: list[list[int]] = []
    for seq in seqs:
        if ranges and seq == ranges[-1][1] + 1:
            ranges[-1][1] = seq
        else:
            ranges.append([seq, seq])
    return ranges


def seqs_in(ranges: list[list[int]]) -> list[int]:
    return [seq for first, last in ranges for seq in range(first, last + 1)]
