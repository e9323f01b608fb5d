"""Writing the guard's messages, and rendering stored reminders for each provider (offline)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import ConfigurableField, RunnableLambda

from repeat_reminder_langchain import (
    Escalation,
    Reminder,
    ReminderConfig,
    prepare_messages,
    stop_reason,
)
from repeat_reminder_langchain._canonical import digest
from repeat_reminder_langchain._conversation import SOURCE, is_reminder, tag_of
from repeat_reminder_langchain._counter import LoopCounter
from repeat_reminder_langchain._messages import (
    as_user_turn,
    blocked_result,
    escalation_message,
    finish_message,
    latest_results,
    loop_context,
    reminder_message,
    shown_once,
    wrap,
)
from repeat_reminder_langchain._reminder import LoopContext

from .helpers import ScriptedModel, assert_adjacent, call, scripted, turn

SAME = {"q": "same"}


def test_two_adjacent_stored_reminders_are_both_rendered_with_their_ids() -> None:
    # Two tools reaching a threshold in one turn store two reminders side by side.
    first = reminder_message(Reminder("probe", 3, "gentle", "{}"))
    second = reminder_message(Reminder("other", 3, "gentle", "{}"))
    turn = AIMessage("", tool_calls=[{"name": "probe", "args": SAME, "id": "toolu_01"}])
    conversation = [
        SystemMessage("You are a careful agent."),
        HumanMessage("go"),
        turn,
        ToolMessage("probed same", tool_call_id="toolu_01"),
        first,
        second,
    ]
    prepared = prepare_messages(conversation, None)

    assert [m.type for m in prepared[-2:]] == ["human", "human"]
    assert [m.id for m in prepared[-2:]] == [first.id, second.id]
    assert prepared[-1].content == wrap(second.text)
    assert all(is_reminder(m) for m in prepared[-2:])
    assert conversation[-1] is second  # the stored conversation is left as it is


def test_a_user_turn_rendering_keeps_name_id_and_tags() -> None:
    stored = reminder_message(Reminder("probe", 3, "gentle", "{}"))
    rendered = as_user_turn(stored)
    assert (rendered.name, rendered.id, rendered.additional_kwargs) == (
        stored.name,
        stored.id,
        stored.additional_kwargs,
    )
    assert reminder_message(Reminder("probe", 3, "gentle", "{}"), "human").id


def test_the_guards_final_message_and_refusals_are_tagged() -> None:
    escalation = Escalation("probe", 9, "repeat", "{}", "end")
    tags = {"lc_source": "repeat_tool_reminder", "repeat_tool_reminder": escalation.tag()}
    final = escalation_message(escalation)
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert (final.content, final.name, final.additional_kwargs) == (
        escalation.text,
        "repeat_tool_reminder",
        tags,
    )
    assert final.additional_kwargs["repeat_tool_reminder"]["level"] == "escalated"
    refused = blocked_result(escalation, "call_9")
    assert (refused.tool_call_id, refused.status, refused.name) == ("call_9", "error", "probe")
    assert refused.additional_kwargs == tags
    assert not is_reminder(final) and not is_reminder(refused)


def test_a_refused_call_says_it_was_not_run_and_what_to_do_instead() -> None:
    refused = blocked_result(Escalation("probe", 6, "repeat", '{"q":"same"}', "block"), "call_6")
    assert refused.content == (
        "Not run: `probe` is looping (the same call with the same arguments 6 times), and one "
        "more call will not change that. Choose a different action or different arguments, or "
        "finish with what you have."
    )


ESCALATION = Escalation("probe", 6, "repeat", "{}", "block")
WRITERS: dict[str, Callable[[], BaseMessage]] = {
    "reminder": lambda: reminder_message(Reminder("probe", 3, "gentle", "{}")),
    "final message": lambda: escalation_message(ESCALATION),
    "refusal": lambda: blocked_result(ESCALATION, "call_6"),
}


@pytest.mark.parametrize("write", WRITERS.values(), ids=WRITERS.keys())
def test_every_message_the_guard_writes_has_a_fresh_id_of_its_own(
    write: Callable[[], BaseMessage],
) -> None:
    first, second = write(), write()
    assert first.id is not None and first.id.startswith("repeat_tool_reminder-")
    assert first.id != second.id


class PinnedSystemMessage(SystemMessage):
    """An application's own kind of system message, as a conversation store may rebuild one."""


