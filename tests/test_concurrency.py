"""One guard under heavy concurrency: every run gets exactly its own reminders, nothing hangs."""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain.agents import create_agent

from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
)

from .conftest import build
from .helpers import (
    LoopingModel,
    agent_graph,
    ask,
    assert_adjacent,
    final_messages,
    probe,
    reminders,
    repeat,
    scripted,
)

EXPECTED = [("gentle", "probe", 2), ("detailed", "probe", 3)]
THREADS, RUNS_EACH = 64, 50


def checked(messages: list[Any]) -> list[Any]:
    """The reminders of a run's conversation, once it is checked for call/result adjacency."""
    assert_adjacent(messages)
    return reminders(messages)


@pytest.mark.timeout(600)
def test_64_threads_times_50_runs_on_one_handler_each_get_their_own_reminders() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2, 3])
    # One graph and one model for every run: the model reads each run's own conversation.
    graph = agent_graph(LoopingModel(turns=3), [probe], guard)

    def worker(index: int) -> list[list[Any]]:
        # Half the workers name a conversation (reused for all their runs), half do not.
        config: dict[str, Any] = {"callbacks": [guard]}
        if index % 2:
            config["configurable"] = {"thread_id": f"thread-{index}"}
        return [checked(graph.invoke(ask(), config)["messages"]) for _ in range(RUNS_EACH)]

    with ThreadPoolExecutor(THREADS) as pool:
        results = [r for runs in pool.map(worker, range(THREADS)) for r in runs]

    assert len(results) == THREADS * RUNS_EACH
    assert all(found == EXPECTED for found in results)
    assert guard.agent_count == THREADS // 2  # one per named conversation; the rest forgotten
    assert guard._runs == {}


@pytest.mark.timeout(600)
async def test_200_concurrent_async_runs_on_one_handler_each_get_their_own_reminders() -> None:
    guard = RepeatToolReminderCallbackHandler(thresholds=[2, 3])
    graph = agent_graph(LoopingModel(turns=3), [probe], guard)

    async def one(index: int) -> list[Any]:
        config: dict[str, Any] = {"callbacks": [guard]}
        if index % 2:
            config["configurable"] = {"thread_id": f"thread-{index}"}
        messages = (await graph.ainvoke(ask(), config))["messages"]
        assert_adjacent(messages)
        return reminders(messages)

    results = await asyncio.gather(*(one(i) for i in range(200)))

    assert all(found == EXPECTED for found in results)
    assert guard.agent_count == 100
    assert guard._runs == {}


@pytest.mark.timeout(600)
async def test_200_concurrent_create_agent_runs_keep_their_own_counts() -> None:
    agent = create_agent(
        LoopingModel(turns=3),
        tools=[probe],
        middleware=[RepeatToolReminderMiddleware(thresholds=[2, 3])],
    )

    async def one() -> list[Any]:
        messages = (await agent.ainvoke(ask()))["messages"]
        assert_adjacent(messages)
        return reminders(messages)

    results = await asyncio.gather(*(one() for _ in range(200)))

    assert all(found == EXPECTED for found in results)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("face", ["state", "middleware"])
def test_one_state_kept_guard_shared_by_threads_keeps_each_runs_counts(face: str) -> None:
    # One graph, one node or middleware instance, one model for every run.
    agent = build(face, LoopingModel(turns=3), thresholds=[2, 3])

    def worker(index: int) -> list[list[Any]]:
        return [reminders(agent.invoke(ask())) for _ in range(10)]  # checks adjacency

    with ThreadPoolExecutor(32) as pool:
        results = [r for runs in pool.map(worker, range(32)) for r in runs]

    assert len(results) == 320
    assert all(found == EXPECTED for found in results)
    assert agent.stats.snapshot()["reminders"] == {"probe": {"detailed": 320, "gentle": 320}}


@pytest.mark.timeout(600)
async def test_200_concurrent_runs_on_one_state_kept_node_keep_their_own_counts() -> None:
    agent = build("state", LoopingModel(turns=3), thresholds=[2, 3])

    results = await asyncio.gather(*(agent.ainvoke(ask()) for _ in range(200)))

    assert all(reminders(messages) == EXPECTED for messages in results)


def _events_of_an_async_run() -> list[str]:
    """The custom events of an async run in which the handler, with no node, draws a reminder."""
    guard = RepeatToolReminderCallbackHandler()
    graph = agent_graph(scripted(repeat("probe", {"q": "same"}, 3)), [probe], None)

    async def run() -> list[Any]:
        return [e async for e in graph.astream_events(ask(), {"callbacks": [guard]}, version="v2")]

    events = asyncio.run(run())
    assert_adjacent(final_messages(events))
    return [e["name"] for e in events if e["event"] == "on_custom_event"]


def _exit_by_the_events() -> None:
    sys.exit(0 if _events_of_an_async_run() == ["repeat_tool_reminder"] else 1)


def test_a_process_forked_after_an_async_run_still_sends_the_guards_events() -> None:
    # In an async run, the sync handler's events go through langchain-core's one shared pool of
    # threads, which a fork copies without its threads. The suite drops that pool in a forked
    # child (tests/conftest.py), as the mutation run, which forks every mutant's tests, needs.
    assert _events_of_an_async_run() == ["repeat_tool_reminder"]  # the pool has its threads now
    child = multiprocessing.get_context("fork").Process(target=_exit_by_the_events)
    child.start()
    child.join(timeout=60)
    hung = child.is_alive()
    if hung:
        child.kill()
        child.join()
    assert not hung
    assert child.exitcode == 0
