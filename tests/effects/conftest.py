import pytest

from effects_app.store import EffectStore
from runs_app.models import Run
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant


@pytest.fixture
def make_run(db):
    def make(tenant, run_id: str = "R-101", **kw) -> Run:
        with in_tenant(tenant):
            return RunStateStore(tenant, Actor.system("runtime")).create(run_id=run_id, **kw)

    return make


@pytest.fixture
def effect_store():
    def make(tenant, actor: Actor | None = None) -> EffectStore:
        return EffectStore(tenant, actor or Actor.system("runtime"))

    return make


@pytest.fixture
def make_effect(effect_store):
    def make(tenant, run_id: str = "R-101", key: str = "T-7:n1:send", **kw):
        kw.setdefault("tool_name", "send_email")
        kw.setdefault("request", {"to": "ops@example.com", "subject": "patched"})
        with in_tenant(tenant):
            effect, _ = effect_store(tenant).record(run_id=run_id, idempotency_key=key, **kw)
        return effect

    return make