def test_stored_reminders_are_rendered_whatever_system_message_class_holds_them() -> None:
    stored = reminder_message(Reminder("probe", 3, "gentle", "{}"))
    pinned = PinnedSystemMessage(
        content=stored.content,
        name=stored.name,
        id="repeat_tool_reminder-pinned",
        additional_kwargs=stored.additional_kwargs,
    )
    conversation = [SystemMessage("You are a careful agent."), HumanMessage("go"), pinned, stored]
    prepared = prepare_messages(conversation, None)

    assert [m.type for m in prepared] == ["system", "human", "human", "human"]
    assert [m.id for m in prepared[2:]] == [pinned.id, stored.id]


# -- which models get stored system reminders as they are -------------------------------------


def stored_conversation() -> list[BaseMessage]:
    """A system prompt, a tool turn, its result, and the stored system reminder after it."""
    return [
        SystemMessage("You are a careful agent."),
        HumanMessage("go"),
        turn(call("probe", SAME, "toolu_01")),
        ToolMessage("probed same", tool_call_id="toolu_01"),
        reminder_message(Reminder("probe", 3, "gentle", "{}")),
    ]


def chat_model(profile: dict[str, Any] | None) -> ScriptedModel:
    model = scripted([])
    model.profile = profile  # type: ignore[assignment]
    return model


def retried(model: Any, times: int) -> Any:
    for _ in range(times):
        model = model.with_retry()
    return model


CAPABLE = {"mid_conversation_system_messages": True}
MODELS: dict[str, tuple[Callable[[], Any], bool]] = {
    "a model that takes them": (lambda: chat_model(CAPABLE), True),
    "a model without a profile": (lambda: chat_model(None), False),
    "a model whose profile says no": (
        lambda: chat_model({"mid_conversation_system_messages": False}),
        False,
    ),
    "no model": (lambda: None, False),
    "a runnable with no model behind it": (lambda: RunnableLambda(lambda x: x), False),
    "bound": (lambda: chat_model(CAPABLE).bind(stop=["end"]), True),
    "bound then retried": (lambda: chat_model(CAPABLE).bind(stop=["end"]).with_retry(), True),
    "in a sequence": (lambda: RunnableLambda(lambda x: x) | chat_model(CAPABLE), True),
    "with configurable fields": (
        lambda: chat_model(CAPABLE).configurable_fields(verbose=ConfigurableField(id="verbose")),
        True,
    ),
    "with fallbacks that take them too": (
        lambda: chat_model(CAPABLE).with_fallbacks([chat_model(CAPABLE)]),
        True,
    ),
    "with a fallback that does not": (
        lambda: chat_model(CAPABLE).with_fallbacks([chat_model(None)]),
        False,
    ),
    # The walk through wrappers stops after eight (a guard against cycles); a model deeper
    # than that counts as unknown, so reminders are rendered: the form every provider accepts.
    "eight wrappers deep": (lambda: retried(chat_model(CAPABLE), 8), True),
    "nine wrappers deep": (lambda: retried(chat_model(CAPABLE), 9), False),
}


@pytest.mark.parametrize(("make", "kept"), MODELS.values(), ids=MODELS.keys())
def test_stored_reminders_stay_system_messages_only_if_every_model_behind_takes_them(
    make: Callable[[], Any], kept: bool
) -> None:
    conversation = stored_conversation()
    prepared = prepare_messages(conversation, make())

    assert prepared[0] is conversation[0]  # the system prompt is never touched
    if kept:
        assert prepared is conversation
    else:
        assert prepared[-1] == as_user_turn(conversation[-1])
        assert prepared[:-1] == conversation[:-1]


def test_prepare_messages_gives_a_list_and_the_conversation_itself_when_nothing_changes() -> None:
    plain = [SystemMessage("rules"), HumanMessage("go"), SystemMessage("note")]
    assert prepare_messages(plain, None) is plain
    assert prepare_messages(tuple(plain), None) == plain
    conversation = stored_conversation()
    assert prepare_messages(tuple(conversation), chat_model(CAPABLE)) == conversation


def test_a_turns_reminders_are_one_message_of_the_type_asked_each_in_a_paragraph() -> None:
    due = [Reminder("probe", 3, "gentle", "{}"), Reminder("other", 5, "detailed", "{}")]
    for message_type, kind in (("system", SystemMessage), ("human", HumanMessage)):
        written = reminder_message(due, message_type)  # type: ignore[arg-type]
        assert type(written) is kind and is_reminder(written)
        tag = written.additional_kwargs["repeat_tool_reminder"]
        assert tag == {
            **due[0].tag(),
            "summary": "probe × 3 · other × 5",
            "level": "detailed",  # the firmest of the two
            "reminders": [r.tag() for r in due],
        }
    assert reminder_message(due, "human").content == wrap(f"{due[0].text}\n\n{due[1].text}")
    assert reminder_message(due[:1]).additional_kwargs == reminder_message(due[0]).additional_kwargs
    gentle = [due[0], Reminder("third", 3, "gentle", "{}")]
    assert reminder_message(gentle).additional_kwargs["repeat_tool_reminder"]["level"] == "gentle"


