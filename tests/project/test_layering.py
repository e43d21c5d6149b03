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


def test_no_contract_ignores_an_import():
    """The floors hold without exceptions: no `ignore_imports`, no `:` siblings."""
    options = use_cases.read_user_options(PYPROJECT)
    for contract in options.contracts_options:
        assert "ignore_imports" not in contract, contract["name"]
        for layer in contract.get("layers", ()):
            assert ":" not in layer, (contract["name"], layer)


LAYERS = "Layers: each floor imports only the floors below it"
UPWARD = (
    "Domain apps, tenancy, audit and the project do not import the console, lifecycle, "
    "actions or demo"
)
LIFECYCLE = "lifecycle_app reaches the domains and the audit log only through their stores"
RUNS_NOT_APPROVALS = "Runs do not import approvals (the cycle is broken in this direction)"
STORES = "No domain store imports another domain's store (approvals build on runs)"
TENANCY_AUDIT = "Tenancy and audit import no domain app"


def rows(app: str) -> str:
    if app == "runs_app":
        return "runs_app rows and claims are read by other domains only from their stores"
    return f"{app} rows are read by other domains only from their stores"


@pytest.mark.parametrize(
    ("importer", "imported", "broken"),
    [
        (
            "runs_app.store",
            "approvals_app.store",
            {
                LAYERS,
                RUNS_NOT_APPROVALS,
                "approvals_app.store is used by approvals_app and the layers above",
            },
        ),
        (
            "tenancy_app.api",
            "sessions_app.store",
            {
                LAYERS,
                TENANCY_AUDIT,
                "sessions_app.store is used by sessions_app and the layers above",
            },
        ),
        ("audit_app.models", "effects_app.models", {LAYERS, TENANCY_AUDIT, rows("effects_app")}),
        # The floors below stateroom's helpers, tenancy, audit: no way back up, no circle.
        ("stateroom.store", "tenancy_app.models", {LAYERS}),
        ("tenancy_app.middleware", "audit_app.services", {LAYERS}),
        # Independent siblings (`|`): neither imports the other.
        ("audit_app.services", "outbox_app.relay", {LAYERS}),
        ("outbox_app.relay", "audit_app.services", {LAYERS}),
        ("sessions_app.models", "tasks_app.models", {LAYERS, rows("tasks_app")}),
        # A domain below runs asks them through stateroom.ports: the claim rule is runs_app's.
        ("sessions_app.store.appends", "runs_app.models", {LAYERS, rows("runs_app")}),
        ("sessions_app.store.appends", "runs_app.claims", {LAYERS, rows("runs_app")}),
        ("sessions_app.api", "runs_app.models", {LAYERS, rows("runs_app")}),
        ("sessions_app.store.content", "tasks_app.models", {LAYERS, rows("tasks_app")}),
        ("sessions_app.api", "effects_app.models", {LAYERS, rows("effects_app")}),
        ("tasks_app.store", "approvals_app.models", {LAYERS, rows("approvals_app")}),
        ("approvals_app.store", "effects_app.models", {LAYERS, rows("effects_app")}),
        # Going down, another domain's rows are read from the reader's store only.
        ("runs_app.api", "sessions_app.models", {rows("sessions_app")}),
        ("effects_app.api", "runs_app.models", {rows("runs_app")}),
        # The orchestrator may not touch another app's rows itself, only ask its store.
        ("lifecycle_app.deletion", "runs_app.models", {LIFECYCLE, rows("runs_app")}),
        ("lifecycle_app.retention", "approvals_app.models", {LIFECYCLE, rows("approvals_app")}),
        ("lifecycle_app.content", "audit_app.models", {LIFECYCLE}),
        # ...and no domain reaches up to it.
        (
            "sessions_app.store",
            "lifecycle_app.deletion",  # which imports every store: their independence too
            {LAYERS, UPWARD, STORES},
        ),
        ("runs_app.models", "console_app.views", {LAYERS, UPWARD}),
        (
            "stateroom.api",
            "actions_app.runs",  # which imports approvals_app: runs_app.api's chain counts too
            {LAYERS, UPWARD, RUNS_NOT_APPROVALS},
        ),
        ("actions_app.runs", "console_app.views", {LAYERS}),
        ("console_app.views", "demo_app.scenarios", {LAYERS}),
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
