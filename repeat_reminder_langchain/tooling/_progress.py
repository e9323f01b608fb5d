"""A progress bar on standard error, for an audit of a large input at an interactive terminal."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["LARGE", "MANY", "ProgressBar"]

LARGE = 16 << 20
"""Inputs from this many bytes on get a progress bar (smaller ones are read in a moment)."""

MANY = 1_000
"""Checkpointers from this many threads on get a progress bar."""


class ProgressBar:
    """One line on `stream`, redrawn at most every `interval` seconds, cleared at the end.

    It draws nothing unless `stream` is a terminal and `total` is at least `LARGE` bytes (or
    `MANY` threads), so that a log file, a pipe or a CI run never gets control characters.

    Args:
        stream: Where to draw (standard error).
        total: The input's size in bytes; 0 when unknown (standard input). With `threads`,
            the number of threads to read.
        threads: Count threads of a checkpointer rather than bytes.
        interval: The least time between two redraws, in seconds.
        clock: The time source, in seconds.
    """

    def __init__(
        self,
        stream: TextIO,
        total: int,
        *,
        threads: bool = False,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.total = total
        self.threads = threads
        self.enabled = total >= (MANY if threads else LARGE) and stream.isatty()
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self._drawn = 0

    def update(self, done: int, conversations: int) -> None:
        """Redraw, if it is time: the share of bytes (or threads) read, the conversations so far."""
        if not self.enabled:
            return
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            return
        self._last = now
        share = min(done / self.total, 1.0)
        filled = int(share * 30)
        if self.threads:
            amount = f"{done:,} of {self.total:,} threads · {conversations:,} audited"
        else:
            amount = (
                f"{done / 1e6:,.0f} of {self.total / 1e6:,.0f} MB · {conversations:,} "
                f"conversation{'' if conversations == 1 else 's'}"
            )
        line = f"\raudit [{'#' * filled}{'.' * (30 - filled)}] {share:4.0%} · {amount}"
        self._drawn = len(line) - 1
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        """Clear the line, so that what is printed next starts on a clean one."""
        if self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0
