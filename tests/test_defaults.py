"""The guard as installed, on every face: it ends the loops it cannot break, never a poll that
moves, and sees a tool that does not exist called again and again (0.5.0's defaults).

The tests of the original plugin's rule run under `profile="seed"` (`conftest.build`); these
run under the defaults, as a user who writes one line gets them.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from repeat_reminder_langchain import (
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
    from_guard,
    stop_reason,
)
from repeat_reminder_langchain._conversation import is_reminder, tag_of
from repeat_reminder_langchain._graph import _ran_anyway
from repeat_reminder_langchain._messages import blocked_result, finish_message
from repeat_reminder_langchain._reminder import Escalation

from .conftest import Guarded, build
from .helpers import (
    LoopModel,
    ask,
    assert_adjacent,
    call,
    model_node,
    probe,
    routed_graph,
    turn,
    wiring_warnings,
)

DEFAULTS = {"profile": "default"}  # conftest.build holds the other tests to the seed's rule


class Answers(LoopModel):
    """Makes its calls until the guard asks for its answer, then answers with what it has."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        tag = tag_of(messages[-1])
        if tag is not None and tag["level"] == "escalated":
            reply = AIMessage("The job is still where it was: here is what I know.")
            return ChatResult(generations=[ChatGeneration(message=reply)])
        return self._call(messages) or super()._generate(messages, *args, **kwargs)

    def _call(self, messages: list[BaseMessage]) -> ChatResult | None:
        return None


