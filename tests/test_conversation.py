"""Reading a conversation: the latest turn, its results, who spoke, and when the model stopped."""

from __future__ import annotations

from operator import methodcaller
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    ToolMessage,
    ToolMessageChunk,
    add_notification_metadata,
)

from repeat_reminder_langchain import Reminder, ReminderConfig
from repeat_reminder_langchain._canonical import canonicalize, digest
from repeat_reminder_langchain._conversation import (
    is_reminder,
    is_user_message,
    read_messages,
    read_state,
    read_turn,
    user_test,
)
from repeat_reminder_langchain._counter import NOTHING, Count, LoopCounter, Turn
from repeat_reminder_langchain._messages import (
    blocked_result,
    escalation_message,
    reminder_message,
)
from repeat_reminder_langchain._policy import ToolPolicy
from repeat_reminder_langchain._record import Record
from repeat_reminder_langchain._reminder import Escalation

from .helpers import call, turn

CONFIG = ReminderConfig(thresholds=[2])
INVALID: dict[str, Any] = {"error": "x", "type": "invalid_tool_call"}


def result(call_id: str, content: Any = "ok", **fields: Any) -> ToolMessage:
    return ToolMessage(content, tool_call_id=call_id, **fields)


def counted(
    messages: list[Any],
    record: Record | None = None,
    config: ReminderConfig = CONFIG,
    policies: Any = None,
    *,
    reminders_reach_model: bool = True,
    end: int | None = None,
    trace: list[Any] | None = None,
) -> Count:
    """A face's count: the conversation read, then counted."""
    record = record or {}
    read = read_turn(messages, record.get("turn", ""), end, user_test(config.not_user))
    observe = None if trace is None else trace.append
    return LoopCounter(config).count(
        record, read, policies, reminders_reach_model=reminders_reach_model, observe=observe
    )


def kept(messages: list[Any], record: Record | None = None, **kwargs: Any) -> Record:
    """The record a face keeps after the count: the new one, or the one it had."""
    found = counted(messages, record, **kwargs).record
    return (record or {}) if found is None else found


def latest(messages: list[Any], end: int | None = None) -> Turn:
    """The latest model turn, read as if nothing was counted yet."""
    return read_turn(messages, "", end)


def predict(
    record: Record, messages: list[Any], call_id: str, config: ReminderConfig, policies: Any = None
) -> Escalation | None:
    """What the middleware predicts for a call about to run."""
    pending = read_turn(messages, record.get("turn", ""))
    position = next((i for i, c in enumerate(pending.calls) if c.id == call_id), None)
    if position is None:
        return None
    return LoopCounter(config).predict(record, pending, position, policies)


def _digest(args: Any) -> str:
    return digest(canonicalize(args))


def test_the_latest_turn_is_read_with_its_results_in_call_order() -> None:
    messages = [
        HumanMessage("go"),
        turn(call("probe", {"q": 1}, "a"), call("probe", {"q": 2}, "b")),
        result("b", "second", status="error"),
        result("a", "first"),
    ]
    found = latest(messages)
    assert found.id == "#1:a\x1fb" and not found.waiting
    assert [(c.id, c.tool, c.result, c.failed) for c in found.calls] == [
        ("a", "probe", "first", False),
        ("b", "probe", "second", True),
    ]


@pytest.mark.parametrize("ids", [["a"], ["a", "b"]])
def test_a_turn_is_not_complete_until_every_call_has_its_result(ids: list[str]) -> None:
    asked = [HumanMessage("go"), turn(*[call("probe", None, i) for i in ids])]
    messages = [*asked, *(result(i) for i in ids[1:])]
    found = latest(messages)
    assert (found.id, found.waiting) == (f"#1:{chr(31).join(ids)}", True)
    assert [c.result for c in found.calls] == [None, *("ok" for _ in ids[1:])]
    assert counted(messages) == Count(None)


REFUSED = blocked_result(Escalation("probe", 3, "repeat", "{}", "block"), "x")
FOREIGN = result("x", "ok", additional_kwargs={"lc_source": "elsewhere", "elsewhere": {}})


