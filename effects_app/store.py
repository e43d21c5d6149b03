"""EffectStore: the external-effect ledger (Stripe / IETF Idempotency-Key style).

A runtime records an effect under an idempotency key BEFORE it calls the
outside world and commits or fails it afterwards. Recording the same key again
returns the existing record, so a resumed run asks "did this already happen?"
instead of repeating it. An effect whose outcome was lost in a crash is
`unknown` and is settled by a person, never blindly retried.

record/commit/fail are runtime hot-path writes and are not audited; marking an
effect unknown and settling it are audited.

While a worker's claim on the run is live (`runs_app.claims`), record, commit
and fail must name that worker (409 `run_claimed` otherwise, nothing
written): the claim is tested on the run row in the record's own statement,
or under the run's row lock (`FOR SHARE`) taken before the effect's, so a
claim taken at the same time waits for the write or refuses it.

Once a deletion of its run's session's content is requested, the run is
fenced and record/commit/fail are 409 `content_deleted` (before `run_claimed`). Content
(`CONTENT`: request, result, error) is redacted through `redact_content`;
key, digest, tool and status stay, so idempotency still holds for any other
run that records the same key.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db.models import Q, QuerySet

from approvals_app.models import ApprovalRequest, ApprovalStatus
from runs_app.claims import claim_condition, claimed_elsewhere
from runs_app.models import Run
from stateroom.canonical import canonical_json, digest, legacy_digest
from stateroom.content import RUN, Batch, ContentClass, content_class, redact_in_key_order
from stateroom.errors import (
    Conflict,
    ContentDeleted,
    Forbidden,
    NotFound,
    Unprocessable,
    field_path,
)
from stateroom.ids import new_public_id
from stateroom.jsondata import storable_json
from stateroom.reasons import MAX_REASON_LENGTH
from stateroom.sql import columns, hot_cursor, insert_from, known, model_from_row
from stateroom.store import BaseStore

from .models import EffectStatus, ExternalEffect

_EFFECTS = ExternalEffect._meta.db_table
_RUNS = Run._meta.db_table
_EFFECT_COLUMNS = columns(ExternalEffect, "e")
KEY_MAX = ExternalEffect._meta.get_field("idempotency_key").max_length
TOOL_MAX = ExternalEffect._meta.get_field("tool_name").max_length
NODE_MAX = ExternalEffect._meta.get_field("node_id").max_length
SETTLE_OUTCOMES = (EffectStatus.COMMITTED, EffectStatus.FAILED)
# Why a person settled an effect: a person's reason (`stateroom.reasons`, one rule).
MAX_SETTLE_REASON_LENGTH = MAX_REASON_LENGTH

EFFECT_PAYLOADS = "effect_payloads"
CONTENT: tuple[ContentClass, ...] = (
    ContentClass(
        name=EFFECT_PAYLOADS,
        label="Effect requests, results and errors",
        table=_EFFECTS,
        fields=("request", "result", "error"),
        container=RUN,
        removal="fields cleared",
        retention="effect_payloads_days",
        kept=(
            "Each effect record's id, idempotency key, request digest, tool, status, who "
            "settled it and times: a resumed run can still ask whether the effect happened, "
            "and the same key with another request is still refused."
        ),
    ),
)


def legacy_request_digest(tool_name: str, request: dict) -> str:
    """The request digest of records written before RFC 8785 (stateroom.canonical)."""
    return legacy_digest({"tool_name": tool_name, "request": request})


def request_digest(tool_name: str, request: dict) -> str:
    """What "the same request" means: sha256 of the canonical JSON of tool name and request."""
    return digest({"tool_name": tool_name, "request": request})


def _invalid(field: str, message: str) -> Unprocessable:
    return Unprocessable(f"{field}: {message}", details={field: [message]})


def _text(field: str, value: Any, max_length: int, *, required: bool = True) -> str:
    if not isinstance(value, str) or (required and not value.strip()):
        raise _invalid(field, "required" if required else "must be a string")
    if len(value) > max_length:
        raise _invalid(field, f"at most {max_length} characters")
    return value


def _json_object(field: str, value: Any) -> dict:
    storable_json(value, field)
    if not isinstance(value, dict):
        raise _invalid(field, "must be a JSON object")
    return value


def _invalid_transition(effect: ExternalEffect, requested: str) -> Conflict:
    return Conflict(
        f"An effect that is {effect.status} cannot become {requested}.",
        code="invalid_transition",
        details={"effect_id": effect.effect_id, "status": effect.status, "requested": requested},
    )


def _inserted(
    row: tuple[Any, ...], values: dict[str, Any], *, run_id: str, approval: ApprovalRequest | None
) -> ExternalEffect:
    """The effect just inserted, from its values and the INSERT's `id, run_id`."""
    effect = ExternalEffect(id=row[0], run_id=row[1], **values)
    effect._state.adding, effect._state.db = False, DEFAULT_DB_ALIAS
    effect.run = known(Run, effect.run_id, run_id=run_id)
    if approval is not None:
        effect.approval = approval
    return effect


