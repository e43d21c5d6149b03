"""The SDK's own tests run for the installed SDK: the tree of the right release is collected."""

from __future__ import annotations

from .conftest import CHOSEN, INSTALLED, VENDORED, collect_ignore


def test_the_newest_vendored_release_not_newer_than_the_installed_sdk_is_run():
    assert CHOSEN is not None, f"no SDK tests vendored for openai-agents {INSTALLED}"
    chosen = next(release for release, name in VENDORED.items() if name == CHOSEN)
    assert chosen <= INSTALLED
    assert not [r for r in VENDORED if chosen < r <= INSTALLED]
    assert sorted(collect_ignore) == sorted(n for n in VENDORED.values() if n != CHOSEN)