@pytest.mark.parametrize(
    ("answer", "read"),
    [
        (REFUSED, (None, True)),
        (FOREIGN, ("ok", False)),
        (result("x", "failed", status="error"), ("failed", True)),
    ],
)
@pytest.mark.parametrize("others", [0, 1])
def test_the_guards_refusal_of_a_call_tells_nothing_and_any_other_result_is_read(
    answer: ToolMessage, read: tuple[object, bool], others: int
) -> None:
    more = [call("probe", {"q": n}, f"y{n}") for n in range(others)]
    messages = [turn(call("probe", None, "x"), *more), answer, *(result(c["id"]) for c in more)]
    found = latest(messages)
    assert not found.waiting
    assert [(c.result, c.failed) for c in found.calls] == [read] + [("ok", False)] * others


@pytest.mark.parametrize(("answer", "read"), [(REFUSED, (None, True)), (FOREIGN, ("ok", False))])
def test_a_turn_of_calls_whose_arguments_could_not_be_parsed_reads_as_any_turn(
    answer: ToolMessage, read: tuple[object, bool]
) -> None:
    unparsed = {**INVALID, "args": "{bad", "id": "x"}
    made = AIMessage("", invalid_tool_calls=[{**unparsed, "name": "probe"}])
    found = latest([HumanMessage("go"), made, answer])
    assert found.id == "#1:x" and not found.waiting
    assert [(c.tool, c.args, c.result, c.failed) for c in found.calls] == [("probe", "{bad", *read)]
    # A call without a name is no call: the turn is the model answering.
    nameless = AIMessage("", invalid_tool_calls=[{**unparsed, "name": None}])
    assert latest([HumanMessage("go"), nameless]) == Turn(answered=True)


def test_calls_sharing_an_id_each_take_one_result_in_order() -> None:
    messages = [turn(*[call("probe", {"q": n}, "call_0") for n in range(3)])]
    assert latest([*messages, result("call_0", "r0")]).waiting
    answered = [*messages, result("call_0", "r0"), result("call_0", "r1"), result("call_0", "r2")]
    found = latest(answered)
    assert [(c.args, c.result) for c in found.calls] == [
        ({"q": 0}, "r0"),
        ({"q": 1}, "r1"),
        ({"q": 2}, "r2"),
    ]
    assert counted(answered).calls == 3


def test_a_call_answered_twice_keeps_the_answer_the_model_read_last() -> None:
    messages = [turn(call("probe", None, "a")), result("a", "stale"), result("a", "fresh")]
    assert latest(messages).calls[0].result == "fresh"


def test_calls_without_ids_count_and_differ_by_their_arguments() -> None:
    no_id = {"type": "tool_call", "id": None}
    message = AIMessage(
        "",
        tool_calls=[
            {**no_id, "name": "probe", "args": {"q": 1}},
            {**no_id, "name": "probe", "args": {"q": 2}},
        ],
    )
    found = latest([message])
    assert not found.waiting
    assert [(c.id, c.args) for c in found.calls] == [("", {"q": 1}), ("", {"q": 2})]
    assert kept([message])["count"] == 1  # two different calls
    # Nothing says which call a result without an id answers: it answers none.
    answered = latest([message, ToolMessage("r", tool_call_id="")])
    assert [c.result for c in answered.calls] == [None, None]


def test_two_turns_without_message_ids_that_reuse_call_ids_stay_two_turns() -> None:
    first = [turn(call("probe", None, "call_0")), result("call_0")]
    second = [*first, turn(call("probe", None, "call_0")), result("call_0")]
    after_first = kept(first)
    tally = counted(second, after_first)
    assert tally.calls == 1 and kept(second, after_first)["count"] == 2
    assert latest(first).id != latest(second).id


