"""The SDK's own tests run for the installed SDK: the tree of the right release is collected."""

from __future__ import annotations

from pathlib import Path

from .conftest import CHOSEN, FETCHED, FETCHED_ROOT, INSTALLED


def test_the_newest_fetched_release_not_newer_than_the_installed_sdk_is_run():
    assert CHOSEN is not None, (
        f"no SDK tests fetched for openai-agents {INSTALLED} in {FETCHED_ROOT}: run"
        " `python scripts/fetch_sdk_tests.py` (`make install` does)"
    )
    chosen = next(release for release, tree in FETCHED.items() if tree == CHOSEN)
    assert chosen <= INSTALLED
    assert not [r for r in FETCHED if chosen < r <= INSTALLED]


def test_no_other_release_is_collected(request):
    fetched = [i for i in request.session.items if FETCHED_ROOT in Path(str(i.path)).parents]
    assert [i.nodeid for i in fetched if CHOSEN not in Path(str(i.path)).parents] == []
