"""Replaying a finished conversation: each call with what the guard counted for it."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain.replay import replay
from repeat_reminder_langchain.tooling.demo import run_demo


def test_replay_counts_a_turn_with_reused_call_ids_again() -> None:
    def turn(n: int) -> list[object]:
        call = {"name": "grep", "args": {}, "id": "call_0"}
        return [
            AIMessage("", tool_calls=[call], id=f"m{n}"),
            ToolMessage("r", tool_call_id="call_0"),
        ]

    messages = [HumanMessage("go"), *turn(1), *turn(2), *turn(3)]
    streaks = [r.trace.streak for r in replay(messages, ReminderConfig()) if r.trace]  # type: ignore[arg-type]
    assert streaks == [1, 2, 3]


def test_replay_counts_a_turn_read_twice_once() -> None:
    # A turn that a transcript holds twice, under its one id: the guard's record names the
    # turn it counted last, so the guard counts it once, and so does the replay.
    call = {"name": "grep", "args": {}, "id": "call_0"}
    turn = [AIMessage("", tool_calls=[call], id="m1"), ToolMessage("r", tool_call_id="call_0")]
    messages = [HumanMessage("go"), *turn, *turn]
    streaks = [r.trace.streak for r in replay(messages, ReminderConfig()) if r.trace]
    assert streaks == [1]


def test_replay_gives_the_reminders_the_guard_would_send() -> None:
    messages = run_demo(None)
    found = [
        (r.trace.reminder.level, r.trace.reminder.count)
        for r in replay(messages, ReminderConfig())
        if r.trace is not None and r.trace.reminder is not None
    ]
    assert found == [("gentle", 3), ("detailed", 5), ("detailed", 8)]
