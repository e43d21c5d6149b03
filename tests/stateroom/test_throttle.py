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


def test_a_cache_that_does_not_answer_lets_requests_through_and_says_so(
    api_a, settings, monkeypatch, caplog
):
    from django.core.cache.backends.redis import RedisCache

    from tenancy_app.auth import TokenRateThrottle
    from tests.infra import free_port

    down = RedisCache(
        f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
        {"OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}},
    )
    monkeypatch.setattr(TokenRateThrottle, "cache", down)
    monkeypatch.setattr(TokenRateThrottle, "_last_warning", 0.0)
    settings.STATEROOM_API_RATE = "1/minute"
    with caplog.at_level("WARNING", logger="tenancy_app.auth"):
        assert [api_a.get("/api/v1/me").status_code for _ in range(3)] == [200] * 3
    warnings = [r.getMessage() for r in caplog.records if r.name == "tenancy_app.auth"]
    assert len(warnings) == 1  # said once, not per request
    assert warnings[0].startswith("rate limiting skipped: the cache does not answer")


@pytest.mark.celery_worker
def test_with_a_shared_redis_cache_every_process_counts_the_same_budget(
    api_a, settings, monkeypatch
):
    """Two cache clients (two web processes) see one count for a token."""
    from django.core.cache.backends.redis import RedisCache

    from tenancy_app.auth import TokenRateThrottle
    from tests.infra import redis_server

    settings.STATEROOM_API_RATE = "2/minute"
    with redis_server() as (port, _server):
        url = f"redis://127.0.0.1:{port}/0"
        worker_1, worker_2 = RedisCache(url, {}), RedisCache(url, {})
        monkeypatch.setattr(TokenRateThrottle, "cache", worker_1)
        assert api_a.get("/api/v1/me").status_code == 200
        monkeypatch.setattr(TokenRateThrottle, "cache", worker_2)
        assert api_a.get("/api/v1/me").status_code == 200
        monkeypatch.setattr(TokenRateThrottle, "cache", worker_1)
        assert api_a.get("/api/v1/me").status_code == 429
