"""The rules every face keeps alike: handler and node, state-kept node, middleware."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
    add_notification_metadata,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain.tooling.audit import audit

from .conftest import Guarded, build
from .helpers import LoopModel, ask, assert_adjacent, call, reminders, repeat, scripted, turn

SAME = {"q": "same"}
Make = Callable[..., Guarded]


def test_thresholds_draw_reminders_right_after_the_results(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 9)))
    messages = agent.invoke(ask())

    assert reminders(messages) == [
        ("gentle", "probe", 3),
        ("detailed", "probe", 5),
        ("detailed", "probe", 8),
    ]
    for index, message in enumerate(messages):
        if is_reminder(message):
            assert isinstance(messages[index - 1], ToolMessage)
            assert isinstance(messages[index + 1], AIMessage)


def test_a_new_user_message_on_the_thread_resets_the_count(guarded: Make, thread: str) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver())

    first = agent.invoke(ask("loop 3"), thread)
    second = agent.invoke(ask("loop 5"), thread)

    assert reminders(first) == [("gentle", "probe", 3)]
    assert reminders(second[len(first) :]) == [("gentle", "probe", 3), ("detailed", "probe", 5)]


def test_a_user_message_sent_between_turns_resets_the_count(guarded: Make, thread: str) -> None:
    # The user steers while the agent loops: the run pauses before its third model call, a
    # user message is added, and the loop goes on. Counting starts over there.
    agent = guarded(scripted(repeat("probe", SAME, 5)), checkpointer=InMemorySaver())
    pause = ["model" if agent.face == "middleware" else "agent"]
    config = agent.run_config(thread)
    agent.graph.invoke(ask(), config, interrupt_before=pause)
    for model_calls in range(1, 7):
        if model_calls == 3:
            agent.graph.update_state(config, {"messages": [HumanMessage("check the cache")]})
        agent.graph.invoke(None, config, interrupt_before=pause)
    messages = agent.state(thread)["messages"]

    said = [m.content for m in messages if isinstance(m, HumanMessage) and not is_reminder(m)]
    assert said == ["go", "check the cache"]
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert is_reminder(messages[-2])  # after the fifth call: the third since the user spoke


def test_identical_parallel_calls_sharing_one_id_each_count(guarded: Make) -> None:
    shared = turn(*(call("probe", SAME, "call_0") for _ in range(3)))
    messages = guarded(scripted([shared])).invoke(ask())

    assert [type(m).__name__ for m in messages[1:5]] == [
        "AIMessage", "ToolMessage", "ToolMessage", "ToolMessage",
    ]  # fmt: skip
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert is_reminder(messages[5])


def test_a_loop_of_two_identical_calls_a_turn_is_said_at_the_count_the_model_reads(
    guarded: Make,
) -> None:
    script = [turn(call("probe", SAME), call("probe", SAME)) for _ in range(4)]
    agent = guarded(scripted(script))
    messages = agent.invoke(ask())

    # Reached at calls 3, 5 and 8; read after calls 4, 6 and 8: once a turn, the firmest level.
    assert reminders(messages) == [
        ("gentle", "probe", 4),
        ("detailed", "probe", 6),
        ("detailed", "probe", 8),
    ]
    said = [m.content for m in messages if is_reminder(m)]
    assert "called `probe` 4 times in a row" in said[0]
    assert "consecutive_calls: 6" in said[1]
    assert_adjacent(messages)
    stats = agent.stats.snapshot()
    assert stats["reminders"] == {"probe": {"gentle": 1, "detailed": 2}}
    # One per reminder read: two calls went on with the loop, the answer after the last did not.
    assert (stats["followed"], stats["recovered"]) == (3, 1)


def test_events_reach_the_custom_stream_that_server_clients_watch(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 5)))
    chunks = list(agent.graph.stream(ask(), agent.run_config(), stream_mode="custom"))

    events = [chunk["repeat_tool_reminder"] for chunk in chunks]
    assert [(e["count"], e["level"], e["delivered"]) for e in events] == [
        (3, "gentle", True),
        (5, "detailed", True),
    ]
    assert all(e["detector"] == "repeat" and e["tool"] == "probe" for e in events)


async def test_events_reach_the_custom_stream_of_async_runs_too(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 3)))
    chunks = [c async for c in agent.graph.astream(ask(), agent.run_config(), stream_mode="custom")]

    assert [chunk["repeat_tool_reminder"]["count"] for chunk in chunks] == [3]


def test_a_model_that_answers_after_a_reminder_has_recovered(guarded: Make, thread: str) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver())
    agent.invoke(ask("loop 3"), thread)  # a reminder at 3, then the model answers

    # Counted by the end of the run that the answer ends, on every face.
    stats = agent.stats.snapshot()
    assert (stats["followed"], stats["recovered"], stats["recovery_rate"]) == (1, 1, 1.0)
    assert stats["reminders"] == {"probe": {"gentle": 1}}
    assert stats["undelivered"] == {}

    agent.invoke(ask("thanks; loop 1"), thread)  # the thread goes on: counted once only
    assert agent.stats.snapshot()["followed"] == 1
    agent.invoke(ask("loop 3"), thread)  # another reminder, at 3, and another answer
    stats = agent.stats.snapshot()
    assert (stats["followed"], stats["recovered"]) == (2, 2)


async def test_an_async_run_counts_the_recovery_it_ends_with(guarded: Make, thread: str) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver())
    await agent.ainvoke(ask("loop 3"), thread)

    stats = agent.stats.snapshot()
    assert (stats["followed"], stats["recovery_rate"]) == (1, 1.0)
    await agent.ainvoke(ask("thanks"), thread)
    assert agent.stats.snapshot()["followed"] == 1


def test_a_run_ended_by_escalation_counts_no_recovery(guarded: Make, thread: str) -> None:
    agent = guarded(
        LoopModel(),
        checkpointer=InMemorySaver(),
        thresholds=[3],
        escalate_after=4,
        exit_behavior="end",
    )
    messages = agent.invoke(ask("loop 9"), thread)

    assert reminders(messages) == [("gentle", "probe", 3)]
    stats = agent.stats.snapshot()
    assert stats["escalations"] == {"probe": {"repeat": 1}}
    assert (stats["followed"], stats["recovered"]) == (1, 0)  # the 4th call repeated the 3rd
    agent.invoke(ask("thanks"), thread)
    assert agent.stats.snapshot()["followed"] == 1


def test_a_run_stopped_by_the_recursion_limit_counts_no_recovery(
    guarded: Make, thread: str
) -> None:
    agent = guarded(LoopModel(), checkpointer=InMemorySaver())
    with pytest.raises(GraphRecursionError):
        agent.invoke(ask("loop 50"), thread, recursion_limit=20)

    stats = agent.stats.snapshot()
    assert stats["reminders"]["probe"]["gentle"] == 1
    assert stats["followed"] >= 1
    assert stats["recovered"] == 0
    messages = agent.state(thread)["messages"]
    pending = isinstance(messages[-1], AIMessage) and messages[-1].tool_calls
    assert_adjacent(messages[:-1] if pending else messages)  # stopped before its tools or not


def test_a_model_that_repeats_after_a_reminder_has_not_recovered(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 4)))
    agent.invoke(ask())

    stats = agent.stats.snapshot()
    assert (stats["followed"], stats["recovered"]) == (1, 0)


def test_observe_mode_reports_what_it_would_send_and_sends_nothing(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 5)), mode="observe")
    chunks = list(agent.graph.stream(ask(), agent.run_config(), stream_mode=["custom", "values"]))

    messages = [data for kind, data in chunks if kind == "values"][-1]["messages"]
    events = [data["repeat_tool_reminder"] for kind, data in chunks if kind == "custom"]
    assert reminders(messages) == []
    assert [(e["count"], e["delivered"], e["mode"]) for e in events] == [
        (3, False, "observe"),
        (5, False, "observe"),
    ]
    stats = agent.stats.snapshot()
    assert stats["reminders"] == {}
    assert stats["undelivered"] == {"probe": {"detailed": 1, "gentle": 1}}
    assert stats["followed"] == 0  # nothing the model saw is followed up


def test_the_count_continues_across_runs_of_one_thread(guarded: Make, thread: str) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 5)), checkpointer=InMemorySaver())
    config = agent.run_config(thread)
    agent.graph.invoke(ask(), config, interrupt_before=["tools"])
    for _ in range(5):
        agent.graph.invoke(None, config, interrupt_before=["tools"])
    messages = agent.state(thread)["messages"]

    assert reminders(messages) == [("gentle", "probe", 3), ("detailed", "probe", 5)]


def _count_field(agent: Guarded, state: dict[str, Any]) -> Any:
    field = state.get("repeat_tool_reminder")
    if agent.face == "middleware" and field is not None:
        return field[agent.guard.name]["count"]
    return None if field is None else field["count"]


@pytest.mark.parametrize("face", ["state", "middleware"])
def test_state_faces_keep_their_counts_out_of_input_and_output(face: str, thread: str) -> None:
    agent = build(face, scripted(repeat("probe", SAME, 2)), checkpointer=InMemorySaver())
    forged = {"messages": [HumanMessage("go")], "repeat_tool_reminder": {"count": 99}}
    result = agent.graph.invoke(forged, agent.run_config(thread))

    assert "repeat_tool_reminder" not in result
    assert "repeat_tool_reminder" not in agent.graph.get_input_jsonschema()["properties"]
    assert "repeat_tool_reminder" not in agent.graph.get_output_jsonschema()["properties"]
    assert _count_field(agent, agent.state(thread)) == 2  # the forged 99 was not taken


def test_a_harness_message_that_is_not_the_user_resets_nothing(guarded: Make, thread: str) -> None:
    # The harness answers a malformed reply with a user-role notice while the agent loops;
    # told it is not the user, the guard counts on through it. The user's own words still reset.
    feedback = "Please always provide EXACTLY ONE action."
    agent = guarded(
        scripted(repeat("probe", SAME, 6)), checkpointer=InMemorySaver(), not_user="EXACTLY ONE"
    )
    pause = ["model" if agent.face == "middleware" else "agent"]
    config = agent.run_config(thread)
    agent.graph.invoke(ask(), config, interrupt_before=pause)
    for model_calls in range(1, 8):
        if model_calls in (2, 4):
            agent.graph.update_state(config, {"messages": [HumanMessage(feedback)]})
        agent.graph.invoke(None, config, interrupt_before=pause)
    messages = agent.state(thread)["messages"]

    assert reminders(messages) == [("gentle", "probe", 3), ("detailed", "probe", 5)]


def notify(state: Any, runtime: Any = None) -> dict[str, Any]:
    """A harness step: after each tool turn, a user-role update marked as the harness's own
    (langchain-core's notification metadata), as background tasks, graders and skills add."""
    last = next(m for m in reversed(state["messages"]) if not is_reminder(m))
    if not isinstance(last, ToolMessage):
        return {}
    update = HumanMessage("Background task t_42 is still running.")
    return {"messages": [add_notification_metadata(update, source="async_subagent")]}


def is_notice(message: Any) -> bool:
    return message.additional_kwargs.get("lc_source") == "async_subagent"


@pytest.mark.parametrize("first", [True, False], ids=["harness-first", "guard-first"])
def test_a_notification_the_harness_adds_after_each_tool_turn_resets_nothing(
    guarded: Make, first: bool
) -> None:
    plain = guarded(scripted(repeat("probe", SAME, 6))).invoke(ask())
    agent = guarded(scripted(repeat("probe", SAME, 6)), harness=notify, harness_first=first)
    messages = agent.invoke(ask())

    assert sum(map(is_notice, messages)) == 6
    assert (
        reminders(messages)
        == reminders(plain)
        == [("gentle", "probe", 3), ("detailed", "probe", 5)]
    )
    # The audit of the saved conversation reads the notifications alike.
    (read,) = audit([messages_from_dict(messages_to_dict(messages))], ReminderConfig()).flagged
    assert [(f.reasons[0].count, f.sent) for f in read.findings] == [(3, True), (5, True)]


def handed_in(times: int) -> list[Any]:
    """A conversation a client kept itself: the user's request, then `times` identical calls."""
    history: list[Any] = [HumanMessage("go")]
    for made in repeat("probe", SAME, times):
        history += [made, ToolMessage("probed same", tool_call_id=made.tool_calls[0]["id"])]
    return history


def test_a_history_handed_in_counts_as_if_the_guard_had_watched_it(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 1)))
    messages = agent.invoke({"messages": handed_in(4)})

    # The fifth identical call gets the reminder its count deserves; the one at 3, which a
    # guard that watched would have sent, is not sent late.
    assert reminders(messages) == [("detailed", "probe", 5)]
    (read,) = audit([messages], ReminderConfig()).flagged
    assert [(f.reasons[0].count, f.sent) for f in read.findings] == [(3, False), (5, True)]
    # A user message in the history starts the count over, as it would have.
    restarted = [*handed_in(4), HumanMessage("try once more"), *handed_in(2)[1:]]
    agent = guarded(scripted(repeat("probe", SAME, 1)))
    assert reminders(agent.invoke({"messages": restarted})) == [("gentle", "probe", 3)]