def test_the_stop_reason_is_the_latest_stop_since_the_user_spoke() -> None:
    first = Escalation("probe", 6, "repeat", "{}", "block", "d", limit=6)
    last = Escalation("probe", 7, "repeat", "{}", "end", "d", limit=6)
    stopped = [
        AIMessage("", tool_calls=[call("probe", {}, "c1")]),
        blocked_result(first, "c1"),
        escalation_message(last),
    ]
    # A history with no user message in it (handed in by a harness) is read whole.
    assert stop_reason(stopped) == last
    assert stop_reason(stopped[:2]) == first
    assert stop_reason([]) is None
    assert stop_reason([HumanMessage("go"), *stopped, HumanMessage("again")]) is None
    assert stop_reason({"messages": stopped, "repeat_tool_reminder": {}}) == last


@pytest.mark.parametrize(
    ("given", "named"), [(None, "NoneType"), (AIMessage("hi"), "AIMessage"), ("the answer", "str")]
)
def test_a_stop_reason_of_what_is_no_result_is_a_clear_error(given: object, named: str) -> None:
    # It was: `TypeError: 'NoneType' object is not reversible`, or None for a string.
    with pytest.raises(TypeError) as caught:
        stop_reason(given)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "stop_reason takes what the agent returned (a dict with messages), a state, or the "
        f"messages; got {named}"
    )


def test_a_stop_reason_of_a_mapping_without_messages_says_so() -> None:
    # It was: None, as if the run had stopped nothing.
    with pytest.raises(KeyError) as caught:
        stop_reason({"output": "done"})
    assert caught.value.args == (
        "stop_reason: no 'messages' in ['output']: pass what the agent returned, a state, or "
        "the messages",
    )


def _called(name: str, args: dict[str, Any], result: str, n: int, **fields: Any) -> list[Any]:
    return [
        AIMessage("", tool_calls=[call(name, args, f"c{n}")]),
        ToolMessage(result, tool_call_id=f"c{n}", **fields),
    ]


def _handed(run: list[Any], **fields: Any) -> str:
    """What a guard of `fields` hands over: failures judged as its counter judges them."""
    config = ReminderConfig(**fields)
    return latest_results(run, config, LoopCounter(config).failed)


def test_a_run_the_guard_ends_hands_over_the_latest_result_of_each_call() -> None:
    stopped = Escalation("probe", 4, "repeat", "{}", "end", limit=4)
    run = [
        HumanMessage("old question"),
        *_called("other", {"q": "before"}, "from an earlier question", 0),
        HumanMessage("is the job done?"),
        *_called("book", {"seat": "1A"}, "Error: payment declined", 1),
        *_called("other", {"q": "a"}, "first answer", 2),
        *_called("probe", {"q": "x"}, "running", 3),
        *_called("other", {"q": "a"}, "second\n  answer", 4),  # the same call: its latest
        *_called("probe", {"q": "x"}, "still running " + "." * 400, 5),
        *_called("grep", {"p": "y"}, "nothing", 6, status="error"),
    ]
    run.append(blocked_result(stopped, "c5"))  # the guard's refusal is no tool's result
    handed = _handed(run, error_pattern="^Error")
    assert handed.splitlines() == [
        "What the tools returned, the latest of each call:",
        # In the order the calls were last made; failures last; whitespace as one space.
        '- `other` ({"q":"a"}): second answer',
        '- `probe` ({"q":"x"}): still running '
        + "." * (300 - len("still running "))
        + "… (+114 more chars)",
        '- `book` ({"seat":"1A"}) failed: Error: payment declined',
        '- `grep` ({"p":"y"}) failed: nothing',
    ]
    # It was: the arguments by digest, unless log_arguments (which is for the log lines).
    assert digest('{"q":"a"}') not in _handed(run, log_arguments=False)
    assert '- `other` ({"q":… (+4 more chars)): second answer' in _handed(
        run, arguments_preview_chars=5
    )
    # The final message says which loop it stopped, then hands over.
    final = escalation_message(stopped, handed=handed)
    assert str(final.content) == f"{stopped.text}\n\n{handed}"
    assert _handed([HumanMessage("hi"), AIMessage("hello")]) == ""


