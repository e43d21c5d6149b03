"""The layering is pinned: the import-linter contracts of pyproject.toml ([tool.importlinter]).

`lint-imports` prints the same check with every broken import chain.
"""

from copy import deepcopy
from pathlib import Path

import pytest
from importlinter import api  # noqa: F401  (configures import-linter's adapters)
from importlinter.application import use_cases
from importlinter.application.app_config import settings as linter

PYPROJECT = str(Path(__file__).resolve().parents[2] / "pyproject.toml")


class _GraphWithImports:
    """The project's import graph, built once, with the imports a test adds to a copy of it."""

    def __init__(self, builder) -> None:
        self.builder = builder
        self.built = None
        self.added: list[tuple[str, str]] = []

    def build(self, **options):
        if self.built is None:
            self.built = self.builder.build(**options)
        graph = deepcopy(self.built)
        for importer, imported in self.added:
            graph.add_import(
                importer=importer, imported=imported, line_number=1, line_contents="test"
            )
        return graph


@pytest.fixture(scope="module")
def graph():
    use_cases._register_built_in_contract_types()  # what `lint_imports` does first
    real = linter.GRAPH_BUILDER
    builder = _GraphWithImports(real)
    linter.configure(GRAPH_BUILDER=builder)
    yield builder
    linter.configure(GRAPH_BUILDER=real)


def broken_contracts(graph, *added: tuple[str, str]) -> set[str]:
    graph.added = list(added)
    report = use_cases.create_report(use_cases.read_user_options(PYPROJECT), cache_dir=None)
    assert not report.could_not_run and not report.invalid_contract_options
    checks = list(report.get_contracts_and_checks())
    assert len(checks) == 17
    return {contract.name for contract, check in checks if not check.kept}


def test_every_layering_contract_is_kept(graph):
    assert broken_contracts(graph) == set(), "run `lint-imports` to see the import chains"


LAYERS = "Layers: demo and console over lifecycle over actions over domains over tenancy and audit"
UPWARD = (
    "Domain apps, tenancy, audit and the project do not import the console, lifecycle, "
    "actions or demo"
)
LIFECYCLE = "lifecycle_app reaches the domains and the audit log only through their stores"


@pytest.mark.parametrize(
    ("importer", "imported", "broken"),
    [
        (
            "runs_app.store",
            "approvals_app.store",
            {
                "Runs do not import approvals (the cycle is broken in this direction)",
                "No domain store imports another domain's store (approvals build on runs)",
                "approvals_app.store is used by approvals_app and the layers above",
                "runs_app reaches other domains only from its store",
            },
        ),
        (
            "tenancy_app.views",
            "sessions_app.store",
            {
                LAYERS,
                "Tenancy and audit import no domain app",
                "sessions_app.store is used by sessions_app and the layers above",
            },
        ),
        (
            "audit_app.models",
            "effects_app.models",
            {LAYERS, "Tenancy and audit import no domain app"},
        ),
        (
            "sessions_app.views",
            "runs_app.models",
            {"sessions_app reaches other domains only from its store"},
        ),
        (
            # sessions_app may read runs (attach, append) but nothing more: no exemptions
            "sessions_app.store.content",
            "tasks_app.models",
            {"sessions_app reaches other domains only from its store"},
        ),
        (
            "sessions_app.views",
            "effects_app.models",
            {"sessions_app reaches other domains only from its store"},
        ),
        # The orchestrator may not touch another app's rows itself, only ask its store.
        ("lifecycle_app.deletion", "runs_app.models", {LIFECYCLE}),
        ("lifecycle_app.retention", "approvals_app.models", {LIFECYCLE}),
        ("lifecycle_app.content", "audit_app.models", {LIFECYCLE}),
        # ...and no domain reaches up to it.
        (
            "sessions_app.store",
            "lifecycle_app.deletion",  # which imports every store: their independence too
            {
                LAYERS,
                UPWARD,
                "No domain store imports another domain's store (approvals build on runs)",
            },
        ),
        ("runs_app.models", "console_app.views", {LAYERS, UPWARD}),
        (
            "stateroom.api",
            "actions_app.runs",  # which imports approvals_app: runs_app.api's chain counts too
            {
                LAYERS,
                UPWARD,
                "Runs do not import approvals (the cycle is broken in this direction)",
                "No domain store imports another domain's store (approvals build on runs)",
            },
        ),
        ("actions_app.runs", "console_app.views", {LAYERS}),
        (
            "stateroom_client.client",
            "django",
            {"The client package imports no Django or server module"},
        ),
        (
            "stateroom_client.agents.gate",
            "stateroom.errors",
            {"The client package imports no Django or server module"},
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contracts(graph, importer, imported, broken):
    assert broken_contracts(graph, (importer, imported)) == broken