def test_a_turn_reusing_a_call_id_waits_for_its_own_result_not_the_previous_turns() -> None:
    first = [turn(call("probe", None, "call_0")), result("call_0")]
    second = [*first, turn(call("probe", None, "call_0"), call("ls", None, "call_1"))]
    half = [*second, result("call_1")]
    assert latest(half).waiting
    assert counted(half, kept(first)).record is None  # counted once every result is in
    assert not latest([*half, result("call_0")]).waiting


NO_ID: dict[str, Any] = {"type": "tool_call", "id": None, "name": "probe", "args": {}}


@pytest.mark.parametrize(
    ("message", "stored"),
    [
        (AIMessage("", id="run-1", tool_calls=[call("probe", None, "a")]), "run-1"),
        (turn(call("probe", None, "a"), call("probe", None, "b")), "#1:a\x1fb"),
        (AIMessage("", tool_calls=[NO_ID]), "#1:"),
        (
            AIMessage(
                "",
                tool_calls=[call("probe", None, "a")],
                invalid_tool_calls=[
                    {**INVALID, "name": "probe", "args": "{", "id": "c"},
                    {**INVALID, "name": "probe", "args": "{", "id": None},
                ],
            ),
            "#1:a\x1fc\x1f",
        ),
    ],
)
def test_a_turn_is_known_by_its_message_id_or_else_its_position_and_call_ids(
    message: AIMessage, stored: str
) -> None:
    # The identity is kept in checkpoints: it must not change between versions.
    answers = [result(c["id"]) for c in message.tool_calls if c["id"]]
    messages = [HumanMessage("go"), message, *answers]
    assert latest(messages).id == stored
    assert kept(messages)["turn"] == stored
    assert read_turn(messages, stored) is NOTHING


def test_a_turn_is_counted_once_and_the_reading_stops_at_the_turn_before() -> None:
    messages = [
        HumanMessage("go"),
        AIMessage("", id="t1", tool_calls=[call("probe", {"q": 1}, "a")]),
        result("a"),
        AIMessage("", id="t2", tool_calls=[call("probe", {"q": 2}, "b")]),
        result("b", "no such file", status="error"),
    ]
    tally = counted(messages, {"turn": "t1", "tool": "probe", "key": "d", "count": 1})
    assert tally.record is not None
    assert (tally.calls, tally.record["turn"], tally.record["count"]) == (1, "t2", 1)
    assert read_turn(messages, "t2") is NOTHING  # counted already
    # The user spoke before the first turn: not since the turn before this one.
    assert not read_turn(messages, "t1").spoke_before
    assert read_turn(messages[:3], "").spoke_before


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
    found = latest([message, result("d", "Error: bad json", status="error")])
    assert [(c.id, c.tool, c.args, c.result, c.failed) for c in found.calls] == [
        ("", "probe", {}, None, False),
        ("", "probe", "{bad", None, False),
        ("d", "probe", "{bad", "Error: bad json", True),
    ]
    assert latest([AIMessage("", invalid_tool_calls=[])]) == Turn(answered=True)
    # The same with one valid call that has its id and result.
    message = AIMessage(
        "",
        tool_calls=[call("probe", {}, "a")],
        invalid_tool_calls=[{**INVALID, "name": "probe", "args": "{bad", "id": "d"}],
    )
    found = latest([message, result("a", "fine")])
    assert [(c.id, c.args, c.result) for c in found.calls] == [
        ("a", {}, "fine"),
        ("d", "{bad", None),
    ]


def test_the_user_speaking_after_a_complete_uncounted_turn_resets_and_sends_nothing() -> None:
    before = kept([turn(call("probe", None, "a")), result("a")])
    messages = [turn(call("probe", None, "a")), result("a")] * 1 + [
        turn(call("probe", None, "b")),
        result("b"),
        HumanMessage("never mind"),
    ]
    tally = counted(messages, before)
    assert list(tally.reminders) == [] and tally.calls == 1
    assert tally.record == {"turn": "#2:b"}


def test_a_conversation_read_up_to_end_ignores_what_came_after() -> None:
    record: Record = {"turn": "t0", "tool": "probe", "key": _digest({}), "count": 1}
    messages = [turn(call("probe", None, "a")), result("a"), HumanMessage("new question")]
    tally = counted(messages, record, end=2)
    assert kept(messages, record, end=2)["count"] == 2 and len(tally.reminders) == 1


