"""Interleaved timing and the result rows every benchmark returns."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Row", "Samples", "interleaved", "time_batch"]


@dataclass(frozen=True)
class Row:
    """One line of the results table.

    Attributes:
        key: The name in `results.json`.
        label: What the line measures, for the printed table.
        value: The measured figure.
        unit: How to read `value`: `"ratio"`, `"bytes"`, `"us"` (microseconds) or
            `"us/message"` (microseconds for each message more), among others.
        target: The bound `value` must not exceed, or None for a figure shown for context.
        spread: For a ratio, half the interquartile range of the per-round ratios: how much
            the rounds disagree (a wide spread means a busy machine; rerun when it is calm).

    """

    key: str
    label: str
    value: float
    unit: str
    target: float | None = None
    spread: float | None = None

    @property
    def ok(self) -> bool:
        """Whether the figure meets its target (a figure without a target always does)."""
        return self.target is None or self.value <= self.target


def time_batch(action: Callable[[], object], count: int) -> float:
    """CPU seconds taken by `count` calls of `action`."""
    start = time.process_time()
    for _ in range(count):
        action()
    return time.process_time() - start


@dataclass(frozen=True)
class Samples:
    """Seconds per repetition of each case, round by round."""

    seconds: dict[str, list[float]]

    def median(self, name: str) -> float:
        """The median seconds of one case."""
        return statistics.median(self.seconds[name])

    def ratio(self, name: str, baseline: str) -> float:
        """The ratio of the two cases' medians."""
        return self.median(name) / self.median(baseline)

    def spread(self, name: str, baseline: str) -> float:
        """Half the interquartile range of the ratios of the two cases within each round."""
        ratios = [a / b for a, b in zip(self.seconds[name], self.seconds[baseline], strict=True)]
        if len(ratios) < 2:
            return 0.0
        low, _, high = statistics.quantiles(ratios, n=4)
        return (high - low) / 2


def interleaved(cases: Mapping[str, Callable[[], float]], rounds: int, warmup: int = 1) -> Samples:
    """Run every case once per round, in rotation, for `rounds` rounds; keep each one's seconds.

    Each case times itself and returns seconds, so that its setup stays out of the figure.
    The order rotates from round to round, so no case always runs first or right after a
    particular other one; a collection runs before each repetition so that no case pays for
    the garbage of the one before. The first `warmup` rounds are not kept.
    """
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(warmup + rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            seconds = cases[name]()
            if round_index >= warmup:
                samples[name].append(seconds)
    return Samples(samples)
