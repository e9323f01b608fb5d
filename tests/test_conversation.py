"""Reading a conversation: the latest turn, its results, who spoke, and when the model stopped."""

from __future__ import annotations

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
)

from repeat_reminder_langchain import Reminder, ReminderConfig
from repeat_reminder_langchain._conversation import (
    Turn,
    _follows_previous_turn,
    continues,
    is_user_message,
    latest_turn,
    predict_escalation,
    read_messages,
    read_state,
    tally_conversation,
)
from repeat_reminder_langchain._streaks import Streaks
from repeat_reminder_langchain.canonical import canonicalize, digest
from repeat_reminder_langchain.messages import (
    blocked_result,
    escalation_message,
    reminder_message,
)
from repeat_reminder_langchain.policy import ToolPolicy
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
    assert [(c.id, c.tool, c.result, c.error) for c in found.calls] == [
        ("a", "probe", "first", False),
        ("b", "probe", "second", True),
    ]


@pytest.mark.parametrize("ids", [["a"], ["a", "b"]])
def test_a_turn_is_not_complete_until_every_call_has_its_result(ids: list[str]) -> None:
    asked = [HumanMessage("go"), turn(*[call("probe", None, i) for i in ids])]
    messages = [*asked, *(result(i) for i in ids[1:])]
    assert latest_turn(messages) == Turn(f"#1:{chr(31).join(ids)}", 1, (), False)
    assert counted(messages).calls == 0


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
    found = latest_turn(messages)
    assert found is not None and found.complete
    assert [(c.result, c.error) for c in found.calls] == [read] + [("ok", False)] * others


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
    assert [(c.id, c.args) for c in found.calls] == [("", {"q": 1}), ("", {"q": 2})]
    assert counted([message]).streaks.count == 1  # two different calls


def test_two_turns_without_message_ids_that_reuse_call_ids_stay_two_turns() -> None:
    first = [turn(call("probe", None, "call_0")), result("call_0")]
    second = [*first, turn(call("probe", None, "call_0")), result("call_0")]
    after_first = counted(first).streaks
    tally = counted(second, after_first)
    assert tally.calls == 1 and tally.streaks.count == 2
    assert latest_turn(first).id != latest_turn(second).id  # type: ignore[union-attr]


def test_a_turn_reusing_a_call_id_waits_for_its_own_result_not_the_previous_turns() -> None:
    first = [turn(call("probe", None, "call_0")), result("call_0")]
    second = [*first, turn(call("probe", None, "call_0"), call("ls", None, "call_1"))]
    half = [*second, result("call_1")]
    assert not latest_turn(half).complete  # type: ignore[union-attr]
    assert counted(half, counted(first).streaks).waiting
    assert latest_turn([*half, result("call_0")]).complete  # type: ignore[union-attr]


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
    assert latest_turn(messages).id == stored  # type: ignore[union-attr]
    assert counted(messages).streaks.turn == stored
    assert continues([*messages, HumanMessage("a reminder, say")], stored)


def steady() -> list[Any]:
    """The most common step: a turn with one call, answered, right after the previous one's."""
    return [
        HumanMessage("go"),
        AIMessage("", id="t1", tool_calls=[call("probe", {"q": 1}, "a")]),
        result("a"),
        AIMessage("", id="t2", tool_calls=[call("probe", {"q": 2}, "b")]),
        result("b", "no such file", status="error"),
    ]


def test_the_common_step_is_known_from_its_last_four_messages() -> None:
    messages = steady()
    assert _follows_previous_turn(messages, len(messages))
    assert not _follows_previous_turn(messages, 3)  # as it stood then: the first turn


def _replace(position: int, message: Any) -> Any:
    def change(messages: list[Any]) -> None:
        messages[position] = message

    return change


def _insert(position: int, message: Any) -> Any:
    def change(messages: list[Any]) -> None:
        messages.insert(position, message)

    return change


TWO_CALLS = AIMessage("", id="t2", tool_calls=[call("probe", {"q": 2}, "b"), call("ls", None, "c")])
STOPPED = AIMessage("I am done", id="t1")


