"""A new run, in `created` at version 1."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError

from sessions_app.models import Session
from stateroom.errors import Conflict, ContentDeleted, NotFound, Unprocessable
from stateroom.ids import (
    PUBLIC_ID_RULE,
    is_valid_public_id,
    new_public_id,
)
from tasks_app.models import Task

from ..models import (
    Run,
    RunStatus,
)
from .base import RunStoreBase
from .validation import STRING_LIMITS


class RunCreate(RunStoreBase):
    def create(
        self,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        active_agent: str = "",
        deadline_at: datetime | None = None,
    ) -> Run:
        """A new run in `created`, version 1, with none of another run's transient state.

        Node, tool, approval and budget fields always start empty: a run shares
        a session or a task with earlier runs, never their execution facts.
        """
        # The ids a run names: its own (None: generated), its session's and task's (None
        # or "": none). An id no row can have is 422, like the API's.
        ids = {"run_id": run_id, "session_id": session_id or None, "task_id": task_id or None}
        bad_ids = {
            name: [PUBLIC_ID_RULE]
            for name, value in ids.items()
            if value is not None and not is_valid_public_id(value)
        }
        if bad_ids:
            raise Unprocessable("Invalid " + ", ".join(bad_ids) + ".", details=bad_ids)
        if len(active_agent or "") > STRING_LIMITS["active_agent"]:
            raise Unprocessable(
                "active_agent is too long.",
                details={"active_agent": [f"at most {STRING_LIMITS['active_agent']} characters"]},
            )
        now = self.now()
        if deadline_at is not None and deadline_at <= now:
            raise Unprocessable(
                "deadline_at lies in the past.",
                details={"deadline_at": ["must lie in the future"]},
            )
        with self.atomic():
            session = task = None
            if session_id:
                session = Session.objects.filter(tenant=self.tenant, session_id=session_id).first()
                if session is None:
                    raise NotFound("No such session.", details={"session_id": session_id})
            if task_id:
                task = Task.objects.filter(tenant=self.tenant, task_id=task_id).first()
                if task is None:
                    raise NotFound("No such task.", details={"task_id": task_id})
            if session is not None and session.content_fenced_at is not None:
                raise ContentDeleted("session", session_id=session_id)
            if task is not None and task.content_fenced_at is not None:
                raise ContentDeleted("task", task_id=task_id)
            run_id = run_id or new_public_id("run")
            if self._runs().filter(run_id=run_id).exists():
                raise Conflict("A run with this id exists.", code="run_exists")
            try:
                with self.atomic():
                    run = Run.objects.create(
                        tenant=self.tenant,
                        run_id=run_id,
                        created_by_token_id=(
                            int(self.actor.id) if self.actor.kind == "token" else None
                        ),
                        session=session,
                        task=task,
                        status=RunStatus.CREATED,
                        active_agent=active_agent or "",
                        deadline_at=deadline_at,
                        version=1,
                        created_at=now,
                        updated_at=now,
                    )
            except IntegrityError as exc:
                raise Conflict("A run with this id exists.", code="run_exists") from exc
            self._record_transition(
                run,
                from_status="",
                changes={"status": RunStatus.CREATED, "active_agent": run.active_agent},
                worker=None,
                now=now,
            )
        return run
