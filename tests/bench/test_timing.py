"""bench.timing.measure_interleaved: every side meets the same machine, call by call."""

import pytest

from bench.timing import measure_interleaved


def test_sides_take_turns_call_by_call_and_count_only_their_own_time():
    calls: list[tuple[str, int]] = []

    def side(name: str):
        return lambda i: calls.append((name, i))

    samples = measure_interleaved(
        {"a": side("a"), "b": side("b"), "c": side("c")}, iterations=4, warmup=1
    )
    assert calls[:3] == [("a", -1), ("b", -1), ("c", -1)]  # the warm-up, untimed
    assert calls[3:] == [
        ("a", 0), ("b", 0), ("c", 0),
        ("b", 1), ("c", 1), ("a", 1),
        ("c", 2), ("a", 2), ("b", 2),
        ("a", 3), ("b", 3), ("c", 3),
    ]  # fmt: skip
    for sample in samples.values():
        assert sample.count == 4
        assert sample.elapsed == pytest.approx(sum(sample.durations)) and sample.elapsed > 0
