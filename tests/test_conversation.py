"""Reading a conversation: the latest turn, its results, who spoke, and when the model stopped."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from repeat_reminder_langchain import Reminder, ReminderConfig
from repeat_reminder_langchain._conversation import (
    is_user_message,
    latest_turn,
    predict_escalation,
    read_messages,
    read_state,
    tally_conversation,
)
from repeat_reminder_langchain._streaks import Streaks
from repeat_reminder_langchain.messages import escalation_message, reminder_message
from repeat_reminder_langchain.reminder import Escalation

from .helpers import call, turn

CONFIG = ReminderConfig(thresholds=[2])
INVALID: dict[str, Any] = {"error": "x", "type": "invalid_tool_call"}


def result(call_id: str, content: Any = "ok", **fields: Any) -> ToolMessage:
    return ToolMessage(content, tool_call_id=call_id, **fields)


def counted(messages: list[Any], streaks: Streaks | None = None) -> Any:
    return tally_conversation(streaks or Streaks(), messages, CONFIG)


def test_the_latest_turn_is_read_with_its_results_in_call_order() -> None:
    messages = [
        HumanMessage("go"),
        turn(call("probe", {"q": 1}, "a"), call("probe", {"q": 2}, "b")),
        result("b", "second", status="error"),
        result("a", "first"),
    ]
    found = latest_turn(messages)
    assert found is not None and found.complete and found.position == 1
    assert [(c.id, c.result, c.error) for c in found.calls] == [
        ("a", "first", False),
        ("b", "second", True),
    ]


def test_a_turn_is_not_complete_until_every_call_has_its_result() -> None:
    messages = [turn(call("probe", None, "a"), call("probe", None, "b")), result("a")]
    found = latest_turn(messages)
    assert found is not None and not found.complete and found.calls == ()
    assert counted(messages).calls == 0


def test_calls_sharing_an_id_each_take_one_result_in_order() -> None:
    messages = [turn(*[call("probe", {"q": n}, "call_0") for n in range(3)])]
    assert not latest_turn([*messages, result("call_0", "r0")]).complete  # type: ignore[union-attr]
    answered = [*messages, result("call_0", "r0"), result("call_0", "r1"), result("call_0", "r2")]
    found = latest_turn(answered)
    assert found is not None
    assert [(c.args, c.result) for c in found.calls] == [
        ({"q": 0}, "r0"),
        ({"q": 1}, "r1"),
        ({"q": 2}, "r2"),
    ]
    assert counted(answered).calls == 3


def test_a_call_answered_twice_keeps_the_answer_the_model_read_last() -> None:
    messages = [turn(call("probe", None, "a")), result("a", "stale"), result("a", "fresh")]
    found = latest_turn(messages)
    assert found is not None and found.calls[0].result == "fresh"


def test_calls_without_ids_count_and_differ_by_their_arguments() -> None:
    no_id = {"type": "tool_call", "id": None}
    message = AIMessage(
        "",
        tool_calls=[
            {**no_id, "name": "probe", "args": {"q": 1}},
            {**no_id, "name": "probe", "args": {"q": 2}},
        ],
    )
    found = latest_turn([message])
    assert found is not None and found.complete
    assert counted([message]).streaks.count == 1  # two different calls


def test_two_turns_without_message_ids_that_reuse_call_ids_stay_two_turns() -> None:
    first = [turn(call("probe", None, "call_0")), result("call_0")]
    second = [*first, turn(call("probe", None, "call_0")), result("call_0")]
    after_first = counted(first).streaks
    tally = counted(second, after_first)
    assert tally.calls == 1 and tally.streaks.count == 2
    assert latest_turn(first).id != latest_turn(second).id  # type: ignore[union-attr]


def test_invalid_calls_count_after_the_valid_ones_and_never_collide_with_them() -> None:
    message = AIMessage(
        "",
        tool_calls=[{"name": "probe", "args": {}, "id": None, "type": "tool_call"}],
        invalid_tool_calls=[
            {**INVALID, "name": "probe", "args": "{bad", "id": None},
            {**INVALID, "name": None, "args": "{", "id": "c"},
            {**INVALID, "name": "probe", "args": "{bad", "id": "d"},
        ],
    )
    found = latest_turn([message, result("d", "Error: bad json", status="error")])
    assert found is not None
    assert [(c.tool, c.args, c.result) for c in found.calls] == [
        ("probe", {}, None),
        ("probe", "{bad", None),
        ("probe", "{bad", "Error: bad json"),
    ]
    assert latest_turn([AIMessage("", invalid_tool_calls=[])]) is None


def test_the_user_speaking_after_a_complete_uncounted_turn_resets_and_sends_nothing() -> None:
    before = counted([turn(call("probe", None, "a")), result("a")]).streaks
    messages = [turn(call("probe", None, "a")), result("a")] * 1 + [
        turn(call("probe", None, "b")),
        result("b"),
        HumanMessage("never mind"),
    ]
    tally = counted(messages, before)
    assert tally.reminders == () and tally.calls == 1
    assert tally.streaks == Streaks(turn=tally.streaks.turn)


def test_a_user_message_before_the_turn_resets_first() -> None:
    messages = [turn(call("probe", None, "a")), result("a"), HumanMessage("again")]
    streaks = counted(messages).streaks
    assert streaks.count == 0
    messages += [turn(call("probe", None, "b")), result("b")]
    assert (
        counted(messages, Streaks(turn="#0:a", tool="probe", digest="x", count=1)).streaks.count
        == 1
    )


def test_the_guards_own_messages_and_summaries_are_not_the_user() -> None:
    reminder = Reminder("probe", 2, "gentle", "{}")
    assert not is_user_message(reminder_message(reminder, "human"))
    assert not is_user_message(
        HumanMessage("summary", additional_kwargs={"lc_source": "summarization"})
    )
    assert not is_user_message(SystemMessage("rules"))
    assert is_user_message(HumanMessage("hello", additional_kwargs={"lc_source": "elsewhere"}))


def test_a_model_that_answers_after_a_reminder_it_saw_has_recovered() -> None:
    streaks = Streaks(turn="t", tool="probe", digest="d", count=3, reminded=True)
    tally = counted([HumanMessage("go"), AIMessage("the answer")], streaks)
    assert tally.followups == (True,) and not tally.streaks.reminded
    # The guard's own final message is not the model answering.
    escalation = Escalation("probe", 9, "repeat", "{}", "end")
    assert counted([escalation_message(escalation)], streaks).followups == ()


def test_a_stop_after_a_reminder_is_seen_when_the_next_turn_is_counted() -> None:
    streaks = Streaks(turn="t0", tool="probe", digest="d", count=3, reminded=True)
    messages = [
        turn(call("probe", None, "a")),
        result("a"),
        AIMessage("the answer"),
        HumanMessage("now something else"),
        turn(call("other", None, "b")),
        result("b"),
    ]
    tally = counted(messages, streaks)
    assert tally.followups == (True,)
    assert tally.streaks.count == 1  # the user spoke: counting started over


def test_state_reading_takes_dicts_objects_and_nothing() -> None:
    class State:
        def __init__(self) -> None:
            self.messages = [HumanMessage("hi")]

    assert read_messages(State(), "messages") == State().messages
    assert read_messages({}, "messages") == ()
    assert read_messages({"messages": "not a list"}, "messages") == ()
    assert read_state(object(), "repeat_tool_reminder") is None
    assert counted(list(read_messages({}, "messages"))).streaks == Streaks()


def test_an_escalation_is_predicted_for_the_call_that_would_reach_the_limit() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3, exit_behavior="block")
    streaks = Streaks(turn="t0", tool="probe", digest=_digest({"q": 1}), count=1)
    pending = turn(
        call("probe", {"q": 1}, "x"), call("probe", {"q": 1}, "y"), call("other", None, "z")
    )
    assert predict_escalation(streaks, [pending], "x", config) is None
    predicted = predict_escalation(streaks, [pending], "y", config)
    assert predicted is not None and predicted.count == 3
    assert predict_escalation(streaks, [pending], "z", config) is None
    assert predict_escalation(streaks, [pending], "unknown", config) is None
    assert predict_escalation(streaks, [], "y", config) is None
    # A user message since the last counted turn starts the count over.
    assert predict_escalation(streaks, [HumanMessage("stop"), pending], "y", config) is None


def _digest(args: Any) -> str:
    from repeat_reminder_langchain.canonical import canonicalize, digest

    return digest(canonicalize(args))
