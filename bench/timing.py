"""Timing one operation many times: ops/s, p50, p95."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Sample:
    """Latencies (seconds) of `count` sequential calls that took `elapsed` in all."""

    durations: list[float] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def count(self) -> int:
        return len(self.durations)

    @property
    def ops_per_s(self) -> float:
        return self.count / self.elapsed if self.elapsed else 0.0

    def percentile(self, p: float) -> float:
        if not self.durations:
            return 0.0
        ordered = sorted(self.durations)
        # Nearest-rank percentile: a p95 that is a latency some call really had.
        rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
        return ordered[rank - 1]

    @property
    def p50_ms(self) -> float:
        return self.percentile(50) * 1000

    @property
    def p95_ms(self) -> float:
        return self.percentile(95) * 1000

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.durations) * 1000 if self.durations else 0.0

    def merge(self, other: Sample) -> Sample:
        return Sample(self.durations + other.durations, self.elapsed + other.elapsed)

    def summary(self) -> dict:
        return {
            "count": self.count,
            "ops_per_s": round(self.ops_per_s, 1),
            "p50_ms": round(self.p50_ms, 3),
            "p95_ms": round(self.p95_ms, 3),
            "mean_ms": round(self.mean_ms, 3),
        }


def measure(
    op: Callable[[int], object],
    *,
    iterations: int,
    warmup: int = 20,
    max_seconds: float = 60.0,
) -> Sample:
    """Call `op(i)` `warmup` times untimed, then up to `iterations` times timed.

    Stops early after `max_seconds` so a slow path cannot stall the run; the
    count in the result says how many calls were timed.
    """
    for i in range(warmup):
        op(-1 - i)
    sample = Sample()
    clock = time.perf_counter
    start = clock()
    for i in range(iterations):
        t0 = clock()
        op(i)
        sample.durations.append(clock() - t0)
        if clock() - start > max_seconds:
            break
    sample.elapsed = clock() - start
    return sample


def measure_interleaved(
    sides: dict[str, Callable[[int], object]],
    *,
    iterations: int,
    warmup: int = 10,
    max_seconds: float = 120.0,
) -> dict[str, Sample]:
    """Each side's `op(i)`, call by call in turn (the first side rotating), so that
    every side meets the same machine: a disk flush or a busy neighbour lands on
    all of them alike, not on whichever ran in that second.

    Each side's `elapsed` is the sum of its own calls. Stops early after
    `max_seconds` in all.
    """
    names = list(sides)
    for i in range(warmup):
        for name in names:
            sides[name](-1 - i)
    samples = {name: Sample() for name in names}
    clock = time.perf_counter
    start = clock()
    for i in range(iterations):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            t0 = clock()
            sides[name](i)
            samples[name].durations.append(clock() - t0)
        if clock() - start > max_seconds:
            break
    for sample in samples.values():
        sample.elapsed = math.fsum(sample.durations)
    return samples
