import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def fresh_counts():
    cache.clear()
    yield
    cache.clear()


def test_rate_limiting_is_off_unless_configured(api_a, settings):
    assert settings.STATEROOM_API_RATE is None
    assert [api_a.get("/api/v1/me").status_code for _ in range(5)] == [200] * 5


def test_configured_rate_answers_429_per_token(api_a, api_b, settings):
    settings.STATEROOM_API_RATE = "2/minute"
    assert [api_a.get("/api/v1/me").status_code for _ in range(2)] == [200, 200]
    response = api_a.get("/api/v1/me")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limited"
    assert int(response["Retry-After"]) > 0
    # Another token has its own budget.
    assert api_b.get("/api/v1/me").status_code == 200


def test_throttle_costs_no_cache_call_when_off_and_one_read_and_write_when_on(
    api_a, settings, monkeypatch
):
    calls = []
    for name in ("get", "set", "add", "incr", "get_many", "set_many"):
        real = getattr(cache, name)
        monkeypatch.setattr(
            cache,
            name,
            lambda *a, _real=real, _name=name, **kw: calls.append(_name) or _real(*a, **kw),
        )
    assert api_a.get("/api/v1/me").status_code == 200
    assert calls == []
    settings.STATEROOM_API_RATE = "100/minute"
    assert api_a.get("/api/v1/me").status_code == 200
    assert calls == ["get", "set"]
