"""`cycle`: a sequence of two to four calls done again and again, with the same results each time.

An agent can loop without ever making one call twice in a row: it inserts a debug line, runs
the script, meets the same error, removes the line, and starts over. No call repeats
consecutively; the sequence does, and every call of it returns what it returned the round
before, so the agent is back where it was at the start of each round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from pydantic import Field, NonNegativeInt

from .._canonical import digest
from ._detector import Detector, Seen, Words

PERIODS = (2, 3, 4)
"""The lengths of the sequences it looks for, shortest first."""

_SHOWN = 80  # characters of one call's arguments a round remembers, to say what it was


@dataclass(slots=True)
class _Rounds:
    """The latest calls (up to the longest period) and, per period, how far they repeat.

    `calls` holds `[step, tool, arguments]` for each, oldest first: `step` fingerprints the
    call with its result. `runs[i]` counts the latest calls in a row that each equal the call
    `PERIODS[i]` before them.
    """

    calls: Annotated[
        list[Annotated[list[str], Field(min_length=3, max_length=3)]],
        Field(max_length=PERIODS[-1]),
    ] = field(default_factory=list)
    runs: Annotated[
        list[NonNegativeInt], Field(min_length=len(PERIODS), max_length=len(PERIODS))
    ] = field(default_factory=lambda: [0] * len(PERIODS))
    period: int = field(default=0, init=False)  # the length of the sequence seen last repeats


class Cycle(Detector):
    """Counts the rounds of a repeated sequence of two to four calls with unchanged results.

    A round is counted when its last call completes it; the shortest sequence that repeats is
    the one counted, and a sequence of one call repeated (`repeat`'s) is not a cycle.
    """

    name = "cycle"
    says: ClassVar[Mapping[str, Any]] = {"evidence": "  1. tool {}\n  2. other {}"}
    counts = "rounds of one sequence of calls"
    memory = _Rounds
    words = Words(
        gentle=(
            "You have now gone through the same sequence of calls {count} times in a row, "
            "ending with `{tool}`, and every call returned exactly what it returned the round "
            "before:\n{evidence}\n"
            "Another round will end the same way. Step back: find out why this does not work, "
            "try a different approach, or finish with what you have."
        ),
        detailed=(
            "Repeated cycle of tool calls detected.\n"
            "- rounds: {count}\n"
            "- calls_per_round, in order:\n"
            "{evidence}\n"
            "Each round undid or repeated the one before: every call returned the same result "
            "again. Do not start this sequence again; change the approach, or finish."
        ),
        stopped="the same sequence of calls, with the same results,",
    )

    def see(self, memory: _Rounds, seen: Seen) -> int | None:
        step = digest(f"{seen.tool}\x00{seen.key}\x00{seen.outcome}")[:16]
        calls, runs = memory.calls, memory.runs
        for i, period in enumerate(PERIODS):
            runs[i] = runs[i] + 1 if len(calls) >= period and calls[-period][0] == step else 0
        calls.append([step, seen.tool, seen.arguments[:_SHOWN]])
        if len(calls) > PERIODS[-1]:
            del calls[0]
        for i, period in enumerate(PERIODS):
            if runs[i] >= period and len({call[0] for call in calls[-period:]}) > 1:
                # The shortest sequence that repeats; a round ends each `period` calls.
                memory.period = period
                return None if runs[i] % period else runs[i] // period + 1
        return None

    def details(self, memory: _Rounds, cut: Callable[[str], str]) -> Mapping[str, Any]:
        steps = memory.calls[-memory.period :]
        return {
            "evidence": "\n".join(
                f"  {n}. {tool} {cut(arguments)}" for n, (_, tool, arguments) in enumerate(steps, 1)
            )
        }
