"""The approval policy and the facts a run depends on: risks, decisions, the tools' schemas,
the fingerprint a checkpoint records and the drift a resume finds."""

from __future__ import annotations

import json
from typing import Any

from ..session import item_digest
from .writes import GateWrites

RISKS = ("low", "medium", "high", "critical")
# Every decision the server knows, and the gate honours each: approve runs the
# call, edit runs it with the approved arguments, reject tells the model the
# reason, respond gives the model the operator's text as the tool's result.
DECISIONS = ("approve", "edit", "reject", "respond")
# The server's bound on an approval's `arguments_schema` (approvals_app.schemas).
MAX_SCHEMA_BYTES = 64 * 1024


def default_risk(tool_name: str, arguments: dict[str, Any]) -> str:
    return "medium"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class GatePolicy(GateWrites):
    """What the gate's policy says about a call, and what the run depends on."""

    def _risk(self, tool_name: str, arguments: dict[str, Any]) -> str:
        risk = self.risk_policy(tool_name, arguments)
        if risk not in RISKS:
            raise ValueError(f"risk_policy returned {risk!r}, not one of {RISKS}")
        return risk

    def _arguments_schema(self, tool_name: str) -> dict[str, Any] | None:
        """The tool's JSON schema as the SDK validates its arguments (`params_json_schema`):
        the server then refuses an edit the tool would refuse, and a plain approval of
        arguments it would (after the tool changed). None for a schema over the server's
        bound: the approval is still asked, unchecked."""
        for tool in self.agent.tools:
            schema = getattr(tool, "params_json_schema", None)
            if getattr(tool, "name", None) == tool_name and isinstance(schema, dict):
                schema = _jsonable(schema)
                return schema if len(json.dumps(schema)) <= MAX_SCHEMA_BYTES else None
        return None

    def _fingerprint(self) -> dict[str, Any]:
        """What the run's execution facts depend on: each tool's name and JSON schema, the
        model settings and the approval policy in force."""
        tools = {
            tool.name: _jsonable(getattr(tool, "params_json_schema", None))
            for tool in self.agent.tools
        }
        settings = getattr(self.agent.model_settings, "to_json_dict", None)
        policy = getattr(self.risk_policy, "__qualname__", repr(self.risk_policy))
        return {
            "tools": tools,
            "model_settings": item_digest(_jsonable(settings() if settings else None)),
            "policy": {
                "risk_policy": f"{getattr(self.risk_policy, '__module__', '')}.{policy}",
                "allowed_decisions": list(self.allowed_decisions),
                "on_rejection": self.on_rejection,
                "approval_ttl": self.approval_ttl.total_seconds() if self.approval_ttl else None,
            },
        }

    def _drift(self, recorded: Any) -> dict[str, Any]:
        """What changed since the checkpoint's fingerprint: {} when nothing did."""
        if not isinstance(recorded, dict):
            return {}  # a schema 1 checkpoint: nothing to compare with
        now = self._fingerprint()
        drift: dict[str, Any] = {}
        old_tools, new_tools = recorded.get("tools") or {}, now["tools"]
        tools = {
            name: {"old": old_tools.get(name), "new": new_tools.get(name)}
            for name in sorted(set(old_tools) | set(new_tools))
            if old_tools.get(name) != new_tools.get(name)
        }
        if tools:
            drift["tools"] = tools
        if recorded.get("model_settings") != now["model_settings"]:
            drift["model_settings"] = {
                "old": recorded.get("model_settings"),
                "new": now["model_settings"],
            }
        if recorded.get("policy") != now["policy"]:
            drift["policy"] = {"old": recorded.get("policy"), "new": now["policy"]}
        return drift