def test_a_user_message_that_came_in_while_the_tools_ran_resets_the_next_turn() -> None:
    record: Record = {"turn": "#0:a", "tool": "probe", "key": _digest({}), "count": 1}
    messages = [
        turn(call("probe", None, "a")),
        HumanMessage("while you are at it"),
        result("a"),
        turn(call("probe", None, "b")),
        result("b"),
    ]
    assert kept(messages, record)["count"] == 1


@pytest.mark.parametrize(
    ("messages", "waiting"),
    [
        ([turn(call("probe", None, "a")), result("a"), AIMessage("the answer")], False),
        ([turn(call("probe", None, "a")), result("a")], False),  # counted already
        ([turn(call("probe", None, "a"), call("probe", None, "b")), result("a")], True),
    ],
)
def test_with_no_new_turn_to_count_the_record_stays_until_the_user_speaks(
    messages: list[Any], waiting: bool
) -> None:
    record: Record = {"turn": "#0:a", "tool": "probe", "key": _digest({}), "count": 3}
    assert latest(messages).waiting is waiting
    tally = counted(messages, record)
    assert (tally.record, tally.calls) == (None, 0)
    spoke = counted([*messages, HumanMessage("something else")], record)
    assert (spoke.record, spoke.calls) == ({"turn": "#0:a"}, 0)


def test_a_turn_is_counted_only_once() -> None:
    # Read again at every step: the user message before it must not reset it again.
    messages = [HumanMessage("go"), turn(call("probe", None, "a")), result("a")]
    first = counted(messages, {"turn": "t0", "tool": "probe", "key": "d", "count": 4})
    assert first.record is not None
    again = counted(messages, first.record)
    assert (first.calls, first.record["count"]) == (1, 1)
    assert (again.calls, again.record) == (0, None)


def test_the_user_speaking_after_a_loop_calls_it_off_and_the_trace_shows_nothing_drawn() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3)
    record: Record = {"turn": "t0", "tool": "probe", "key": _digest({}), "count": 2}
    messages = [turn(call("probe", None, "a")), result("a")]
    trace: list[Any] = []
    tally = counted(messages, record, config, trace=trace)
    assert tally.escalation is not None and [e.escalation for e in trace] == [tally.escalation]
    trace.clear()
    spoke = [*messages, HumanMessage("stop that")]
    tally = counted(spoke, record, config, trace=trace)
    assert (tally.escalation, list(tally.reminders), tally.record) == (None, [], {"turn": "#0:a"})
    assert [(e.streak, e.reminder, e.escalation) for e in trace] == [(3, None, None)]
    trace.clear()
    tally = counted(spoke, {**record, "count": 1}, config, trace=trace)
    assert [(e.streak, e.reminder, e.escalation) for e in trace] == [(2, None, None)]


def test_a_tool_that_declares_itself_excluded_is_not_counted() -> None:
    messages = [
        turn(call("poller", None, "a"), call("poller", None, "b")),
        result("a"),
        result("b"),
    ]
    policies = {"poller": ToolPolicy(exclude=True)}
    tally = counted(messages, {}, CONFIG, policies)
    assert (tally.calls, list(tally.reminders)) == (0, [])
    assert kept(messages, {}, policies=policies)["count"] == 0


def test_a_user_message_before_the_turn_resets_first() -> None:
    messages = [turn(call("probe", None, "a")), result("a"), HumanMessage("again")]
    assert kept(messages) == {"turn": "#0:a"}  # counted, then reset: the user spoke after
    messages += [turn(call("probe", None, "b")), result("b")]
    assert kept(messages, {"turn": "#0:a", "tool": "probe", "key": "x", "count": 1})["count"] == 1


