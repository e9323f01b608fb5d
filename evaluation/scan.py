"""Finding loops in a conversation without the detectors: the candidates the labels judge.

A detector's recall can only be measured against loops found some other way, so this scan
reads every call of a conversation in order, whatever came between (user messages, other
tools, bookkeeping calls: nothing resets it), and reports four shapes:

* `same_call`: one call (tool and canonical arguments, the guard's key) returning one result
  (the same text) three times or more, anywhere in the conversation. One loop per call and
  result; its calls are every run of that call with that result.
* `same_failure`: one tool failing with one error text three times or more, whatever the
  arguments. A failure is a result marked `status="error"` or one `ERROR_PATTERN` matches
  (the evaluation's pattern for τ-bench's `Error: ` and a shell's non-zero return code with
  output). One loop per tool and error text.
* `cycle`: a block of two, three or four consecutive calls (`PERIODS`), at least two of them
  different calls (tool and canonical arguments), repeated call for call, each call returning
  the same result every time the block comes back, for at least two full blocks (`A B A B`,
  `A B C A B C`, ...). One loop per maximal run, at its shortest period: a block that is itself
  a shorter block twice (`A B A B` as a block of four) is that shorter block's cycle. A period
  of two gives exactly the alternations `A B A B ...` of four calls or more.
* `same_output`: one tool returning one result text three times or more from calls with at
  least two different argument sets, anywhere in the conversation. The text must say
  something: at least `MIN_OUTPUT` characters once stripped of surrounding whitespace, which
  leaves out an empty output (mini-swe-agent's `<returncode>0</returncode>` with an empty
  `<output>` is 45 characters) and an empty list (`[]`); a longer acknowledgement (git's
  `Updated 1 path from the index`) is still a candidate, for the labels to judge. A failure's
  text is left to `same_failure`. One loop per tool and result text; its calls are every call
  of that tool that returned it, whatever their arguments.

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
from repeat_reminder_langchain.replay import Replayed

from .run import ERROR_PATTERN

__all__ = [
    "MIN_CYCLES",
    "MIN_OUTPUT",
    "MIN_REPEATS",
    "PERIODS",
    "SHAPES",
    "Loop",
    "Shape",
    "scan",
]

Shape = Literal["same_call", "same_failure", "cycle", "same_output"]
SHAPES: tuple[Shape, ...] = ("same_call", "same_failure", "cycle", "same_output")

MIN_REPEATS = 3
"""How many times a call (or a failure, or an output) must come back to be a candidate."""

PERIODS = (2, 3, 4)
"""How many calls a cycle's block may hold."""

MIN_CYCLES = 2
"""How many full blocks a cycle must run: two, four consecutive calls for a block of two."""

MIN_OUTPUT = 50
"""The fewest characters (stripped) of a result text that `same_output` counts."""


@dataclass(frozen=True, slots=True)
class Loop:
    """One candidate loop in one conversation.

    Attributes:
        shape: Which rule found it.
        calls: The positions of its calls among the conversation's calls, from 0 (the
            positions a firing's `call` is given in).
        tool: The tool (for a cycle, the tools of its block in order, joined by `+`).
    """

    shape: Shape
    calls: tuple[int, ...]
    tool: str


def scan(calls: Sequence[Replayed], error_pattern: str = ERROR_PATTERN) -> list[Loop]:
    """Every candidate loop among one conversation's calls, in order of their first call."""
    failure = re.compile(error_pattern)
    keys = [(item.call.tool, canonicalize(item.call.args)) for item in calls]
    results = [item.call.text for item in calls]
    same: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    failing: dict[tuple[str, str], list[int]] = defaultdict(list)
    output: dict[tuple[str, str], list[int]] = defaultdict(list)
    for position, item in enumerate(calls):
        tool, key = keys[position]
        same[tool, key, results[position]].append(position)
        if item.call.failed or failure.search(results[position]) is not None:
            failing[tool, results[position]].append(position)
        elif len(results[position].strip()) >= MIN_OUTPUT:
            output[tool, results[position]].append(position)
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
    found += _cycles(list(zip(keys, results, strict=True)))
    found += [
        Loop("same_output", tuple(positions), tool)
        for (tool, _), positions in output.items()
        if len(positions) >= MIN_REPEATS and len({keys[p] for p in positions}) >= 2
    ]
    return sorted(found, key=lambda loop: (loop.calls[0], SHAPES.index(loop.shape)))


_Called = tuple[tuple[str, str], str]
"""A call's key (tool and canonical arguments) and its result text."""


def _cycles(calls: Sequence[_Called]) -> list[Loop]:
    """Every maximal run of a block of calls repeated with the same results, per period."""
    found = []
    for period in PERIODS:
        position = period
        while position < len(calls):
            if calls[position] != calls[position - period]:
                position += 1
                continue
            start = position - period  # from `position` on, each call is the one `period` back
            while position < len(calls) and calls[position] == calls[position - period]:
                position += 1
            block = list(calls[start : start + period])
            if position - start >= MIN_CYCLES * period and _a_cycle(block):
                tools = "+".join(key[0] for key, _ in block)
                found.append(Loop("cycle", tuple(range(start, position)), tools))
    return found


def _a_cycle(block: list[_Called]) -> bool:
    """At least two different calls, and not a shorter block repeated (that one's cycle)."""
    if len({key for key, _ in block}) < 2:
        return False
    return not any(
        len(block) % shorter == 0 and block == block[shorter:] + block[:shorter]
        for shorter in range(1, len(block))
    )