def test_a_failure_a_user_message_does_not_end_counts_in_a_history_handed_in(
    guarded: Make,
) -> None:
    # The same failure after each of the user's messages: the defaults remember it past them
    # (recurring_error), so the history's failures count as the guard watching would have.
    @tool
    def book(seat: str) -> str:
        """Book a seat."""
        return "Error: payment declined"

    history: list[Any] = []
    for attempt in range(2):
        made = turn(call("book", {"seat": "1A"}))
        history += [HumanMessage(f"book it, try {attempt}"), made]
        history += [ToolMessage("Error: payment declined", tool_call_id=made.tool_calls[0]["id"])]
        history += [AIMessage("It failed.")]
    model = scripted([turn(call("book", {"seat": "1A"})), "It failed again."])
    agent = guarded(model, tools=[book], profile="default")
    messages = agent.invoke({"messages": [*history, HumanMessage("book it, try 2")]})

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "book", 3)]


@pytest.mark.parametrize(
    "face",
    [
        "handler",
        "state",
        "middleware",
    ],
)
def test_a_history_handed_in_is_read_as_the_guard_reads_a_turn(face: str) -> None:
    # A nonce the tool declares of no account, and a harness's note in the user's role that
    # `not_user` says is not the user: neither breaks the count of the calls handed in.
    @tool
    def probe(q: str = "", nonce: str = "") -> str:
        """Look something up."""
        return f"probed {q}"

    probe.metadata = {"repeat_reminder": {"ignore_arguments": ["nonce"]}}
    history: list[Any] = [HumanMessage("go")]
    for number in range(4):
        made = turn(call("probe", {"q": "same", "nonce": str(number)}))
        history += [made, ToolMessage("probed same", tool_call_id=made.tool_calls[0]["id"])]
        history += [HumanMessage("[harness] step done")] if number == 1 else []
    model = scripted([turn(call("probe", {"q": "same", "nonce": "4"}))])
    agent = build(face, model, tools=[probe], not_user=r"^\[harness\]")
    messages = agent.invoke({"messages": history})

    assert_adjacent(messages)
    assert reminders(messages) == [("detailed", "probe", 5)]


def test_escalation_holds_for_a_history_handed_in(guarded: Make) -> None:
    agent = guarded(
        scripted(repeat("probe", SAME, 3)), thresholds=[2], escalate_after=5, exit_behavior="end"
    )
    messages = agent.invoke({"messages": handed_in(4)})

    calls = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert len(calls) == 5  # the fifth identical call reached the limit: the run ended there
    final = messages[-1].additional_kwargs["repeat_tool_reminder"]
    assert (final["count"], final["level"]) == (5, "escalated")
