"""What `stateroom_client.agents` exports does not shadow the Agents SDK's own names."""

from __future__ import annotations

import contextlib
import importlib

import agents

import stateroom_client.agents as adapter


def test_no_export_of_the_adapter_has_a_name_the_sdk_exports():
    sdk_names = set(dir(agents))
    # agents.testing (with its own ScriptedModel) exists in the newer SDK releases only.
    with contextlib.suppress(ImportError):
        sdk_names |= set(dir(importlib.import_module("agents.testing")))
    assert not set(adapter.__all__) & sdk_names
    assert "ScriptModel" in adapter.__all__
