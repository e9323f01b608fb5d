"""Running totals of what a guard saw and said, and whether its reminders worked."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from .chain import Tally

__all__ = ["Stats"]


class Stats:
    """What a guard counted, since it was built. Safe to share between threads.

    Attributes are read through `snapshot()`, a plain dict:

    * `calls`: tracked tool calls counted;
    * `reminders`: reminders by tool and level, e.g. `{"grep": {"gentle": 2, "detailed": 1}}`
      (in `mode="observe"`, the reminders that would have been sent);
    * `longest_streak`: the longest run of identical calls seen, as `[tool, length]`;
    * `followed`: reminders after which the model made another tracked call;
    * `recovered`: of those, how many times that next call was a different one;
    * `recovery_rate`: `recovered / followed`, or None before any.

    Example:
        >>> Stats().snapshot()["recovery_rate"] is None
        True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._reminders: Counter[tuple[str, str]] = Counter()
        self._longest: tuple[str, int] | None = None
        self._followed = 0
        self._recovered = 0

    def add(self, tally: Tally) -> None:
        """Add what one count found."""
        with self._lock:
            self._calls += tally.calls
            if tally.longest and (self._longest is None or tally.longest[1] > self._longest[1]):
                self._longest = tally.longest
            if tally.reminders:
                self._reminders.update((r.tool, r.level) for r in tally.reminders)
            if tally.followups:
                self._followed += len(tally.followups)
                self._recovered += sum(tally.followups)

    def snapshot(self) -> dict[str, Any]:
        """The totals so far, as plain data."""
        with self._lock:
            reminders: dict[str, dict[str, int]] = {}
            for (tool, level), number in sorted(self._reminders.items()):
                reminders.setdefault(tool, {})[level] = number
            return {
                "calls": self._calls,
                "reminders": reminders,
                "longest_streak": list(self._longest) if self._longest else None,
                "followed": self._followed,
                "recovered": self._recovered,
                "recovery_rate": self._recovered / self._followed if self._followed else None,
            }