def test_the_latest_results_are_in_the_order_the_calls_were_made_not_by_name() -> None:
    run = [
        *_called("search", {"q": "a"}, "3 hits", 0),
        *_called("write", {"f": "x"}, "Error: read-only", 1, status="error"),
        *_called("fetch", {"url": "b"}, "the page", 2),
        *_called("check", {}, "Error: denied", 3, status="error"),
    ]
    assert _handed(run).splitlines()[1:] == [
        '- `search` ({"q":"a"}): 3 hits',
        '- `fetch` ({"url":"b"}): the page',
        '- `write` ({"f":"x"}) failed: Error: read-only',
        "- `check` ({}) failed: Error: denied",
    ]


def test_the_recap_is_the_users_request_and_the_loops_latest_result() -> None:
    run = [
        HumanMessage("old question"),
        *_called("probe", {"q": "x"}, "from an earlier question", 0),
        HumanMessage("is   the job\ndone?"),
        *_called("probe", {"q": "x"}, "running", 1),
        *_called("other", {"q": "a"}, "elsewhere", 2),
        *_called("probe", {"q": "x"}, "still running " + "." * 400, 3),
    ]
    run.append(blocked_result(Escalation("probe", 4, "repeat", "{}", "block"), "c3"))
    seen = loop_context(run, "probe")
    # The latest result of the loop's tool (not the guard's refusal), one line, cut.
    assert seen.request == "is the job done?"
    assert seen.result.startswith("still running ...") and seen.result.endswith("more chars)")
    assert loop_context(run, "other") == LoopContext("is the job done?", "elsewhere")
    assert loop_context(run[:4], "other") == LoopContext("is the job done?", "")  # not called since
    assert loop_context(run[1:3], "probe") == LoopContext(
        "", "from an earlier question"
    )  # no user message


def _asked(run: list[Any], tool: str = "probe") -> list[Any]:
    """`run`, then the guard's request for the model's answer about a loop on `tool`."""
    stopped = Escalation(tool, 3, "repeat", "{}", "finish", limit=3)
    return [*run, finish_message(stopped, "human", seen=loop_context(run, tool))]


def test_the_last_call_is_shown_the_loop_once() -> None:
    reminder = reminder_message(Reminder("probe", 3, "gentle", "{}"), "human")
    run = [
        HumanMessage("is the job done?"),
        *_called("other", {"q": "a"}, "elsewhere", 0),
        *_called("probe", {"q": "x"}, "running 1", 1),
        *_called("probe", {"q": "x"}, "running 2", 2),
        *_called("probe", {"q": "x"}, "running 3", 3),
        reminder,
        AIMessage(
            "", tool_calls=[call("probe", {"q": "x"}, "c4"), call("probe", {"q": "x"}, "c5")]
        ),
        ToolMessage("running 4", tool_call_id="c4"),
        ToolMessage("running 5", tool_call_id="c5"),
    ]
    asked = _asked(run)
    shown = shown_once(asked)
    # One call, the latest result in its place, the reminder left out; the rest as it is.
    assert [m.text for m in shown] == [
        "is the job done?",
        "",
        "elsewhere",
        "",
        "running 5",
        asked[-1].text,
    ]
    assert shown[3].tool_calls[0]["id"] == shown[4].tool_call_id == "c1"
    assert_adjacent(shown)
    assert shown[-1] is asked[-1] and "running 5" in asked[-1].text
    assert len(asked) == len(run) + 1  # what is stored is unchanged
    # A first turn of identical calls keeps each: each gets the latest result.
    batch = _asked([HumanMessage("go"), *run[10:13], *_called("probe", {"q": "x"}, "last", 6)])
    assert [(m.type, m.text) for m in shown_once(batch)[1:4]] == [
        ("ai", ""),
        ("tool", "last"),
        ("tool", "last"),
    ]
    assert [m.tool_call_id for m in shown_once(batch)[2:4]] == ["c4", "c5"]
    assert_adjacent(shown_once(batch))