class CallsAToolItLacks(Answers):
    """Calls `lookup_order`, which no tool is, with a new order id every time."""

    def _call(self, messages: list[BaseMessage]) -> ChatResult | None:
        made = sum(isinstance(m, AIMessage) and bool(m.tool_calls) for m in messages)
        reply = turn(call("lookup_order", {"order_id": 1000 + made}, f"call_{made}"))
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _calls(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


def test_an_endless_identical_loop_ends_with_the_models_answer_at_the_tenth_call(
    guarded: Any,
) -> None:
    agent: Guarded = guarded(Answers(tool="probe", args={"q": "job 42"}), **DEFAULTS)
    messages = agent.invoke(ask("loop 500"))

    assert len(_calls(messages)) == 10
    assert messages[-1].content == "The job is still where it was: here is what I know."
    assert not from_guard(messages[-1])  # the model's own answer ends the run
    assert [(level, count) for level, _, count in _reminders(messages)] == [
        ("gentle", 3),
        ("detailed", 5),
        ("detailed", 8),
        ("escalated", 10),
    ]
    reason = stop_reason(messages)
    assert reason is not None and (reason.behavior, reason.count) == ("finish", 10)


def test_a_tool_that_does_not_exist_called_with_new_arguments_is_reminded_and_ended(
    guarded: Any,
) -> None:
    # langchain#37961: a model calls a tool it lacks, new arguments each time. ToolNode answers
    # each with the same error, which names the tools there are; the same failure three times
    # is the reminder, ten the stop.
    agent: Guarded = guarded(CallsAToolItLacks(), **DEFAULTS)
    messages = agent.invoke(ask("loop 500"))

    calls = _calls(messages)
    assert len(calls) == 10 and len({c["args"]["order_id"] for c in calls}) == 10
    errors = {m.content for m in messages if isinstance(m, ToolMessage)}
    assert all(m.status == "error" for m in messages if isinstance(m, ToolMessage))
    assert len(errors) == 1  # one failure, ten times
    said = _reminders(messages)
    assert said[0] == ("gentle", "lookup_order", 3)
    first = next(m for m in messages if is_reminder(m))
    assert "The error: Error: lookup_order is not a valid tool" in str(first.content)
    assert "probe" in str(first.content)  # the tools it does have, as the error names them
    assert said[-1] == ("escalated", "lookup_order", 10)
    assert messages[-1].content == "The job is still where it was: here is what I know."
    reason = stop_reason(messages)
    assert reason is not None and (reason.detector, reason.behavior) == ("same_error", "finish")


def test_a_poll_whose_result_moves_runs_as_long_as_the_model_wants(guarded: Any) -> None:
    done = itertools.count(7, 7)

    @tool
    def job_progress(job: str) -> str:
        """How far the job is."""
        return f"job {job}: {next(done)}% done"

    model = Answers(tool="job_progress", args={"job": "42"})
    agent: Guarded = guarded(model, tools=[job_progress, probe], **DEFAULTS)
    messages = agent.invoke(ask("loop 30"))

    assert len(_calls(messages)) == 30
    assert _reminders(messages) == []
    assert stop_reason(messages) is None
    assert messages[-1].content == "done after 30 calls"


def test_the_seed_profile_lets_the_same_loop_run_on_with_advice_only(guarded: Any) -> None:
    agent: Guarded = guarded(Answers(), profile="seed")
    messages = agent.invoke(ask("loop 30"))

    assert len(_calls(messages)) == 30
    assert [count for _, _, count in _reminders(messages)] == [3, 5, 8]
    assert stop_reason(messages) is None


def _reminders(messages: list[BaseMessage]) -> list[tuple[str, str, int]]:
    """Every message of the guard's the model read, escalations too: (level, tool, count)."""
    tags = [tag_of(message) for message in messages]
    return [(t["level"], t["tool"], t["count"]) for t in tags if t is not None]  # type: ignore[misc]


def test_a_node_whose_model_keeps_its_tools_says_once_what_to_wire(
    face: str, recwarn: pytest.WarningsRecorder
) -> None:
    # The README's graph binds the model's tools itself and runs every call: asked for its
    # answer, a model that calls again has that call run, and the node ends the run.
    agent = build(face, LoopModel(), **DEFAULTS)
    messages = agent.invoke(ask("loop 500"))
    again = agent.invoke(ask("loop 500"))

    reason = stop_reason(messages)
    assert reason is not None and reason.behavior == "end" and stop_reason(again) is not None
    said = wiring_warnings(recwarn, "asked a looping model for its answer")
    if face == "middleware":  # it holds the tools back and refuses the call by itself
        assert said == [] and len(_calls(messages)) == 11
        assert from_guard(next(m for m in reversed(messages) if isinstance(m, ToolMessage)))
    else:
        assert len(said) == 1 and len(_calls(messages)) == 11
        assert "ToolNode(tools, wrap_tool_call=node.wrap_tool_call)" in said[0]


def test_a_node_wired_as_it_says_refuses_the_call_and_says_nothing(
    recwarn: pytest.WarningsRecorder,
) -> None:
    node = RepeatToolReminderNode(tools=[probe])
    graph = routed_graph(node, model_node(LoopModel()), [probe], RepeatToolReminderState)
    messages = graph.invoke(ask("loop 500"))["messages"]

    assert_adjacent(messages)
    refused = [m for m in messages if isinstance(m, ToolMessage) and from_guard(m)]
    assert len(refused) == 1 and len(_calls(messages)) == 11
    assert wiring_warnings(recwarn) == []


def test_a_call_is_said_to_have_run_anyway_only_once_its_result_is_the_tools() -> None:
    asked = finish_message(Escalation("probe", 10, "repeat", "{}", "finish"))
    calling = turn(call("probe", {"q": "x"}, "c1"))
    ran = ToolMessage("probed x", tool_call_id="c1")
    refused = blocked_result(Escalation("probe", 10, "repeat", "{}", "finish"), "c1")
    assert not _ran_anyway([HumanMessage("go")])
    assert not _ran_anyway([HumanMessage("go"), asked, calling])  # no result yet
    assert not _ran_anyway([HumanMessage("go"), asked, calling, refused])
    assert not _ran_anyway([HumanMessage("go"), calling, ran])  # not asked for its answer
    assert _ran_anyway([HumanMessage("go"), asked, calling, ran])


async def test_astream_events_ends_the_loop_within_langgraphs_own_limit() -> None:
    # What the observing guide says: astream_events runs under LangGraph's own limit of 25
    # steps; the middleware takes two a tool turn, so the default stop at the tenth call comes
    # within it. A guard that stops later needs the limit passed.
    from langchain.agents import create_agent
    from langgraph.errors import GraphRecursionError

    late = RepeatToolReminderMiddleware(escalate_after=13)
    agent = create_agent(Answers(), tools=[probe], middleware=[late])
    with pytest.raises(GraphRecursionError):
        async for _ in agent.astream_events(ask("loop 500"), version="v2"):
            pass
    agent = create_agent(Answers(), tools=[probe], middleware=[RepeatToolReminderMiddleware()])
    ended: Any = None
    async for event in agent.astream_events(ask("loop 500"), version="v2"):
        if event["event"] == "on_chain_end" and event["name"] == "LangGraph":
            ended = event["data"]["output"]
    assert_adjacent(ended["messages"])
    reason = stop_reason(ended)
    assert reason is not None and (reason.behavior, reason.count) == ("finish", 10)
    assert ended["messages"][-1].content == "The job is still where it was: here is what I know."
