"""LangGraph's own checkpointer conformance suite against StateroomSaver on the live server.

`langgraph-checkpoint-conformance` (pinned in the dev extra) runs its spec of
every base capability (put, put_writes, get_tuple, list, delete_thread) and
every extended one (delete_for_runs, copy_thread, prune) through the saver's
async methods, over HTTP, against the suite's live server.
"""

from __future__ import annotations

import asyncio

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)

from stateroom_client.langgraph import StateroomSaver


def test_every_base_and_extended_capability_passes(server):
    @checkpointer_test(name="StateroomSaver")
    async def stateroom_saver():
        saver = StateroomSaver.from_url(server.url, server.token)
        yield saver
        await saver.aclose()

    report = asyncio.run(validate(stateroom_saver))

    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert failures == {}
    expected = {cap.value for cap in BASE_CAPABILITIES | EXTENDED_CAPABILITIES}
    assert {name for name, r in report.results.items() if r.detected and r.passed} == expected
    assert all(r.tests_passed > 0 and r.tests_failed == 0 for r in report.results.values())
    assert report.conformance_level() == "FULL"