def test_only_a_request_for_the_answer_with_its_loop_in_sight_changes_what_is_shown() -> None:
    # A tag read back from a checkpoint may hold anything: a behavior that is no name.
    unnamed = {"lc_source": SOURCE, SOURCE: {"tool": "probe", "behavior": ["finish"]}}
    run = [
        HumanMessage("go"),
        *_called("probe", {"q": "x"}, "r", 1),
        *_called("probe", {"q": "x"}, "r", 2),
    ]
    for messages in (
        [],
        run,
        [*run, reminder_message(Reminder("probe", 3, "gentle", "{}"))],  # no request for the answer
        [*run, escalation_message(Escalation("probe", 3, "repeat", "{}", "end"))],  # a run's end
        _asked(run, tool="other"),  # its loop is not since the user spoke
        [*run, SystemMessage("answer now", additional_kwargs=unnamed)],
        _asked([HumanMessage("go"), AIMessage("", tool_calls=[call("probe", {"q": "x"}, "c9")])]),
    ):
        assert shown_once(messages) is messages
    assert tag_of(_asked(run)[-1]) is not None
    # A history handed in with no user message in it is read whole.
    assert [m.text for m in shown_once(_asked(run[1:]))][:2] == ["", "r"]
    assert len(shown_once(_asked(run[1:]))) == 3


def test_an_earlier_questions_calls_of_the_looping_tool_are_shown_as_they_were() -> None:
    run = [
        HumanMessage("is the job done?"),
        *_called("probe", {"q": "x"}, "running 0", 0),
        AIMessage("Not yet: it is running."),
        HumanMessage("and now?"),
        *_called("probe", {"q": "x"}, "running 1", 1),
        *_called("probe", {"q": "x"}, "running 2", 2),
        reminder_message(Reminder("probe", 2, "gentle", "{}"), "human"),
        *_called("probe", {"q": "x"}, "running 3", 3),
    ]
    asked = _asked(run)
    shown = shown_once(asked)
    # Only the loop since the user last spoke is shown once; what they were told stands.
    assert shown[:5] == run[:5]
    assert [(m.type, m.text) for m in shown[5:-1]] == [("ai", ""), ("tool", "running 3")]
    assert shown[-1] is asked[-1]
    assert_adjacent(shown)


def test_a_loop_of_calls_without_ids_is_sent_each_call_followed_by_its_result() -> None:
    # Some models send empty call ids, and the tools node answers each call with that id.
    run = [HumanMessage("go"), *_called("other", {"q": "a"}, "elsewhere", 0)]
    for n in range(3):
        no_id = {"name": "probe", "args": {"q": "x"}, "id": "", "type": "tool_call"}
        run += [AIMessage("", tool_calls=[no_id]), ToolMessage(f"running {n}", tool_call_id="")]
    assert_adjacent(shown_once(_asked(run)))
    # A loop whose model gave its first call an id and the next none is sent whole as well: the
    # result without an id is no call's that the loop's could stand for.
    mixed = _asked([HumanMessage("go"), *_called("probe", {"q": "x"}, "running 0", 0), *run[-2:]])
    assert shown_once(mixed) is mixed
    assert_adjacent(mixed)


def _unnamed(name: str, args: dict[str, Any], result: str) -> list[Any]:
    """A call without an id, as some models send it, answered as the tools node answers it."""
    no_id = {"name": name, "args": args, "id": "", "type": "tool_call"}
    return [AIMessage("", tool_calls=[no_id]), ToolMessage(result, tool_call_id="")]


def test_a_result_without_an_id_is_never_said_to_be_another_calls() -> None:
    # Each answered with the id "": which result is whose cannot be told, so none is said.
    run = [
        HumanMessage("find it"),
        *_called("probe", {"q": "x"}, "running", 0),
        *_unnamed("search", {"q": "a"}, "found A"),
        *_unnamed("fetch", {"url": "b"}, "page B"),
    ]
    assert _handed(run).splitlines()[1:] == ['- `probe` ({"q":"x"}): running']
    assert loop_context(run, "search") == LoopContext("find it", "")
    # A loop of calls without ids, another such call within it: the loop is sent whole, each
    # call followed by its own result, where the other call's result was taken for the loop's.
    looping = [HumanMessage("go"), *_unnamed("probe", {"q": "x"}, "running 0")]
    looping += [*_unnamed("other", {"q": "a"}, "elsewhere"), *_unnamed("probe", {"q": "x"}, "1")]
    asked = _asked(looping)
    assert shown_once(asked) is asked
    assert_adjacent(shown_once(asked))


def test_the_latest_results_keep_the_latest_calls_within_their_cap() -> None:
    run: list[Any] = []  # a history with no user message in it is read whole
    for n in range(9):
        run += _called("read", {"page": n}, f"page {n}", n)
    lines = _handed(run).splitlines()[1:]
    assert lines == [f'- `read` ({{"page":{n}}}): page {n}' for n in range(3, 9)]
