"""What reading a call's arguments through its tool's schema costs per turn.

The guard reads one finished turn (`Guard.read`: the conversation's tail, then each call's
arguments as its tool reads them) with the tool shown to it, and the same turn with no tool
shown (the arguments read as sent, the default of a guard that sees no tool), interleaved on
one conversation of `SIZE` messages whose last turn is new each step.
"""

from __future__ import annotations

from collections.abc import Callable

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._guard import Guard, StateStore

from .fixtures import answered, history, lookup, tool_turn
from .measure import Row, interleaved, time_batch

__all__ = ["run"]

SIZE = 20
STEPS = 2_000
POOL = 64  # distinct last turns the steps cycle through


def _case(shown: bool) -> Callable[[], float]:
    guard = Guard(ReminderConfig(), name="bench", records=StateStore("unused"))
    if shown:
        guard.tools.learn(lookup)
    messages = history(SIZE)
    turns = [answered(tool_turn(10_000_000 + index)) for index in range(POOL)]
    counter = iter(range(1 << 62))

    def one() -> None:
        messages[-2:] = turns[next(counter) % POOL]
        guard.read(messages, {})

    return lambda: time_batch(one, STEPS)


def run(rounds: int) -> list[Row]:
    """µs per turn read with the tool's schema and without, and their ratio."""
    samples = interleaved({"schema": _case(True), "sent": _case(False)}, rounds)
    per_turn = {name: samples.median(name) / STEPS * 1e6 for name in ("schema", "sent")}
    return [
        Row(
            "arguments.sent.us", "turn read, arguments as sent, µs per turn", per_turn["sent"], "us"
        ),
        Row(
            "arguments.schema.us",
            "turn read, arguments through the tool's schema, µs per turn",
            per_turn["schema"],
            "us",
        ),
        Row(
            "arguments.ratio",
            "turn read through the schema / as sent",
            samples.ratio("schema", "sent"),
            "ratio",
            None,
            samples.spread("schema", "sent"),
        ),
    ]
