"""Faults around the guard: failing tools, interrupts, retries, cancellation, its own bugs.

In every case each call the model requested is counted exactly once, and nothing is left
pending in the handler.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ToolRetryMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

import repeat_reminder_langchain._guard as guard_module
from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
)

from .conftest import Guarded
from .helpers import agent_graph, ask, assert_adjacent, call, reminders, repeat, scripted, turn

SAME = {"q": "same"}
Make = Callable[..., Guarded]
WAIT = 30  # seconds; only a bound on waits that a working run ends at once


def probe_that_fails_on(bad: str) -> Any:
    @tool("probe")
    def probe(q: str = "") -> str:
        """Look something up; one query breaks the tool."""
        if q == bad:
            raise RuntimeError("disk on fire")
        return f"probed {q}"

    return probe


def assert_adjacent_after_the_failure(messages: list[Any]) -> None:
    """Adjacency from the second user message on; before it, the call whose tool raised.

    A run failed by a tool leaves that call unanswered in the checkpoint (LangGraph keeps the
    turn, not the error): the next user message follows it, with nothing of the guard between.
    """
    second = next(i for i, m in enumerate(messages) if m.content == "second")
    assert isinstance(messages[second], HumanMessage)
    if second > 1:
        failed = messages[second - 1]
        assert isinstance(failed, AIMessage) and failed.tool_calls[0]["args"] == {"q": "boom"}
    assert_adjacent(messages[second:])


@pytest.mark.parametrize("thread", [None, "t"])
def test_a_tool_error_that_fails_the_run_leaves_the_next_run_counting_right(
    thread: str | None,
) -> None:
    guard = RepeatToolReminderCallbackHandler()
    failing = probe_that_fails_on("boom")
    script = [*repeat("probe", SAME, 2), turn(call("probe", {"q": "boom"}))]
    script += repeat("probe", SAME, 3)
    graph = agent_graph(
        scripted(script),
        [],
        guard,
        tool_node=ToolNode([failing]),  # the default: a tool's own error fails the run
        checkpointer=InMemorySaver() if thread else None,
    )
    config: dict[str, Any] = {"callbacks": [guard]}
    if thread:
        config["configurable"] = {"thread_id": thread}

    with pytest.raises(RuntimeError, match="disk on fire"):
        graph.invoke(ask("first"), config)
    assert guard._runs == {}
    assert guard.agent_count == (1 if thread else 0)

    messages = graph.invoke(ask("second"), config)["messages"]
    assert_adjacent_after_the_failure(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]


def test_a_tool_error_that_fails_a_create_agent_run_leaves_the_thread_counting_right() -> None:
    failing = probe_that_fails_on("boom")
    script = [*repeat("probe", SAME, 2), turn(call("probe", {"q": "boom"}))]
    script += repeat("probe", SAME, 3)
    agent = create_agent(
        scripted(script),
        tools=[failing],
        middleware=[RepeatToolReminderMiddleware()],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}

    with pytest.raises(RuntimeError, match="disk on fire"):
        agent.invoke(ask("first"), config)
    messages = agent.invoke(ask("second"), config)["messages"]

    assert_adjacent_after_the_failure(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]


def test_a_tool_that_interrupts_and_is_resumed_counts_once(guarded: Make, thread: str) -> None:
    @tool("probe")
    def asks_first(q: str = "") -> str:
        """Look something up after asking a human."""
        return f"probed {interrupt('may I?')}"

    agent = guarded(
        scripted(repeat("probe", SAME, 2)),
        tools=[asks_first],
        checkpointer=InMemorySaver(),
        thresholds=[2, 3],
    )
    config = agent.run_config(thread)
    result = agent.graph.invoke(ask(), config)
    resumes = 0
    while "__interrupt__" in result:
        resumes += 1
        result = agent.graph.invoke(Command(resume="yes"), config)

    assert resumes == 2
    assert_adjacent(result["messages"])
    assert reminders(result["messages"]) == [("gentle", "probe", 2)]
    if agent.handler is not None:
        assert agent.handler._runs == {}


def test_retried_tool_calls_count_once() -> None:
    attempts: list[str] = []

    @tool("probe")
    def flaky(q: str = "") -> str:
        """Fails on every first attempt."""
        attempts.append(q)
        if len(attempts) % 2:
            raise ConnectionError("try again")
        return "probed"

    agent = create_agent(
        scripted(repeat("probe", SAME, 3)),
        tools=[flaky],
        middleware=[
            ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False),
            RepeatToolReminderMiddleware(thresholds=[3, 4]),
        ],
    )
    messages = agent.invoke(ask())["messages"]

    assert len(attempts) == 6
    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]


def _blocking_probe(started: asyncio.Event, release: asyncio.Event) -> Any:
    calls: list[str] = []

    @tool("probe")
    async def probe(q: str = "") -> str:
        """Look something up; the second call waits until released."""
        calls.append(q)
        if len(calls) == 2:
            started.set()
            await release.wait()
        return "probed"

    return probe


async def test_a_run_cancelled_mid_tool_leaves_nothing_pending_and_resumes_counting_once(
    guarded: Make, thread: str
) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    agent = guarded(
        scripted(repeat("probe", SAME, 3)),
        tools=[_blocking_probe(started, release)],
        checkpointer=InMemorySaver(),
        thresholds=[3, 4],
    )
    config = agent.run_config(thread)

    task = asyncio.create_task(agent.graph.ainvoke(ask(), config))
    await asyncio.wait_for(started.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    if agent.handler is not None:
        assert agent.handler._runs == {}

    release.set()
    messages = (await agent.graph.ainvoke(None, config))["messages"]
    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 3)]


def test_a_bug_inside_the_handler_is_logged_and_the_run_completes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    monkeypatch.setattr(guard_module, "read_turn", broken)
    guard = RepeatToolReminderCallbackHandler()

    with caplog.at_level(logging.WARNING):
        messages = agent_graph(scripted(repeat("probe", SAME, 3)), [], guard).invoke(
            ask(), {"callbacks": [guard]}
        )["messages"]

    assert_adjacent(messages)
    assert messages[-1].content == "done"
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "RepeatToolReminderCallbackHandler.on_chat_model_start callback" in logged
    assert "repeat reminder node failed" in logged
    assert guard._runs == {}