INVALID_TOO = AIMessage(
    "",
    id="t2",
    tool_calls=[call("probe", {"q": 2}, "b")],
    invalid_tool_calls=[{**INVALID, "name": "probe", "args": "{", "id": "c"}],
)
# Steps other than the common one: whether each still has its shape (and takes the shortcut,
# the turn itself read as every turn is), or not.
VARIANTS = pytest.mark.parametrize(
    ("change", "shortcut"),
    [
        pytest.param(_insert(3, HumanMessage("and now?")), False, id="the user spoke between"),
        pytest.param(_replace(1, STOPPED), False, id="the model had stopped before"),
        pytest.param(_insert(3, result("a", "again")), False, id="two results before"),
        pytest.param(_replace(4, HumanMessage("stop")), False, id="the user spoke last"),
        pytest.param(_replace(2, SystemMessage("a note")), False, id="no result before"),
        pytest.param(
            _replace(3, AIMessageChunk("", id="t2", tool_calls=[call("probe", None, "b")])),
            False,
            id="a chunk",
        ),
        pytest.param(
            _replace(3, AIMessage("an answer", id="t2")), True, id="a result after an answer"
        ),
        pytest.param(
            _replace(3, AIMessage("", id="t2", invalid_tool_calls=[{**INVALID, "id": "b"}])),
            True,
            id="only an invalid call",
        ),
        pytest.param(_replace(3, TWO_CALLS), True, id="two calls"),
        pytest.param(
            _replace(3, AIMessage("", tool_calls=[call("probe", {"q": 2}, "b")])),
            True,
            id="no turn id",
        ),
        pytest.param(
            _replace(3, AIMessage("", id="t2", tool_calls=[{**call("probe"), "id": None}])),
            True,
            id="a call without an id",
        ),
        pytest.param(_replace(3, INVALID_TOO), True, id="an invalid call too"),
        pytest.param(_replace(4, result("z")), True, id="the result answers another call"),
    ],
)
# The newest call made once already (so a reset shows), or a reminder to follow up.
BEFORE = [
    Streaks(turn="t1", tool="probe", digest=digest(canonicalize({"q": 2})), count=1),
    Streaks(turn="t1", reminded=True),
]


@VARIANTS
def test_only_a_turn_right_after_the_previous_result_takes_the_shortcut(
    change: Any, shortcut: bool
) -> None:
    messages = steady()
    change(messages)
    assert _follows_previous_turn(messages, len(messages)) is shortcut


@VARIANTS
@pytest.mark.parametrize("before", BEFORE)
def test_every_step_counts_as_the_general_reading_counts_it(
    change: Any, shortcut: bool, before: Streaks
) -> None:
    messages = steady()
    change(messages)
    # A message after the result makes the general reading read it, and it finds the same.
    assert counted(messages, before) == counted([*messages, SystemMessage("a note")], before)


def test_the_common_step_is_counted_once() -> None:
    messages = steady()
    tally = counted(messages, Streaks(turn="t1", tool="probe", digest="d", count=1))
    assert (tally.calls, tally.streaks.turn, tally.streaks.count) == (1, "t2", 1)
    assert counted(messages, Streaks(turn="t2")).calls == 0  # counted already


def test_a_conversation_continues_a_turn_only_while_that_turn_is_its_latest() -> None:
    messages = [HumanMessage("go"), turn(call("probe", None, "a")), result("a")]
    counted_turn = counted(messages).streaks.turn
    assert continues(messages, counted_turn)
    assert not continues([*messages, turn(call("probe", None, "b"))], counted_turn)
    assert not continues([*messages, AIMessage("a side answer", id="m2")], counted_turn)
    assert not continues([HumanMessage("go")], counted_turn)
    assert not continues([], "")


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
    assert [(c.id, c.tool, c.args, c.result, c.error) for c in found.calls] == [
        ("", "probe", {}, None, False),
        ("", "probe", "{bad", None, False),
        ("d", "probe", "{bad", "Error: bad json", True),
    ]
    assert latest_turn([AIMessage("", invalid_tool_calls=[])]) is None
    # The same with one valid call that has its id and result.
    message = AIMessage(
        "",
        tool_calls=[call("probe", {}, "a")],
        invalid_tool_calls=[{**INVALID, "name": "probe", "args": "{bad", "id": "d"}],
    )
    found = latest_turn([message, result("a", "fine")])
    assert found is not None
    assert [(c.id, c.args, c.result) for c in found.calls] == [
        ("a", {}, "fine"),
        ("d", "{bad", None),
    ]


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


def test_a_conversation_read_up_to_end_ignores_what_came_after() -> None:
    streaks = Streaks(turn="t0", tool="probe", digest=_digest({}), count=1)
    messages = [turn(call("probe", None, "a")), result("a"), HumanMessage("new question")]
    tally = tally_conversation(streaks, messages, CONFIG, end=2)
    assert tally.streaks.count == 2 and len(tally.reminders) == 1


def test_a_user_message_that_came_in_while_the_tools_ran_resets_the_next_turn() -> None:
    streaks = Streaks(turn="#0:a", tool="probe", digest=_digest({}), count=1)
    messages = [
        turn(call("probe", None, "a")),
        HumanMessage("while you are at it"),
        result("a"),
        turn(call("probe", None, "b")),
        result("b"),
    ]
    assert counted(messages, streaks).streaks.count == 1


