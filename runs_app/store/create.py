"""A new run, in `created` at version 1."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError

from sessions_app.models import Session
from stateroom.errors import Conflict, ContentDeleted, NotFound
from stateroom.ids import new_public_id
from tasks_app.models import Task

from ..models import Run, RunStatus
from .base import RunStoreBase
from .validation import check_new_run, check_trace_id


class RunCreate(RunStoreBase):
    def create(
        self,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        active_agent: str = "",
        deadline_at: datetime | None = None,
        trace_id: str | None = None,
    ) -> Run:
        """A new run in `created`, version 1, with none of another run's transient state.

        Node, tool, approval and budget fields always start empty: a run shares
        a session or a task with earlier runs, never their execution facts.
        `trace_id`: the W3C trace id of the call that creates it (stateroom.tracing).
        """
        now = self.now()
        check_new_run(
            run_id=run_id,
            session_id=session_id,
            task_id=task_id,
            active_agent=active_agent,
            deadline_at=deadline_at,
            now=now,
        )
        check_trace_id(trace_id)
        with self.atomic():
            session, task = self._parents(session_id, task_id)
            run_id = run_id or new_public_id("run")
            if self._runs().filter(run_id=run_id).exists():
                raise Conflict("A run with this id exists.", code="run_exists")
            run = self._insert(
                run_id=run_id,
                session=session,
                task=task,
                active_agent=active_agent or "",
                deadline_at=deadline_at,
                trace_id=trace_id,
                now=now,
            )
            self._record_transition(
                run,
                from_status="",
                changes={"status": RunStatus.CREATED, "active_agent": run.active_agent},
                worker=None,
                now=now,
            )
        return run

    def _parents(
        self, session_id: str | None, task_id: str | None
    ) -> tuple[Session | None, Task | None]:
        """The session and task a new run names (404 unknown; 409 once their content is fenced)."""
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
        return session, task

    def _insert(
        self,
        *,
        run_id: str,
        session: Session | None,
        task: Task | None,
        active_agent: str,
        deadline_at: datetime | None,
        trace_id: str | None,
        now: datetime,
    ) -> Run:
        """The run row; a concurrent create of the same id is 409 `run_exists`."""
        try:
            with self.atomic():
                return Run.objects.create(
                    tenant=self.tenant,
                    run_id=run_id,
                    created_by_token_id=(
                        int(self.actor.id) if self.actor.kind == "token" else None
                    ),
                    session=session,
                    task=task,
                    status=RunStatus.CREATED,
                    active_agent=active_agent,
                    deadline_at=deadline_at,
                    trace_id=trace_id,
                    version=1,
                    created_at=now,
                    updated_at=now,
                )
        except IntegrityError as exc:
            raise Conflict("A run with this id exists.", code="run_exists") from exc
