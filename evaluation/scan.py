"""Finding loops in a conversation without the detectors: the candidates the labels judge.

A detector's recall can only be measured against loops found some other way, so this scan
reads every call of a conversation in order, whatever came between (user messages, other
tools, bookkeeping calls: nothing resets it), and reports three shapes:

* `same_call`: one call (tool and canonical arguments, the guard's key) returning one result
  (the same text) three times or more, anywhere in the conversation. One loop per call and
  result; its calls are every run of that call with that result.
* `same_failure`: one tool failing with one error text three times or more, whatever the
  arguments. A failure is a result marked `status="error"` or one `ERROR_PATTERN` matches
  (the evaluation's pattern for τ-bench's `Error: ` and a shell's non-zero return code with
  output). One loop per tool and error text.
* `cycle`: two different calls alternating, `A B A B ...`, each returning the same result
  every time, for at least two full cycles (four consecutive calls). One loop per maximal
  alternation.

A loop is a candidate, not a verdict: the labels say of each whether it is a loop (`loop`) or
not (`not`: the same output after a different fix, a write whose output is constant, ...).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from repeat_reminder_langchain import canonicalize
from repeat_reminder_langchain.canonical import result_text
from repeat_reminder_langchain.replay import Replayed

from .run import ERROR_PATTERN

__all__ = ["MIN_CYCLE", "MIN_REPEATS", "SHAPES", "Loop", "Shape", "scan"]

Shape = Literal["same_call", "same_failure", "cycle"]
SHAPES: tuple[Shape, ...] = ("same_call", "same_failure", "cycle")

MIN_REPEATS = 3
"""How many times a call (or a failure) must come back with the same result to be a candidate."""

MIN_CYCLE = 4
"""Two full cycles of two alternating calls."""


@dataclass(frozen=True, slots=True)
class Loop:
    """One candidate loop in one conversation.

    Attributes:
        shape: Which rule found it.
        calls: The positions of its calls among the conversation's calls, from 0 (the
            positions a firing's `call` is given in).
        tool: The tool (for a cycle, the two tools joined by `+`).
    """

    shape: Shape
    calls: tuple[int, ...]
    tool: str


def scan(calls: Sequence[Replayed], error_pattern: str = ERROR_PATTERN) -> list[Loop]:
    """Every candidate loop among one conversation's calls, in order of their first call."""
    failure = re.compile(error_pattern)
    keys = [(item.call.tool, canonicalize(item.call.args)) for item in calls]
    results = [result_text(item.call.result) for item in calls]
    same: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    failing: dict[tuple[str, str], list[int]] = defaultdict(list)
    for position, item in enumerate(calls):
        tool, key = keys[position]
        same[tool, key, results[position]].append(position)
        if item.call.failed or failure.search(results[position]) is not None:
            failing[tool, results[position]].append(position)
    found = [
        Loop("same_call", tuple(positions), tool)
        for (tool, _, _), positions in same.items()
        if len(positions) >= MIN_REPEATS
    ]
    found += [
        Loop("same_failure", tuple(positions), tool)
        for (tool, _), positions in failing.items()
        if len(positions) >= MIN_REPEATS
    ]
    found += _cycles(keys, results)
    return sorted(found, key=lambda loop: (loop.calls[0], SHAPES.index(loop.shape)))


def _cycles(keys: Sequence[tuple[str, str]], results: Sequence[str]) -> list[Loop]:
    def repeats(position: int) -> bool:  # the call and result of two calls back, again
        back = position - 2
        return keys[position] == keys[back] and results[position] == results[back]

    found = []
    start = 0
    while start + MIN_CYCLE <= len(keys):
        if keys[start] == keys[start + 1]:
            start += 1
            continue
        end = start + 2
        while end < len(keys) and repeats(end):
            end += 1
        if end - start >= MIN_CYCLE:
            tools = f"{keys[start][0]}+{keys[start + 1][0]}"
            found.append(Loop("cycle", tuple(range(start, end)), tools))
            start = end - 1  # the last call may open the next alternation
        else:
            start += 1
    return found