@pytest.mark.parametrize(
    ("messages", "waiting"),
    [
        ([turn(call("probe", None, "a")), result("a"), AIMessage("the answer")], False),
        ([turn(call("probe", None, "a")), result("a")], False),  # counted already
        ([turn(call("probe", None, "a"), call("probe", None, "b")), result("a")], True),
    ],
)
def test_with_no_new_turn_to_count_the_streaks_stay_until_the_user_speaks(
    messages: list[Any], waiting: bool
) -> None:
    streaks = Streaks(turn="#0:a", tool="probe", digest=_digest({}), count=3, escalations=1)
    tally = counted(messages, streaks)
    assert (tally.streaks, tally.calls, tally.waiting) == (streaks, 0, waiting)
    spoke = counted([*messages, HumanMessage("something else")], streaks)
    assert (spoke.streaks, spoke.calls, spoke.waiting) == (streaks.reset(), 0, waiting)
    assert spoke.streaks == Streaks(turn="#0:a", escalations=1)


def test_a_turn_is_counted_only_once() -> None:
    # Read again at every step: the user message before it must not reset it again.
    messages = [HumanMessage("go"), turn(call("probe", None, "a")), result("a")]
    first = counted(messages, Streaks(turn="t0", tool="probe", digest="d", count=4))
    again = counted(messages, first.streaks)
    assert (first.calls, first.streaks.count) == (1, 1)
    assert (again.calls, again.streaks) == (0, first.streaks)


def test_the_user_speaking_after_a_loop_calls_it_off_and_the_trace_shows_nothing_drawn() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3)
    streaks = Streaks(turn="t0", tool="probe", digest=_digest({}), count=2)
    messages = [turn(call("probe", None, "a")), result("a")]
    trace: list[Any] = []
    tally = tally_conversation(streaks, messages, config, trace=trace)
    assert tally.escalation is not None and [e.escalation for e in trace] == [tally.escalation]
    trace.clear()
    spoke = [*messages, HumanMessage("stop that")]
    tally = tally_conversation(streaks, spoke, config, trace=trace)
    assert (tally.escalation, tally.reminders, tally.streaks) == (None, (), Streaks(turn="#0:a"))
    assert [(e.streak, e.reminder, e.escalation) for e in trace] == [(3, None, None)]
    trace.clear()
    tally = tally_conversation(streaks._replace(count=1), spoke, config, trace=trace)
    assert [(e.streak, e.reminder, e.escalation) for e in trace] == [(2, None, None)]


def test_a_tool_that_declares_itself_excluded_is_not_counted() -> None:
    messages = [
        turn(call("poller", None, "a"), call("poller", None, "b")),
        result("a"),
        result("b"),
    ]
    policies = {"poller": ToolPolicy(exclude=True)}
    tally = tally_conversation(Streaks(), messages, CONFIG, policies)
    assert (tally.calls, tally.reminders, tally.streaks.count) == (0, [], 0)


def test_a_user_message_before_the_turn_resets_first() -> None:
    messages = [turn(call("probe", None, "a")), result("a"), HumanMessage("again")]
    streaks = counted(messages).streaks
    assert streaks.count == 0
    messages += [turn(call("probe", None, "b")), result("b")]
    assert (
        counted(messages, Streaks(turn="#0:a", tool="probe", digest="x", count=1)).streaks.count
        == 1
    )


def test_message_chunks_are_read_as_the_messages_they_are_part_of() -> None:
    chunk = {"name": "probe", "args": "{}", "id": "a", "index": 0}
    streaked = Streaks(turn="t0", tool="probe", digest=_digest({}), count=1)
    messages = [
        AIMessageChunk("", tool_call_chunks=[chunk]),
        ToolMessageChunk("ok", tool_call_id="a"),
    ]
    found = latest_turn([HumanMessage("go"), *messages])
    assert found is not None and found.position == 1
    assert [(c.id, c.result) for c in found.calls] == [("a", "ok")]
    assert counted(messages, streaked).streaks.count == 2
    assert counted([HumanMessageChunk("again"), *messages], streaked).streaks.count == 1
    assert counted([*messages, HumanMessageChunk("stop")], streaked).streaks.count == 0
    # A chunk is the previous turn too: a user message before it is not since it.
    following = [HumanMessage("go"), *messages, turn(call("probe", None, "b")), result("b")]
    previous = Streaks(turn="#1:a", tool="probe", digest=_digest({}), count=1)
    assert counted(following, previous).streaks.count == 2
    # The results of a turn of several calls are chunks too.
    two = AIMessageChunk("", tool_call_chunks=[chunk, {**chunk, "id": "b", "index": 1}])
    answered = [
        two,
        ToolMessageChunk("one", tool_call_id="a"),
        ToolMessageChunk("2", tool_call_id="b"),
    ]
    found = latest_turn(answered)
    assert found is not None and found.complete
    assert [(c.id, c.result) for c in found.calls] == [("a", "one"), ("b", "2")]


