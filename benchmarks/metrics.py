"""Per turn: what OpenTelemetry metrics add to the guard.

Three ways, each with metrics off (`meter_provider=False`), on the global provider with no
SDK set up (OpenTelemetry's proxy: what a process gets that has the API installed but does
not use it), and on an SDK `MeterProvider` with an in-memory reader, all in the same rounds so
that each round's figures are taken side by side:

* the middleware's counting hook (`wrap_model_call`), timed as `hooks.py` times it (`TURNS`
  new turns of a `SHORT` conversation through a fresh guard): the whole hook, as a ratio to
  metrics off;
* `Stats.add` of a turn's count, where the metrics are recorded: the difference, which the
  whole hook's noise hides;
* for scale, one SDK `Counter.add`: what recording each turn's calls on a synchronous
  counter would cost (the SDK observes the count the guard's stats keep instead).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from repeat_reminder_langchain import RepeatToolReminderMiddleware
from repeat_reminder_langchain._counter import Count
from repeat_reminder_langchain._metrics import metrics_for
from repeat_reminder_langchain._stats import Stats

from .hooks import COUNTING, SHORT, TURNS, _median, _record, _spread
from .measure import Row, interleaved

__all__ = ["run"]


def _guard(meter_provider: Any) -> Callable[[], float]:
    """Seconds of the counting hook over `TURNS` turns of a fresh guard on `meter_provider`."""

    def timed() -> float:
        guard = RepeatToolReminderMiddleware(meter_provider=meter_provider)
        return _record(guard, SHORT, stored=False, timed=COUNTING)[1]

    return timed


def _stats_add(meter_provider: Any) -> Callable[[], float]:
    """Seconds of `TURNS` calls of `Stats.add` with a turn's count of one call."""
    stats = Stats(metrics_for(meter_provider, "benchmark"))
    count = Count(None, calls=1, longest=("lookup", 1))

    def timed() -> float:
        start = time.perf_counter()
        for _ in range(TURNS):
            stats.add(count)
        return time.perf_counter() - start

    return timed


def _counter_add(provider: MeterProvider) -> Callable[[], float]:
    counter = provider.get_meter("benchmark").create_counter("benchmark.calls", unit="{call}")
    attributes = {"repeat_tool_reminder.instance": "RepeatToolReminderMiddleware"}

    def timed() -> float:
        start = time.perf_counter()
        for _ in range(TURNS):
            counter.add(1, attributes)
        return time.perf_counter() - start

    return timed


def run(rounds: int) -> list[Row]:
    """The hook's cost per turn with metrics off, and what each provider adds to a turn."""
    sdk = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    providers = {"off": False, "global_no_sdk": metrics.get_meter_provider(), "sdk": sdk}
    cases: dict[str, Callable[[], float]] = {}
    for name, provider in providers.items():
        cases[f"hook|{name}"] = _guard(provider)
        cases[f"stats|{name}"] = _stats_add(provider)
    cases["counter.add"] = _counter_add(sdk)
    samples = interleaved(cases, rounds)
    per_turn = {
        name: [s / TURNS * 1e6 for s in seconds] for name, seconds in samples.seconds.items()
    }
    rows = [
        Row(
            f"metrics.off.{COUNTING}",
            f"guard: {COUNTING} per turn, metrics off, {SHORT} msgs",
            _median(per_turn["hook|off"]),
            "us",
        )
    ]
    for name, label in (("global_no_sdk", "the global provider, no SDK"), ("sdk", "an SDK")):
        ratios = [
            a / b for a, b in zip(per_turn[f"hook|{name}"], per_turn["hook|off"], strict=True)
        ]
        rows.append(
            Row(
                f"metrics.{name}.{COUNTING}",
                f"guard: {COUNTING} per turn, metrics on {label} / off",
                _median(ratios),
                "ratio",
                None,
                _spread(ratios),
            )
        )
        added = [
            a - b for a, b in zip(per_turn[f"stats|{name}"], per_turn["stats|off"], strict=True)
        ]
        rows.append(
            Row(
                f"metrics.{name}.record",
                f"guard: what recording a turn on {label} adds to it (Stats.add)",
                _median(added),
                "us",
            )
        )
    rows.append(
        Row(
            "metrics.sdk.counter_add",
            "for scale: one SDK Counter.add (a counter recorded on every turn would cost this)",
            _median(per_turn["counter.add"]),
            "us",
        )
    )
    return rows
