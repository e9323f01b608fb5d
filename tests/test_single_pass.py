"""The benchmark's single pass does the default guard's work for a turn that draws nothing.

`make bench` reads the guard's counting hook over it as what the guard's layers cost, which
holds only while it keeps the very record the guard keeps.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from benchmarks.fixtures import lookup
from benchmarks.single_pass import SinglePassMiddleware
from repeat_reminder_langchain import RepeatToolReminderMiddleware
from repeat_reminder_langchain._conversation import SOURCE

from .helpers import assert_adjacent, model_call

NAME = "RepeatToolReminderMiddleware"


def _turn(index: int, args: dict[str, Any], result: str) -> list[BaseMessage]:
    call = {"name": "lookup", "args": args, "id": f"c{index}", "type": "tool_call"}
    return [
        AIMessage("", tool_calls=[call], id=f"t{index}"),
        ToolMessage(result, tool_call_id=f"c{index}", id=f"r{index}"),
    ]


def test_it_keeps_the_record_the_guard_keeps_until_a_turn_draws_something() -> None:
    guard, single = RepeatToolReminderMiddleware(meter_provider=False), SinglePassMiddleware()
    messages: list[BaseMessage] = [HumanMessage("find a", id="h0")]
    kept: dict[str, dict[str, Any]] = {"guard": {}, "single": {}}
    turns = [
        ({"query": "a"}, "found"),
        ({"query": "a", "body": ""}, "found"),  # the default given: the same call
        ("the user", "again"),
        ({"query": "a"}, "found at 2026-12-06T06:59:00Z"),  # counted from 1: the user spoke
        ({"query": "a"}, "found at 2026-12-06T07:00:00Z"),  # the same result, normalised
        ({"query": "a"}, "moved"),  # a new result: progress
        ({"query": "b"}, "found"),
        ({"query": "b"}, "found"),
    ]
    counts = []
    for index, (args, result) in enumerate(turns):
        if args == "the user":
            messages.append(HumanMessage(result, id=f"h{index}"))
            continue
        messages.extend(_turn(index, args, result))  # type: ignore[arg-type]
        written = {}
        added, update = model_call(guard, {"messages": messages, **kept["guard"]}, tools=[lookup])
        assert update is not None and added == []  # nothing drawn
        kept["guard"], written["guard"] = update, update[SOURCE][NAME]
        update = single.before_model({"messages": messages, **kept["single"]}, None)  # type: ignore[arg-type]
        assert update is not None and "messages" not in update
        kept["single"], written["single"] = update, update[SOURCE][NAME]
        assert written["single"] == written["guard"]
        counts.append(written["guard"]["count"])
    assert counts == [1, 2, 1, 2, 1, 1, 2]
    assert guard.stats.snapshot()["calls"] == single.calls == 7

    # The run reaches a threshold: the guard reminds; the single pass counts no such turn.
    messages.extend(_turn(len(turns), {"query": "b"}, "found"))
    added, update = model_call(guard, {"messages": messages, **kept["guard"]}, tools=[lookup])
    assert update is not None and update[SOURCE][NAME]["count"] == 3 and added
    assert single.before_model({"messages": messages, **kept["single"]}, None) is None
    assert_adjacent(messages)
