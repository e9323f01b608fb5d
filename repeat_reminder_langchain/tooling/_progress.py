"""What a long command is doing, on one line of standard error at an interactive terminal.

The audit of a large input draws a progress bar there; the lab, the model call each run is at.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TextIO

__all__ = ["LARGE", "MANY", "ProgressBar", "StatusLine", "model_calls"]

LARGE = 16 << 20
"""Inputs from this many bytes on get a progress bar (smaller ones are read in a moment)."""

MANY = 1_000
"""Checkpointers from this many threads on get a progress bar."""


class StatusLine:
    """One line on `stream`, redrawn in place and cleared, drawn only at a terminal.

    A log file, a pipe or a CI run never gets control characters: nothing is drawn unless
    `stream` is a terminal and `enabled` (False under `--quiet`).
    """

    def __init__(self, stream: TextIO, *, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled and stream.isatty()
        self._drawn = 0

    def draw(self, text: str) -> None:
        """Show `text` over what the line showed (padded to cover a longer one)."""
        if self.enabled:
            self.stream.write("\r" + text.ljust(self._drawn))
            self.stream.flush()
            self._drawn = max(self._drawn, len(text))

    def clear(self) -> None:
        """Clear the line, so that what is printed next starts on a clean one."""
        if self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0

    @contextmanager
    def showing(self, text: str) -> Iterator[None]:
        """`text` on the line while the block runs, cleared however it ends.

        Shown only while the slow part runs, so that what else is written meanwhile (a log
        line between two model calls, the lab's line per run, its table on a failure) never
        lands on the end of it.
        """
        self.draw(text)
        try:
            yield
        finally:
            self.clear()


def model_calls(
    line: StatusLine, run: str, most: int
) -> Callable[[int], AbstractContextManager[None]]:
    """A lab run's `watch`: `run` and the model call it is at, on `line` while the call is out."""
    return lambda call: line.showing(f"{run}: model call {call} of at most {most}")


class ProgressBar:
    """A bar on a `StatusLine`, redrawn at most every `interval` seconds, cleared at the end.

    It draws nothing unless `stream` is a terminal and `total` is at least `LARGE` bytes (or
    `MANY` threads): a smaller input is read in a moment.

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
        self._line = StatusLine(stream, enabled=total >= (MANY if threads else LARGE))
        self.enabled = self._line.enabled
        self._interval = interval
        self._clock = clock
        self._last: float | None = None

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
        self._line.draw(f"audit [{'#' * filled}{'.' * (30 - filled)}] {share:4.0%} · {amount}")

    def close(self) -> None:
        """Clear the line, so that what is printed next starts on a clean one."""
        self._line.clear()
