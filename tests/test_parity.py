"""The original plugin's twenty spec cases, each on a real agent graph with a scripted model."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode

from repeat_reminder_langchain import RepeatToolReminderCallbackHandler
from repeat_reminder_langchain._conversation import is_reminder

from .helpers import (
    agent_graph,
    ask,
    assert_adjacent,
    call,
    other,
    probe,
    reminders,
    repeat,
    scripted,
    turn,
)


def run(script: list[AIMessage], **fields: Any) -> list[Any]:
    guard = RepeatToolReminderCallbackHandler(**fields)
    graph = agent_graph(scripted(script), [probe, other], guard)
    messages = graph.invoke(ask(), config={"callbacks": [guard]})["messages"]
    assert_adjacent(messages)
    return messages


def reminder_messages(messages: list[Any]) -> list[Any]:
    return [m for m in messages if is_reminder(m)]


# -- threshold escalation ---------------------------------------------------------------------


def test_reminds_gently_at_the_first_default_threshold_and_in_detail_at_the_second() -> None:
    messages = run(repeat("probe", {"q": "same"}, 5))

    gentle, detailed = reminder_messages(messages)
    assert "exactly the same arguments" in gentle.content
    assert gentle.additional_kwargs["repeat_tool_reminder"]["summary"] == "probe × 3"
    assert "- consecutive_calls: 5" in detailed.content
    assert "- tool: probe" in detailed.content
    assert '{"q":"same"}' in detailed.content
    assert detailed.additional_kwargs["repeat_tool_reminder"]["summary"] == "probe × 5"
    # Each comes right after the result of the call that reached the threshold.
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert messages[messages.index(results[2]) + 1] is gentle
    assert messages[messages.index(results[4]) + 1] is detailed


def test_keys_the_gentle_text_to_thresholds_0_not_the_literal_3() -> None:
    messages = run(repeat("probe", {"q": "same"}, 4), thresholds=[4, 2])

    assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 4)]
    assert "- consecutive_calls: 4" in reminder_messages(messages)[1].content


# -- chain semantics --------------------------------------------------------------------------


def test_caps_the_detailed_reminder_arguments_but_detection_keys_on_the_full_string() -> None:
    body = "x" * 400
    messages = run(
        repeat("probe", {"body": body}, 3), thresholds=[2, 3], arguments_preview_chars=24
    )

    assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]
    detailed = reminder_messages(messages)[1].content
    assert '- arguments: {"body":"' + "x" * 15 + "… (+387 more chars)\n" in detailed
    assert body not in detailed

    # Arguments alike in their first 24 characters are still different calls.
    script = [turn(call("probe", {"body": body})), turn(call("probe", {"body": body + "y"}))]
    assert reminders(run(script, thresholds=[2], arguments_preview_chars=24)) == []


def test_a_different_tracked_call_resets_the_chain() -> None:
    same = {"q": "same"}
    script = [turn(call(name, same)) for name in ("probe", "probe", "other")]
    script += repeat("probe", same, 3)

    assert reminders(run(script)) == [("gentle", "probe", 3)]


def test_excluded_calls_are_transparent_they_neither_count_nor_reset() -> None:
    same = {"q": "same"}
    script = [turn(call(name, same)) for name in ("probe", "other", "probe", "other", "probe")]

    assert reminders(run(script, exclude=["other"])) == [("gentle", "probe", 3)]


def test_include_patterns_track_only_matching_tools_wildcard_star() -> None:
    script = repeat("other", {}, 3) + repeat("probe", {}, 3)

    assert reminders(run(script, include=["pro*"])) == [("gentle", "probe", 3)]


def test_escapes_regex_metacharacters_in_patterns_a_dot_matches_only_a_dot() -> None:
    assert reminders(run(repeat("probe", {}, 3), exclude=["pr.be"])) == [("gentle", "probe", 3)]


def test_canonicalization_ignores_property_order_deeply() -> None:
    orders: list[dict[str, Any]] = [
        {"a": 1, "nested": {"x": [1, 2], "y": None}},
        {"nested": {"y": None, "x": [1, 2]}, "a": 1},
        {"nested": {"x": [1, 2.0], "y": None}, "a": 1.0},
    ]
    script = [turn(call("probe", {"q": "k", "extra": args})) for args in orders]
    guard = RepeatToolReminderCallbackHandler()
    tolerant = ToolNode([_any_args_probe], handle_tool_errors=True)
    graph = agent_graph(scripted(script), [], guard, tool_node=tolerant)
    messages = graph.invoke(ask(), config={"callbacks": [guard]})["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]


def test_keys_chains_per_agent_one_agent_repeating_never_trips_another() -> None:
    guard = RepeatToolReminderCallbackHandler()
    saver = InMemorySaver()
    same = {"q": "same"}
    graph_a = agent_graph(scripted(repeat("probe", same, 2)), [probe], guard, checkpointer=saver)
    graph_b = agent_graph(scripted(repeat("probe", same, 3)), [probe], guard, checkpointer=saver)

    a = graph_a.invoke(ask(), {"callbacks": [guard], "configurable": {"thread_id": "a"}})
    b = graph_b.invoke(ask(), {"callbacks": [guard], "configurable": {"thread_id": "b"}})

    assert_adjacent(a["messages"])
    assert_adjacent(b["messages"])
    assert reminders(a["messages"]) == []
    assert reminders(b["messages"]) == [("gentle", "probe", 3)]


def test_a_new_user_prompt_resets_the_chain() -> None:
    guard = RepeatToolReminderCallbackHandler()
    same = {"q": "same"}
    model = scripted(
        [*repeat("probe", same, 2), AIMessage("first answer"), turn(call("probe", same))]
    )
    graph = agent_graph(model, [probe], guard, checkpointer=InMemorySaver())
    config = {"callbacks": [guard], "configurable": {"thread_id": "t"}}

    graph.invoke(ask("first question"), config)
    messages = graph.invoke(ask("second question"), config)["messages"]

    assert_adjacent(messages)
    assert len([m for m in messages if isinstance(m, ToolMessage)]) == 3
    assert reminders(messages) == []


def test_drops_an_agent_chain_when_its_run_ends() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2])
    for _ in range(2):
        graph = agent_graph(scripted(repeat("probe", {"q": "same"}, 1)), [probe], guard)
        messages = graph.invoke(ask(), {"callbacks": [guard]})["messages"]
        assert_adjacent(messages)
        assert reminders(messages) == []
        assert guard.agent_count == 0


def test_counts_denied_calls_hammering_a_denied_tool_still_draws_the_reminder() -> None:
    ran: list[str] = []

    @tool("probe")
    def guarded(q: str = "") -> str:
        """Look something up, if allowed."""
        ran.append(q)
        return "ran"

    messages = _run_with_wrapper(guarded, _deny, repeat("probe", {"q": "same"}, 2))

    assert ran == []
    assert reminders(messages) == [("gentle", "probe", 2)]


def test_ignores_direct_tool_runs_with_no_agent_they_neither_crash_nor_advance_a_chain() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2])

    assert probe.invoke({"q": "same"}, config={"callbacks": [guard]}) == "probed same"
    assert guard.agent_count == 0
    graph = agent_graph(scripted(repeat("probe", {"q": "same"}, 1)), [probe], guard)
    messages = graph.invoke(ask(), {"callbacks": [guard]})["messages"]
    assert_adjacent(messages)
    assert reminders(messages) == []


# -- the reminder never replaces what other code decided about the result ------------------


def test_a_blocked_call_keeps_its_feedback_and_the_reminder_is_a_separate_message() -> None:
    messages = _run_with_wrapper(probe, _deny, repeat("probe", {"q": "same"}, 3))

    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [(m.status, m.content) for m in results] == [("error", "nope")] * 3
    assert reminders(messages) == [("gentle", "probe", 2)]
    reminder = reminder_messages(messages)[0]
    assert messages[messages.index(results[1]) + 1] is reminder
    assert isinstance(messages[messages.index(reminder) + 1], AIMessage)


def test_a_replaced_result_is_kept_and_the_reminder_is_a_separate_message() -> None:
    messages = _run_with_wrapper(probe, _replace, repeat("probe", {"q": "same"}, 2))

    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.content for m in results] == ["replaced", "replaced"]
    assert reminders(messages) == [("gentle", "probe", 2)]


# -- configuration fails loud -----------------------------------------------------------------


def test_rejects_an_empty_thresholds_list() -> None:
    with pytest.raises(ValueError, match="thresholds: must not be empty"):
        RepeatToolReminderCallbackHandler(thresholds=[])


def test_rejects_a_threshold_below_2() -> None:
    with pytest.raises(ValueError, match=r"thresholds.*invalid threshold 1.*integer >= 2"):
        RepeatToolReminderCallbackHandler(thresholds=[1, 3])


def test_rejects_a_non_integer_threshold() -> None:
    with pytest.raises(ValueError, match=r"invalid threshold 2\.5.*integer >= 2"):
        RepeatToolReminderCallbackHandler(thresholds=[2.5])


def test_rejects_duplicate_thresholds() -> None:
    with pytest.raises(ValueError, match="thresholds: must not contain duplicates"):
        RepeatToolReminderCallbackHandler(thresholds=[3, 3])


@pytest.mark.parametrize("value", [0, 12.5])
def test_rejects_a_non_positive_or_fractional_arguments_preview_chars(value: float) -> None:
    with pytest.raises(ValueError, match=r"arguments_preview_chars.*integer >= 1"):
        RepeatToolReminderCallbackHandler(arguments_preview_chars=value)


# -- helpers ----------------------------------------------------------------------------------


@tool("probe")
def _any_args_probe(q: str = "", extra: Any = None) -> str:
    """Look something up, with anything extra."""
    return "probed"


def _deny(request: Any, execute: Any) -> ToolMessage:
    return ToolMessage("nope", tool_call_id=request.tool_call["id"], status="error")


def _replace(request: Any, execute: Any) -> ToolMessage:
    result = execute(request)
    return ToolMessage("replaced", tool_call_id=result.tool_call_id)


def _run_with_wrapper(tool: Any, wrapper: Any, script: list[AIMessage]) -> list[Any]:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2], profile="seed")
    node = ToolNode([tool], wrap_tool_call=wrapper)
    graph = agent_graph(scripted(script), [], guard, tool_node=node)
    messages = graph.invoke({"messages": [HumanMessage("go")]}, {"callbacks": [guard]})["messages"]
    assert_adjacent(messages)
    return messages