def test_message_chunks_are_read_as_the_messages_they_are_part_of() -> None:
    chunk = {"name": "probe", "args": "{}", "id": "a", "index": 0}
    streaked: Record = {"turn": "t0", "tool": "probe", "key": _digest({}), "count": 1}
    messages = [
        AIMessageChunk("", tool_call_chunks=[chunk]),
        ToolMessageChunk("ok", tool_call_id="a"),
    ]
    found = latest([HumanMessage("go"), *messages])
    assert [(c.id, c.result) for c in found.calls] == [("a", "ok")]
    assert kept(messages, streaked)["count"] == 2
    assert kept([HumanMessageChunk("again"), *messages], streaked)["count"] == 1
    assert kept([*messages, HumanMessageChunk("stop")], streaked).get("count", 0) == 0
    # A chunk is the previous turn too: a user message before it is not since it.
    following = [HumanMessage("go"), *messages, turn(call("probe", None, "b")), result("b")]
    previous: Record = {"turn": "#1:a", "tool": "probe", "key": _digest({}), "count": 1}
    assert kept(following, previous)["count"] == 2
    # The results of a turn of several calls are chunks too.
    two = AIMessageChunk("", tool_call_chunks=[chunk, {**chunk, "id": "b", "index": 1}])
    answered = [
        two,
        ToolMessageChunk("one", tool_call_id="a"),
        ToolMessageChunk("2", tool_call_id="b"),
    ]
    found = latest(answered)
    assert not found.waiting
    assert [(c.id, c.result) for c in found.calls] == [("a", "one"), ("b", "2")]


def test_the_guards_reminder_after_a_turn_is_not_the_user_speaking() -> None:
    record: Record = {"turn": "t0", "tool": "probe", "key": _digest({}), "count": 1}
    reminder = reminder_message(Reminder("probe", 2, "gentle", "{}"), "human")
    messages = [turn(call("probe", None, "a")), result("a"), reminder, SystemMessage("rules")]
    tally = counted(messages, record)
    assert tally.record is not None
    assert tally.record["count"] == 2 and len(tally.reminders) == 1
    # Nor before the next turn: the run goes on.
    messages += [turn(call("probe", None, "b")), result("b")]
    assert kept(messages, tally.record)["count"] == 3


def test_a_reminder_drawn_is_taken_to_reach_the_model_unless_told_otherwise() -> None:
    messages = [turn(call("probe", None, "a"), call("probe", None, "b")), result("a"), result("b")]
    assert kept(messages)["reminded"]
    assert not kept(messages, reminders_reach_model=False)["reminded"]


def test_the_guards_own_messages_and_every_harness_notification_are_not_the_user() -> None:
    reminder = Reminder("probe", 2, "gentle", "{}")
    assert not is_user_message(reminder_message(reminder, "human"))
    assert not is_user_message(
        HumanMessage("summary", additional_kwargs={"lc_source": "summarization"})
    )
    # langchain-core's mark of a message the user did not type: any source, not only ours.
    for source in ("hitl_interrupt_decision", "rubric_grader", "pinned_skill", "async_subagent"):
        notice = add_notification_metadata(HumanMessage("update"), source=source)
        assert not is_user_message(notice)
    assert not is_user_message(SystemMessage("rules"))
    assert is_user_message(HumanMessage("hello", additional_kwargs={"lc_source": None}))
    assert is_user_message(HumanMessage("hello", additional_kwargs={"lc_source": 3}))
    assert is_user_message(HumanMessageChunk("hello"))


def test_a_model_that_answers_after_a_reminder_it_saw_has_recovered() -> None:
    record: Record = {"turn": "t", "tool": "probe", "key": "d", "count": 3, "reminded": True}
    tally = counted([HumanMessage("go"), AIMessage("the answer")], record)
    assert tally.followups == [True] and tally.record == {**record, "reminded": False}
    # The guard's own final message is not the model answering.
    escalation = Escalation("probe", 9, "repeat", "{}", "end")
    assert counted([escalation_message(escalation)], record) == Count(None)