def test_the_guards_reminder_after_a_turn_is_not_the_user_speaking() -> None:
    streaks = Streaks(turn="t0", tool="probe", digest=_digest({}), count=1)
    reminder = reminder_message(Reminder("probe", 2, "gentle", "{}"), "human")
    messages = [turn(call("probe", None, "a")), result("a"), reminder, SystemMessage("rules")]
    tally = counted(messages, streaks)
    assert tally.streaks.count == 2 and len(tally.reminders) == 1
    # Nor before the next turn: the run goes on.
    messages += [turn(call("probe", None, "b")), result("b")]
    assert counted(messages, tally.streaks).streaks.count == 3


def test_a_reminder_drawn_is_taken_to_reach_the_model_unless_told_otherwise() -> None:
    messages = [turn(call("probe", None, "a"), call("probe", None, "b")), result("a"), result("b")]
    assert counted(messages).streaks.reminded
    assert not tally_conversation(Streaks(), messages, CONFIG, seen_by_model=False).streaks.reminded


def test_the_guards_own_messages_and_summaries_are_not_the_user() -> None:
    reminder = Reminder("probe", 2, "gentle", "{}")
    assert not is_user_message(reminder_message(reminder, "human"))
    assert not is_user_message(
        HumanMessage("summary", additional_kwargs={"lc_source": "summarization"})
    )
    assert not is_user_message(SystemMessage("rules"))
    assert is_user_message(HumanMessage("hello", additional_kwargs={"lc_source": "elsewhere"}))
    assert is_user_message(HumanMessageChunk("hello"))


def test_a_model_that_answers_after_a_reminder_it_saw_has_recovered() -> None:
    streaks = Streaks(turn="t", tool="probe", digest="d", count=3, reminded=True)
    tally = counted([HumanMessage("go"), AIMessage("the answer")], streaks)
    assert tally.followups == (True,) and tally.streaks == streaks._replace(reminded=False)
    assert tally.streaks.reminded is False  # as stored in a checkpoint
    # The guard's own final message is not the model answering.
    escalation = Escalation("probe", 9, "repeat", "{}", "end")
    assert counted([escalation_message(escalation)], streaks).followups == ()


def test_the_guards_own_final_message_is_not_the_model_stopping() -> None:
    streaks = Streaks(turn="#0:a", tool="probe", digest=_digest({}), count=3, reminded=True)
    escalation = Escalation("probe", 3, "repeat", "{}", "end")
    messages = [
        turn(call("probe", None, "a")),
        result("a"),
        escalation_message(escalation),
        HumanMessage("try once more"),
        turn(call("probe", None, "b")),
        result("b"),
    ]
    assert list(counted(messages, streaks).followups) == []


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
    assert tally.streaks.reminded is False
    # The same when the model goes on, unasked, with tools the guard does not count.
    untracked = ReminderConfig(thresholds=[2], exclude=["other"])
    unasked = [m for m in messages if not isinstance(m, HumanMessage)]
    tally = tally_conversation(streaks, unasked, untracked)
    assert tally.followups == (True,) and tally.streaks.reminded is False


def test_a_model_that_makes_the_reminded_call_again_has_not_recovered() -> None:
    streaks = Streaks(turn="#0:a", tool="probe", digest=_digest({}), count=2, reminded=True)
    messages = [turn(call("probe", None, "a")), result("a"), turn(call("probe", None, "b"))]
    assert list(counted([*messages, result("b")], streaks).followups) == [False]
    # Nor is a model that stopped when it had not been reminded.
    stopped = [*messages[:2], AIMessage("done"), HumanMessage("again"), *messages[2:]]
    assert list(counted([*stopped, result("b")], streaks._replace(reminded=False)).followups) == []


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


@pytest.mark.parametrize(
    ("tools", "target"),
    [(["poller", "poller", "poller"], 2), (["probe", "probe", "poller"], 2), (["poller"], 0)],
)
def test_a_call_the_guard_does_not_count_is_never_predicted_to_escalate(
    tools: list[str], target: int
) -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3, exit_behavior="block")
    streaks = Streaks(turn="t0", tool="probe", digest=_digest({}), count=1)
    pending = turn(*[call(tool, None, f"c{n}") for n, tool in enumerate(tools)])
    policies = {"poller": ToolPolicy(exclude=True)}
    assert predict_escalation(streaks, [pending], f"c{target}", config, policies) is None
    if tools[1:2] == ["probe"]:  # the call before it does escalate
        assert predict_escalation(streaks, [pending], "c1", config, policies) is not None


def _digest(args: Any) -> str:
    from repeat_reminder_langchain.canonical import canonicalize, digest

    return digest(canonicalize(args))
