"""Replaying a finished conversation: each call with what the guard counted for it."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._policy import ToolPolicy
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


def _turn(n: int, args: dict[str, object]) -> list[object]:
    call = {"name": "grep", "args": args, "id": f"c{n}"}
    return [AIMessage("", tool_calls=[call], id=f"m{n}"), ToolMessage("r", tool_call_id=f"c{n}")]


def test_replay_reads_the_conversation_as_the_configured_guard_does() -> None:
    # A harness message in the user's role that `not_user` names does not reset the count,
    # and a tool's policy (its arguments ignored) makes two calls one: as at run time.
    harness = HumanMessage("tests still fail")
    messages = [HumanMessage("go"), *_turn(1, {"q": "a"}), harness, *_turn(2, {"q": "b"})]
    config = ReminderConfig(profile="seed", not_user="^tests ")
    policies = {"grep": ToolPolicy(ignore_arguments=["q"])}
    streaks = [r.trace.streak for r in replay(messages, config, policies) if r.trace]  # type: ignore[arg-type]
    assert streaks == [1, 2]
    apart = [r.trace.streak for r in replay(messages, config) if r.trace]  # type: ignore[arg-type]
    assert apart == [1, 1]
    spoke = [r.trace.streak for r in replay(messages, ReminderConfig(profile="seed"), policies)]  # type: ignore[union-attr]
    assert spoke == [1, 1]  # the user spoke: counted from 1 again


def test_replay_yields_nothing_for_a_turn_whose_results_are_not_all_in() -> None:
    messages = [
        HumanMessage("go"),
        *_turn(1, {}),
        AIMessage("", tool_calls=[{"name": "grep", "args": {}, "id": "c2"}], id="m2"),
    ]
    replayed = [
        (r.call.id, r.trace.streak if r.trace else None) for r in replay(messages, ReminderConfig())
    ]  # type: ignore[arg-type]
    assert replayed == [("c1", 1)]