def test_the_guards_own_final_message_is_not_the_model_stopping() -> None:
    record: Record = {
        "turn": "#0:a",
        "tool": "probe",
        "key": _digest({}),
        "count": 3,
        "reminded": True,
    }
    escalation = Escalation("probe", 3, "repeat", "{}", "end")
    messages = [
        turn(call("probe", None, "a")),
        result("a"),
        escalation_message(escalation),
        HumanMessage("try once more"),
        turn(call("probe", None, "b")),
        result("b"),
    ]
    assert list(counted(messages, record).followups) == []


def test_a_stop_after_a_reminder_is_seen_when_the_next_turn_is_counted() -> None:
    record: Record = {"turn": "t0", "tool": "probe", "key": "d", "count": 3, "reminded": True}
    messages = [
        turn(call("probe", None, "a")),
        result("a"),
        AIMessage("the answer"),
        HumanMessage("now something else"),
        turn(call("other", None, "b")),
        result("b"),
    ]
    tally = counted(messages, record)
    assert tally.followups == [True] and tally.record is not None
    assert tally.record["count"] == 1  # the user spoke: counting started over
    assert tally.record["reminded"] is False
    # The same when the model goes on, unasked, with tools the guard does not count.
    untracked = ReminderConfig(thresholds=[2], exclude=["other"])
    unasked = [m for m in messages if not isinstance(m, HumanMessage)]
    tally = counted(unasked, record, untracked)
    assert tally.followups == [True] and tally.record is not None
    assert tally.record["reminded"] is False


def test_a_model_that_makes_the_reminded_call_again_has_not_recovered() -> None:
    record: Record = {
        "turn": "#0:a",
        "tool": "probe",
        "key": _digest({}),
        "count": 2,
        "reminded": True,
    }
    messages = [turn(call("probe", None, "a")), result("a"), turn(call("probe", None, "b"))]
    assert list(counted([*messages, result("b")], record).followups) == [False]
    # Nor is a model that stopped when it had not been reminded.
    stopped = [*messages[:2], AIMessage("done"), HumanMessage("again"), *messages[2:]]
    assert list(counted([*stopped, result("b")], {**record, "reminded": False}).followups) == []


def test_state_reading_takes_dicts_objects_and_nothing() -> None:
    class State:
        def __init__(self) -> None:
            self.messages = [HumanMessage("hi")]

    assert read_messages(State(), "messages") == State().messages
    assert read_messages({}, "messages") == ()
    assert read_messages({"messages": "not a list"}, "messages") == ()
    assert read_state(object(), "repeat_tool_reminder") is None
    assert read_state({"repeat_tool_reminder": {"count": 1}}, "repeat_tool_reminder") == {
        "count": 1
    }
    assert read_turn(list(read_messages({}, "messages")), "") is NOTHING
    assert read_turn([HumanMessage("hi")], "") == Turn(spoke_after=True)


def test_an_escalation_is_predicted_for_the_call_that_would_reach_the_limit() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3, exit_behavior="block")
    record: Record = {"turn": "t0", "tool": "probe", "key": _digest({"q": 1}), "count": 1}
    pending = turn(
        call("probe", {"q": 1}, "x"), call("probe", {"q": 1}, "y"), call("other", None, "z")
    )
    assert predict(record, [pending], "x", config) is None
    predicted = predict(record, [pending], "y", config)
    assert predicted is not None and predicted.count == 3
    assert predict(record, [pending], "z", config) is None
    assert predict(record, [pending], "unknown", config) is None
    assert predict(record, [], "y", config) is None
    # A user message since the last counted turn starts the count over.
    assert predict(record, [HumanMessage("stop"), pending], "y", config) is None


@pytest.mark.parametrize(
    ("tools", "target"),
    [(["poller", "poller", "poller"], 2), (["probe", "probe", "poller"], 2), (["poller"], 0)],
)
def test_a_call_the_guard_does_not_count_is_never_predicted_to_escalate(
    tools: list[str], target: int
) -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3, exit_behavior="block")
    record: Record = {"turn": "t0", "tool": "probe", "key": _digest({}), "count": 1}
    pending = turn(*[call(tool, None, f"c{n}") for n, tool in enumerate(tools)])
    policies = {"poller": ToolPolicy(exclude=True)}
    assert predict(record, [pending], f"c{target}", config, policies) is None
    if tools[1:2] == ["probe"]:  # the call before it does escalate
        assert predict(record, [pending], "c1", config, policies) is not None


