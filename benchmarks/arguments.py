"""What reading a call's arguments through its tool's schema costs per turn.

The guard reads one finished turn and counts it (`Guard.read`, the conversation's tail, then
`LoopCounter.count`, which reads each call's arguments as its tool reads them where it keys
them) with the tool shown to it, and the same turn with no tool shown (the arguments read as
sent, the default of a guard that sees no tool), interleaved on one conversation of `SIZE`
messages whose last turn is new each step. Two tools: one that takes text alone (most tools:
read without validating), one that takes a number (validated).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, tool

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._guard import Guard, StateStore

from .fixtures import answered, history, lookup, tool_turn
from .measure import Row, interleaved, time_batch

__all__ = ["run"]

SIZE = 20
STEPS = 2_000
POOL = 64  # distinct last turns the steps cycle through


@tool
def read_lines(path: str, offset: int = 0) -> str:
    """Read a file from a line on."""
    return "lines"


def _args(tool: BaseTool, index: int) -> dict[str, Any]:
    if tool is read_lines:
        return {"path": f"f{index}", "offset": "100"}  # a number sent as text: read as 100
    return {"query": f"q{index}"}


def _case(tool: BaseTool, shown: bool) -> Callable[[], float]:
    guard = Guard(ReminderConfig(), name="bench", records=StateStore("unused"))
    if shown:
        guard.tools.learn(tool)
    messages = history(SIZE)
    turns = [
        answered(tool_turn(10_000_000 + index, _args(tool, index), name=tool.name))
        for index in range(POOL)
    ]
    counter = iter(range(1 << 62))

    def one() -> None:
        messages[-2:] = turns[next(counter) % POOL]
        turn, tools = guard.read(messages, {})
        guard.counter.count({}, turn, tools.policies, schemas=tools.schemas)

    return lambda: time_batch(one, STEPS)


def run(rounds: int) -> list[Row]:
    """µs per turn read and counted with the tool's schema and without, and their ratio."""
    cases = {
        "sent": _case(lookup, False),
        "schema": _case(lookup, True),
        "numbers": _case(read_lines, True),
    }
    samples = interleaved(cases, rounds)
    per_turn = {name: samples.median(name) / STEPS * 1e6 for name in cases}
    return [
        Row(
            "arguments.sent.us",
            "turn read and counted, arguments as sent, µs per turn",
            per_turn["sent"],
            "us",
        ),
        Row(
            "arguments.schema.us",
            "turn read and counted, arguments through the tool's schema, µs per turn",
            per_turn["schema"],
            "us",
        ),
        Row(
            "arguments.numbers.us",
            "turn read and counted, a number read through the tool's schema, µs per turn",
            per_turn["numbers"],
            "us",
        ),
        Row(
            "arguments.ratio",
            "turn read and counted through the schema (text) / as sent",
            samples.ratio("schema", "sent"),
            "ratio",
            None,
            samples.spread("schema", "sent"),
        ),
    ]