class EffectStore(BaseStore):
    # --- reads ------------------------------------------------------------
    def get_run(self, run_id: str) -> Run:
        run = Run.objects.filter(tenant=self.tenant, run_id=run_id).first()
        if run is None:
            raise NotFound("No such run.", details={"run_id": run_id})
        return run

    def get(self, effect_id: str) -> ExternalEffect:
        effect = (
            ExternalEffect.objects.filter(tenant=self.tenant, effect_id=effect_id)
            .select_related("run", "approval")
            .first()
        )
        if effect is None:
            raise NotFound("No such effect.", details={"effect_id": effect_id})
        return effect

    def first_under_approval(self, approval_pk: int) -> ExternalEffect | None:
        """The first effect recorded under an approval (any status), or None: whether the
        approved call ran, or may have (started, unknown), or failed running."""
        return (
            ExternalEffect.objects.filter(tenant=self.tenant, approval_id=approval_pk)
            .order_by("id")
            .first()
        )

    def find(self, idempotency_key: str) -> ExternalEffect | None:
        return (
            ExternalEffect.objects.filter(tenant=self.tenant, idempotency_key=idempotency_key)
            .select_related("run", "approval")
            .first()
        )

    def list_effects(
        self,
        *,
        run_id: str | None = None,
        idempotency_key: str | None = None,
        status: str | None = None,
    ) -> QuerySet[ExternalEffect]:
        queryset = ExternalEffect.objects.filter(tenant=self.tenant).select_related(
            "run", "approval"
        )
        if run_id is not None:
            queryset = queryset.filter(run=self.get_run(run_id))
        if idempotency_key is not None:
            queryset = queryset.filter(idempotency_key=idempotency_key)
        if status:
            if status not in EffectStatus.values:
                raise _invalid("status", f"must be one of {EffectStatus.values}")
            queryset = queryset.filter(status=status)
        return queryset

    def needing_a_person(self) -> QuerySet[ExternalEffect]:
        """Effects a person must settle, across runs: `unknown`, or `started` and not
        finished for longer than `STATEROOM_EFFECT_STUCK_MINUTES` (the runtime died
        between recording and committing). Unordered; callers keyset by id.
        """
        cutoff = self.now() - timedelta(minutes=settings.STATEROOM_EFFECT_STUCK_MINUTES)
        return (
            ExternalEffect.objects.filter(tenant=self.tenant)
            .filter(
                Q(status=EffectStatus.UNKNOWN)
                | Q(status=EffectStatus.STARTED, updated_at__lt=cutoff)
            )
            .select_related("run")
        )

    def resume_preview(self, *, run_id: str) -> dict[str, list[ExternalEffect]]:
        """What a resume of this run must do with each effect it recorded.

        committed: skip (it happened; use its result). failed: may be re-run.
        unknown or started: the outcome is not known; a person settles it first.
        """
        preview: dict[str, list[ExternalEffect]] = {"skip": [], "rerun": [], "settle": []}
        bucket = {
            EffectStatus.COMMITTED: "skip",
            EffectStatus.FAILED: "rerun",
            EffectStatus.UNKNOWN: "settle",
            EffectStatus.STARTED: "settle",
        }
        for effect in self.list_effects(run_id=run_id).order_by("id"):
            preview[bucket[effect.status]].append(effect)
        return preview

    # --- writes -----------------------------------------------------------
    def record(
        self,
        *,
        run_id: str,
        idempotency_key: str,
        tool_name: str,
        request: dict,
        node_id: str = "",
        approval_id: str | None = None,
        worker: str | None = None,
    ) -> tuple[ExternalEffect, bool]:
        """Record an effect about to happen, or return the one already under this key.

        Returns `(effect, created)`. The key is unique per tenant across runs, so
        a later run resuming the same task finds what an earlier run did.
        While another worker's claim on the run is live, nothing is recorded
        or returned (409 `run_claimed`).

        Under a voided approval nothing is recorded (409 `approval_voided`): its
        runtime said it would not run that call. The run's row is read `FOR KEY
        SHARE`, then the approval's `FOR NO KEY UPDATE` (run first, the order of
        every lock on them; a void or a decision holds both `FOR UPDATE`), held
        until the effect is in, so a void racing this waits for it and sees the
        effect, or this waits for the void and sees it.
        """
        arguments = {
            "run_id": run_id,
            "idempotency_key": idempotency_key,
            "tool_name": tool_name,
            "request": request,
            "node_id": node_id,
            "approval_id": approval_id,
            "worker": worker,
        }
        if approval_id is None:
            return self._record(**arguments)
        # The caller's tenant transaction, or one of its own: the locks last until the
        # effect is in.
        with self.reading():
            return self._record(**arguments)

    def _record(
        self,
        *,
        run_id: str,
        idempotency_key: str,
        tool_name: str,
        request: dict,
        node_id: str,
        approval_id: str | None,
        worker: str | None,
    ) -> tuple[ExternalEffect, bool]:
        idempotency_key = _text("idempotency_key", idempotency_key, KEY_MAX)
        tool_name = _text("tool_name", tool_name, TOOL_MAX)
        request = _json_object("request", request)
        node_id = _text("node_id", node_id, NODE_MAX, required=False)
        approval = None
        if approval_id is not None:
            approval = self._approval_for_effect(run_id, approval_id)
        wanted = request_digest(tool_name, request)
        now = self.now()
        values = {
            "tenant_id": self.tenant.pk,
            "effect_id": new_public_id("eff"),
            "approval_id": approval.pk if approval is not None else None,
            "node_id": node_id,
            "idempotency_key": idempotency_key,
            "tool_name": tool_name,
            "request": request,
            "request_digest": wanted,
            "status": EffectStatus.STARTED.value,
            "created_at": now,
            "updated_at": now,
        }
        insert, insert_params = self._insert_sql(values, run_id=run_id, worker=worker, now=now)
        row, existing = self._insert_or_read(
            insert, insert_params, run_id=run_id, key=idempotency_key, worker=worker, now=now
        )
        if row is None and existing is None:
            with self.atomic():
                # Why not: under the run's lock, so the claim stays as read.
                # Unknown run: 404 whatever the key; a fenced run takes no
                # effect, not even a replay; another worker's run neither.
                self._hold_run(run_id=run_id, worker=worker, now=now)
                existing = self._existing(idempotency_key)
                if existing is None:  # the claim was dropped since the INSERT: it goes in now
                    with hot_cursor() as cursor:
                        cursor.execute(insert, insert_params)
                        row = cursor.fetchone()
        if row is not None:
            return _inserted(row, values, run_id=run_id, approval=approval), True
        if existing is None:  # pragma: no cover - the key was just seen taken
            raise Conflict("The effect changed while recording; retry.", code="effect_contention")
        return self._same_request(
            existing, wanted, legacy_request_digest(tool_name, request)
        ), False

    def _insert_sql(
        self, values: dict[str, Any], *, run_id: str, worker: str | None, now: datetime
    ) -> tuple[str, list[Any]]:
        """The INSERT … SELECT of a new record, and its parameters.

        One INSERT … SELECT finds the run and records the effect unless the
        key is taken or another worker holds the run. A concurrent caller with
        the same key makes it wait on the unique index until that caller's
        transaction ends: committed, the INSERT does nothing and its record is
        returned; rolled back, ours goes in. The run row is read FOR SHARE, so
        a claim being taken makes the INSERT wait and see it, and a claim
        taken after waits for this transaction.
        """
        names, selects, params = insert_from(ExternalEffect, values, expressions={"run_id": "r.id"})
        claim_sql, claim_params = claim_condition(worker, now, alias="r")
        insert = (
            f"INSERT INTO {_EFFECTS} ({names}) SELECT {selects} FROM {_RUNS} r"
            " WHERE r.tenant_id = %s AND r.run_id = %s AND r.content_fenced_at IS NULL"
            f" AND {claim_sql} FOR SHARE OF r"
            " ON CONFLICT (tenant_id, idempotency_key) DO NOTHING RETURNING id, run_id"
        )
        return insert, [*params, self.tenant.pk, run_id, *claim_params]

    def _insert_or_read(
        self,
        insert: str,
        insert_params: list[Any],
        *,
        run_id: str,
        key: str,
        worker: str | None,
        now: datetime,
    ) -> tuple[tuple[Any, ...] | None, ExternalEffect | None]:
        """The INSERT, and when it did nothing why: `(row, None)` it went in; `(None, record)`
        the key's record; `(None, None)` what the statement's snapshot cannot settle.

        When the INSERT did nothing, the same statement reads the run's fence
        and claim and the record under the key (gated on that: OFFSET 0 keeps
        each subquery whole, so `ins.id IS NULL` is a one-time filter). A
        replay is then one round trip; only what its snapshot cannot settle
        (an unknown run, a record committed while the INSERT waited on the
        key) takes the transaction in `_record`.
        """
        recorded = (
            f"WITH ins AS ({insert}) SELECT ins.id, ins.run_id, s.*, x.*"
            " FROM (VALUES (1)) one (o) LEFT JOIN ins ON true"
            " LEFT JOIN LATERAL (SELECT content_fenced_at, claimed_by, claim_until, version"
            f" FROM {_RUNS} WHERE tenant_id = %s AND run_id = %s AND ins.id IS NULL OFFSET 0)"
            f" s ON true LEFT JOIN LATERAL (SELECT {_EFFECT_COLUMNS}, r.run_id FROM {_EFFECTS} e"
            f" JOIN {_RUNS} r ON r.tenant_id = e.tenant_id AND r.id = e.run_id WHERE e.tenant_id = %s"
            " AND e.idempotency_key = %s AND ins.id IS NULL OFFSET 0) x ON true"
        )
        with hot_cursor(alone=True) as cursor:
            cursor.execute(
                recorded,
                [*insert_params, self.tenant.pk, run_id, self.tenant.pk, key],
            )
            found = cursor.fetchone()
        if found[0] is not None:
            return found[:2], None
        existing = None
        if found[5] is not None:  # the run, as the statement saw it
            # A fence only goes on; a claim seen live was live at that instant.
            self._refuse(run_id, found[2:6], worker=worker, now=now)
            if found[6] is not None:
                existing = model_from_row(ExternalEffect, found[6:-1])
                existing.run = known(Run, existing.run_id, run_id=found[-1])
        return None, existing

    def _approval_for_effect(self, run_id: str, approval_id: str) -> ApprovalRequest:
        """The run's approval an effect is recorded under, each row locked (the run first)."""
        with hot_cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM {_RUNS} WHERE tenant_id = %s AND run_id = %s FOR KEY SHARE",
                [self.tenant.pk, run_id],
            )
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such run.", details={"run_id": run_id})
        approval = (
            ApprovalRequest.objects.select_for_update(no_key=True)
            .filter(tenant=self.tenant, approval_id=approval_id)
            .first()
        )
        if approval is None:
            raise NotFound("No such approval.", details={"approval_id": approval_id})
        if approval.run_id != row[0]:
            raise _invalid("approval_id", "belongs to another run")
        if approval.status == ApprovalStatus.VOIDED:
            raise Conflict(
                "The approval was voided: its runtime will not run this call under it.",
                code="approval_voided",
                details={"approval_id": approval_id, "void_code": approval.void_code},
            )
        return approval

    def _existing(self, idempotency_key: str) -> ExternalEffect | None:
        """The record under this key with its run's public id, or None."""
        with hot_cursor() as cursor:
            cursor.execute(
                f"SELECT {_EFFECT_COLUMNS}, r.run_id FROM {_EFFECTS} e"
                f" JOIN {_RUNS} r ON r.tenant_id = e.tenant_id AND r.id = e.run_id"
                " WHERE e.tenant_id = %s AND e.idempotency_key = %s",
                [self.tenant.pk, idempotency_key],
            )
            row = cursor.fetchone()
        # A key recorded by another run of this tenant (an earlier attempt at the
        # task) is returned too.
        if row is None:
            return None
        existing = model_from_row(ExternalEffect, row[:-1])
        existing.run = known(Run, existing.run_id, run_id=row[-1])
        return existing

    def commit(self, *, effect_id: str, result: dict, worker: str | None = None) -> ExternalEffect:
        with self.atomic():
            self._hold_effect_run(effect_id=effect_id, worker=worker)
            effect = self._lock(effect_id)
            self._refuse_fenced(effect)
            result = _json_object("result", result)
            if effect.status == EffectStatus.COMMITTED:
                # A retried commit is a no-op; a different outcome is a conflict.
                # A redacted record cannot be compared and is taken as the retry.
                if effect.redacted_at is None and canonical_json(effect.result) != canonical_json(
                    result
                ):
                    raise Conflict(
                        "This effect is already committed with a different result.",
                        code="effect_conflict",
                        details={"effect_id": effect.effect_id, "status": effect.status},
                    )
                return effect
            if effect.status != EffectStatus.STARTED:
                raise _invalid_transition(effect, EffectStatus.COMMITTED)
            effect.status = EffectStatus.COMMITTED
            effect.result = result
            effect.updated_at = self.now()
            effect.save(update_fields=["status", "result", "updated_at"])
        return effect

    def fail(self, *, effect_id: str, error: dict, worker: str | None = None) -> ExternalEffect:
        with self.atomic():
            self._hold_effect_run(effect_id=effect_id, worker=worker)
            effect = self._lock(effect_id)
            self._refuse_fenced(effect)
            error = _json_object("error", error)
            if not isinstance(error.get("message"), str) or not error["message"].strip():
                raise _invalid(field_path("error", "message"), "required")
            if effect.status == EffectStatus.FAILED:
                if effect.redacted_at is None and canonical_json(effect.error) != canonical_json(
                    error
                ):
                    raise Conflict(
                        "This effect has already failed with a different error.",
                        code="effect_conflict",
                        details={"effect_id": effect.effect_id, "status": effect.status},
                    )
                return effect
            if effect.status != EffectStatus.STARTED:
                raise _invalid_transition(effect, EffectStatus.FAILED)
            effect.status = EffectStatus.FAILED
            effect.error = error
            effect.updated_at = self.now()
            effect.save(update_fields=["status", "error", "updated_at"])
        return effect

    def mark_unknown(self, *, effect_id: str, reason: str = "") -> ExternalEffect:
        """A started effect whose outcome was lost (the caller crashed mid-call)."""
        with self.atomic():
            effect = self._lock(effect_id)
            if effect.status == EffectStatus.UNKNOWN:
                return effect
            if effect.status != EffectStatus.STARTED:
                raise _invalid_transition(effect, EffectStatus.UNKNOWN)
            effect.status = EffectStatus.UNKNOWN
            effect.updated_at = self.now()
            effect.save(update_fields=["status", "updated_at"])
            self.audit(
                "effect.marked_unknown",
                target_type="effect",
                target_id=effect.effect_id,
                before={"status": EffectStatus.STARTED},
                after={"status": EffectStatus.UNKNOWN},
                reason=reason,
            )
        return effect

    def settle(self, *, effect_id: str, outcome: str, reason: str) -> ExternalEffect:
        """A person states what really happened to an effect whose outcome is not known."""
        with self.atomic():
            effect = self._lock(effect_id)
            if not self.actor.is_person:
                raise Forbidden("Only a person settles an effect.", code="person_required")
            if outcome not in SETTLE_OUTCOMES:
                raise _invalid("outcome", f"must be one of {list(SETTLE_OUTCOMES)}")
            reason = _text("reason", reason, MAX_SETTLE_REASON_LENGTH)
            if effect.status not in (EffectStatus.UNKNOWN, EffectStatus.STARTED):
                raise _invalid_transition(effect, outcome)
            before = effect.status
            effect.status = outcome
            effect.settled_by = self.actor.label
            effect.settle_reason = reason.strip()
            effect.updated_at = self.now()
            effect.save(update_fields=["status", "settled_by", "settle_reason", "updated_at"])
            self.audit(
                "effect.settled",
                target_type="effect",
                target_id=effect.effect_id,
                before={"status": before},
                after={"status": outcome},
                reason=effect.settle_reason,
            )
        return effect

    # --- lifecycle: content -------------------------------------------------
    CONTENT = CONTENT

    def effect_ids_of_runs(self, run_pks: Iterable[int]) -> list[str]:
        return list(
            ExternalEffect.objects.filter(tenant=self.tenant, run__in=list(run_pks))
            .order_by("pk")
            .values_list("effect_id", flat=True)
        )

    def _content_rows(self, name: str, runs: Iterable[int]) -> QuerySet[ExternalEffect]:
        content_class(CONTENT, name)
        return ExternalEffect.objects.filter(
            tenant=self.tenant, run__in=list(runs), redacted_at__isnull=True
        )

    def content_left(self, name: str, containers: Iterable[int]) -> int:
        return self._content_rows(name, containers).count()

    def redact_content(
        self, name: str, container: int, *, after: Any, limit: int, now: datetime
    ) -> Batch:
        """Redact up to `limit` effect records of one run (in the caller's transaction)."""
        return redact_in_key_order(
            self._content_rows(name, [container]),
            "pk",
            after=after,
            limit=limit,
            remove=lambda qs: qs.update(request=None, result=None, error=None, redacted_at=now),
        )

    # --- helpers ------------------------------------------------------------
    def _hold_run(self, *, run_id: str, worker: str | None, now: datetime) -> None:
        """Lock the run row FOR SHARE (until the transaction ends) and refuse a write to it:
        404 unknown run, 409 `content_deleted`, 409 `run_claimed` (another worker's live claim).
        """
        with hot_cursor() as cursor:
            cursor.execute(
                f"SELECT content_fenced_at, claimed_by, claim_until, version FROM {_RUNS}"
                " WHERE tenant_id = %s AND run_id = %s FOR SHARE",
                [self.tenant.pk, run_id],
            )
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such run.", details={"run_id": run_id})
        self._refuse(run_id, row, worker=worker, now=now)

    def _hold_effect_run(self, *, effect_id: str, worker: str | None) -> None:
        """`_hold_run` for the run of an effect: the run's row lock comes before the effect's."""
        with hot_cursor() as cursor:
            cursor.execute(
                f"SELECT r.content_fenced_at, r.claimed_by, r.claim_until, r.version, r.run_id"
                f" FROM {_RUNS} r JOIN {_EFFECTS} e ON e.tenant_id = r.tenant_id AND e.run_id = r.id"
                " WHERE e.tenant_id = %s AND e.effect_id = %s FOR SHARE OF r",
                [self.tenant.pk, effect_id],
            )
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such effect.", details={"effect_id": effect_id})
        self._refuse(row[4], row[:4], worker=worker, now=self.now(), effect_id=effect_id)

    @staticmethod
    def _refuse(
        run_id: str,
        row: tuple,
        *,
        worker: str | None,
        now: datetime,
        effect_id: str | None = None,
    ) -> None:
        fenced_at, claimed_by, claim_until, version = row
        if fenced_at is not None:
            extra = {"effect_id": effect_id} if effect_id else {}
            raise ContentDeleted("run", run_id=run_id, **extra)
        refusal = claimed_elsewhere(
            claimed_by=claimed_by,
            claim_until=claim_until,
            worker=worker,
            now=now,
            version=version,
        )
        if refusal is not None:
            raise refusal

    @staticmethod
    def _refuse_fenced(effect: ExternalEffect) -> None:
        if effect.run.content_fenced_at is not None:
            raise ContentDeleted("run", run_id=effect.run.run_id, effect_id=effect.effect_id)

    def _lock(self, effect_id: str) -> ExternalEffect:
        effect = (
            ExternalEffect.objects.select_related("run")
            .select_for_update(of=("self",))
            .filter(tenant=self.tenant, effect_id=effect_id)
            .first()
        )
        if effect is None:
            raise NotFound("No such effect.", details={"effect_id": effect_id})
        return effect

    @staticmethod
    def _same_request(
        existing: ExternalEffect, wanted: str, legacy: str | None = None
    ) -> ExternalEffect:
        # A record from before RFC 8785 digests carries the older spelling's digest.
        if existing.request_digest not in (wanted, legacy):
            raise Unprocessable(
                "This idempotency key was used for a different request.",
                code="idempotency_key_reused",
                details={
                    "idempotency_key": existing.idempotency_key,
                    "effect_id": existing.effect_id,
                },
            )
        return existing
