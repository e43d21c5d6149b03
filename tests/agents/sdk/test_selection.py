"""The SDK's own tests run for the installed SDK: the tree of the right release is collected."""

from __future__ import annotations

from .conftest import CHOSEN, FETCHED, INSTALLED, collect_ignore


def test_the_newest_fetched_release_not_newer_than_the_installed_sdk_is_run():
    assert CHOSEN is not None, (
        f"no SDK tests fetched for openai-agents {INSTALLED}: run"
        " `python scripts/fetch_sdk_tests.py` (`make install` does)"
    )
    chosen = next(release for release, name in FETCHED.items() if name == CHOSEN)
    assert chosen <= INSTALLED
    assert not [r for r in FETCHED if chosen < r <= INSTALLED]
    assert sorted(collect_ignore) == sorted(n for n in FETCHED.values() if n != CHOSEN)
