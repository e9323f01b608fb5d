"""Running totals of what a guard saw and said, and whether its reminders worked."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from typing import TypedDict

from ._counter import Count
from ._metrics import Metrics, Tally

__all__ = ["Stats", "StatsSnapshot"]


class StatsSnapshot(TypedDict):
    """The totals `Stats.snapshot()` returns.

    Attributes:
        calls: Tracked tool calls counted.
        reminders: Reminders the model saw, by tool and level, e.g.
            `{"grep": {"gentle": 2, "detailed": 1}}`.
        undelivered: Reminders that were due but reached no model, by tool and level: every
            one in `mode="observe"`, and those due where no node delivers them.
        detectors: Reminders by detector, delivered or not:
            `{"repeat": {"delivered": 3, "undelivered": 0}}`.
        escalations: Loops the guard stopped (or, in observe mode, would have), by tool and
            detector.
        longest_streak: The longest run of identical calls seen, as `[tool, length]`; None
            before any call is repeated.
        followed: Reminders the model saw that it then followed up: with another tracked
            call, or by answering without one.
        recovered: Of those, how many times it changed course: a different call, or an answer.
        recovery_rate: `recovered / followed`, or None before any.
    """

    calls: int
    reminders: dict[str, dict[str, int]]
    undelivered: dict[str, dict[str, int]]
    detectors: dict[str, dict[str, int]]
    escalations: dict[str, dict[str, int]]
    longest_streak: list[str | int] | None
    followed: int
    recovered: int
    recovery_rate: float | None


def _nested(counts: Iterable[tuple[tuple[str, str], int]]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for (outer, inner), number in sorted(counts):
        slot = found.setdefault(outer, {})
        slot[inner] = slot.get(inner, 0) + number
    return found


class Stats:
    """What a guard counted, since it was built. Safe to share between threads.

    `metrics`, when given, records every count as OpenTelemetry metrics too (see
    `repeat_reminder_langchain._metrics`): the calls by reading the tally when collected, the
    rest as it is found.

    Example:
        >>> Stats().snapshot()["recovery_rate"] is None
        True
    """

    def __init__(self, metrics: Metrics | None = None) -> None:
        self.metrics = metrics
        self._lock = threading.Lock()
        self._tally = Tally()
        # (detector, tool, level, delivered)
        self._reminders: Counter[tuple[str, str, str, bool]] = Counter()
        self._escalations: Counter[tuple[str, str]] = Counter()
        self._longest: tuple[str, int] | None = None
        self._length = 1  # of the longest run: a run of one is no streak
        self._followed = 0
        self._recovered = 0
        if metrics is not None:
            metrics.follow(self, self._tally)

    def add(self, count: Count, *, delivered: bool = False) -> None:
        """Add what one turn's count found; `delivered`: whether its reminders reached the model."""
        longest = count.longest
        with self._lock:
            self._tally.calls += count.calls
            if longest is not None and longest[1] > self._length:
                self._longest, self._length = longest, longest[1]
            if not (count.followups or count.reminders or count.escalation is not None):
                return  # most turns
            self._add_found(count, delivered)
        if self.metrics is not None:
            self.metrics.record(count, delivered)

    def _add_found(self, count: Count, delivered: bool) -> None:
        followups = count.followups
        self._followed += len(followups)
        self._recovered += sum(followups)
        for reminder in count.reminders:
            sent = delivered and reminder.reminds
            self._reminders[reminder.detector, reminder.tool, reminder.level, sent] += 1
        if count.escalation is not None:
            self._escalations[count.escalation.tool, count.escalation.detector] += 1

    def snapshot(self) -> StatsSnapshot:
        """The totals so far, as plain data."""
        with self._lock:
            detectors: dict[str, dict[str, int]] = {}
            for (detector, _, _, delivered), number in self._reminders.items():
                slot = detectors.setdefault(detector, {"delivered": 0, "undelivered": 0})
                slot["delivered" if delivered else "undelivered"] += number
            return {
                "calls": self._tally.calls,
                "reminders": _nested(
                    ((tool, level), n) for (_, tool, level, d), n in self._reminders.items() if d
                ),
                "undelivered": _nested(
                    ((tool, level), n)
                    for (_, tool, level, d), n in self._reminders.items()
                    if not d
                ),
                "detectors": dict(sorted(detectors.items())),
                "escalations": _nested(self._escalations.items()),
                "longest_streak": list(self._longest) if self._longest else None,
                "followed": self._followed,
                "recovered": self._recovered,
                "recovery_rate": self._recovered / self._followed if self._followed else None,
            }