def test_a_user_role_message_the_configuration_says_is_not_the_user_resets_nothing() -> None:
    feedback = HumanMessage("Please always provide EXACTLY ONE action.")
    harness = ReminderConfig(thresholds=[2], not_user="EXACTLY ONE")
    record: Record = {"turn": "#0:a", "tool": "probe", "key": _digest({}), "count": 1}
    messages = [turn(call("probe", None, "a")), result("a"), feedback]
    messages += [turn(call("probe", None, "b")), result("b")]
    assert kept(messages, record)["count"] == 1  # the user spoke: counting starts over
    assert kept(messages, record, config=harness)["count"] == 2
    by_function = ReminderConfig(thresholds=[2], not_user=lambda text: "EXACTLY" in text)
    assert kept(messages, record, config=by_function)["count"] == 2
    assert is_user_message(HumanMessage("hello"), user_test(harness.not_user))
    assert not is_user_message(feedback, user_test(harness.not_user))
    assert not is_user_message(feedback, user_test(by_function.not_user))


def by_marker(message: HumanMessage) -> bool:
    return message.name == "grader"


def unresolved(text: Any) -> bool:
    return text == "Grade: B"


unresolved.__annotations__["text"] = "NoSuchClass"  # an annotation that cannot be read


def by_text(text: str) -> bool:
    return text.startswith("Grade")


def test_not_user_may_read_the_message_itself_when_it_says_it_takes_one() -> None:
    graded = HumanMessage("Looks good so far.", name="grader")
    assert not is_user_message(graded, user_test(by_marker))
    assert is_user_message(HumanMessage("Looks good so far."), user_test(by_marker))
    # A function of the text gets the text, annotated or not; so does one with no signature.
    assert not is_user_message(HumanMessage("Grade: B"), user_test(by_text))
    assert not is_user_message(HumanMessage("Grade: B"), user_test(lambda t: t[0] == "G"))
    assert is_user_message(HumanMessage("ok"), user_test(str.isupper))
    assert not is_user_message(HumanMessage("Grade: B"), user_test(unresolved))  # the text
    assert not is_user_message(HumanMessage("Grade: B"), user_test(methodcaller("startswith", "G")))
    assert not is_user_message(HumanMessage("OK"), user_test(str.isupper))
    record: Record = {"turn": "#0:a", "tool": "probe", "key": _digest({}), "count": 1}
    messages = [turn(call("probe", None, "a")), result("a"), graded]
    messages += [turn(call("probe", None, "b")), result("b")]
    assert kept(messages, record, config=ReminderConfig(not_user=by_marker))["count"] == 2


# -- the guard's own messages ---------------------------------------------------------------


def test_is_reminder_is_true_only_for_the_guards_messages() -> None:
    tag = {"lc_source": "repeat_tool_reminder", "repeat_tool_reminder": {"level": "gentle"}}
    assert not is_reminder(HumanMessage("hi"))
    assert not is_reminder(SystemMessage("sys", name="repeat_tool_reminder"))
    assert not is_reminder(
        HumanMessage("x", additional_kwargs={"lc_source": "repeat_tool_reminder"})
    )
    assert not is_reminder(AIMessage("x", additional_kwargs=tag))
    # Both marks are needed, and the tag must be one.
    assert not is_reminder(HumanMessage("x", additional_kwargs={"repeat_tool_reminder": tag}))
    assert not is_reminder(
        HumanMessage("x", additional_kwargs={**tag, "repeat_tool_reminder": "gentle"})
    )
    assert not is_reminder(SimpleNamespace(type="human"))  # message-like, without tags
    assert not is_reminder("a string")
    assert not is_reminder(None)
