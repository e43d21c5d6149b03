"""What the deletion pages show: a deletion job's progress and the content classes, labelled."""

from __future__ import annotations

from lifecycle_app.content import CLASSES
from lifecycle_app.deletion import DeletionStore, progress

KEPT_LABELS = {
    "audit_events": "Audit events (who did what, when, and people's reasons)",
    "effect_records": "Effect records (idempotency key, tool, status; redacted)",
    "approvals": "Approvals (tool, risk, digest, decision, who; redacted)",
    "runs": "Runs and their status history",
    "tasks": "Tasks (status, node ids, references; redacted)",
}


def labelled_rows(counts: dict, labels: dict) -> list[dict]:
    """Counts per class in the registry's order, labelled for people."""
    keys = [k for k in labels if k in counts] + sorted(set(counts) - set(labels))
    return [{"key": k, "label": labels.get(k, k), "count": counts[k]} for k in keys]


CLASS_LABELS = {name: cls.label for name, cls in CLASSES.items()}


def job_progress(store: DeletionStore, job) -> dict:
    """The job's progress (`deletion.progress`) with per-class rows for the fragment."""
    state = progress(job, store.now())
    state["rows"] = [
        {**row, "planned": row["count"], "done": state["counts"].get(row["key"], 0)}
        for row in labelled_rows(state["planned"], CLASS_LABELS)
    ]
    return state
