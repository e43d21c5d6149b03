"""DurableTaskState of seed 000 (durable state is domain data only: `stateroom.jsondata`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class DurableTaskState:
    """The facts a long task needs to continue in another process (seed 000)."""

    task_id: str
    objective: str
    constraints: list[str] = field(default_factory=list)
    plan_version: str | None = None
    completed_nodes: set[str] = field(default_factory=set)
    pending_nodes: set[str] = field(default_factory=set)
    pending_approvals: list[str] = field(default_factory=list)
    artifact_refs: list[str] = field(default_factory=list)
    external_effect_records: list[str] = field(default_factory=list)
    latest_checkpoint_id: str | None = None
    schema_version: int = 1

    def to_json(self) -> dict[str, Any]:
        """Plain JSON; sets become sorted lists so equal states serialize equally."""
        return {
            "task_id": self.task_id,
            "objective": self.objective,
            "constraints": list(self.constraints),
            "plan_version": self.plan_version,
            "completed_nodes": sorted(self.completed_nodes),
            "pending_nodes": sorted(self.pending_nodes),
            "pending_approvals": list(self.pending_approvals),
            "artifact_refs": list(self.artifact_refs),
            "external_effect_records": list(self.external_effect_records),
            "latest_checkpoint_id": self.latest_checkpoint_id,
            "schema_version": self.schema_version,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DurableTaskState:
        return cls(
            task_id=data["task_id"],
            objective=data["objective"],
            constraints=list(data.get("constraints") or []),
            plan_version=data.get("plan_version"),
            completed_nodes=set(data.get("completed_nodes") or []),
            pending_nodes=set(data.get("pending_nodes") or []),
            pending_approvals=list(data.get("pending_approvals") or []),
            artifact_refs=list(data.get("artifact_refs") or []),
            external_effect_records=list(data.get("external_effect_records") or []),
            latest_checkpoint_id=data.get("latest_checkpoint_id"),
            schema_version=int(data.get("schema_version") or 1),
        )
