"""The benchmark's counted section: exact figures, and a reference that writes what the guard does.

`make bench` reads where a whole turn goes from the steps between a bare agent and the guard;
the step that writes a record each turn stands for the guard's own write only while it writes
into the guard's entry, a turn at a time.
"""

from __future__ import annotations

import gc

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

# The section counts the peers beside the guard (the `bench` extra).
pytest.importorskip("able_harness_kit")
pytest.importorskip("langchain_tool_recover")

from benchmarks.calls import RecordWriter, _hook_calls, _run_calls, _uncollected
from benchmarks.fixtures import ask, middleware_agent, script
from benchmarks.hooks import GUARDS, SHORT
from repeat_reminder_langchain import RepeatToolReminderMiddleware
from repeat_reminder_langchain._conversation import SOURCE

from .helpers import assert_adjacent

NAME = "RepeatToolReminderMiddleware"  # the guard's entry, under its default name


def test_the_counts_are_exact_the_same_play_counted_twice_gives_the_same_figure() -> None:
    guard = GUARDS["guard"]

    assert _hook_calls(guard, SHORT) == _hook_calls(guard, SHORT) > 0
    assert _run_calls(list) == _run_calls(list)


class _Finalised:
    """An object whose finalizer, a Python call, says when the collector freed it."""

    def __init__(self, freed: list[bool]) -> None:
        self.freed = freed
        self.cycle = self  # only a collection frees it, whenever one runs

    def __del__(self) -> None:
        self.freed.append(True)


def test_no_collection_runs_while_counting_what_earlier_work_left_is_freed_before() -> None:
    # A collection calls the finalizers of what it frees: counted, they made a whole run's
    # count depend on what ran before it (mutmut's tests, in the order of a set).
    left: list[bool] = []
    _Finalised(left)
    during: list[bool] = []
    with _uncollected():
        assert left == [True]  # freed before the count starts
        _Finalised(during)
        # Many collections' worth of allocations.
        allocated: list[list[int]] = [[] for _ in range(100_000)]
        assert during == []
    assert len(allocated) == 100_000 and gc.isenabled()
    gc.collect()
    assert during == [True]
    gc.disable()  # a caller that paused the collector itself finds it paused still
    try:
        with _uncollected():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_record_writer_writes_each_turn_into_the_guards_entry_as_the_guard_does() -> None:
    entries = {}
    for middleware in (RecordWriter(), RepeatToolReminderMiddleware(meter_provider=False)):
        agent = middleware_agent(script(3), [middleware], checkpointer=InMemorySaver())
        config: RunnableConfig = {"configurable": {"thread_id": "t"}}
        messages = agent.invoke(ask(), config)["messages"]
        assert_adjacent(messages)
        turns = {message.id for message in messages if isinstance(message, AIMessage)}
        # The model steps' checkpoints: a record written in each turn's step, naming a turn of
        # the run, in the one entry the guard keeps.
        written = [
            snapshot.values[SOURCE]
            for snapshot in agent.get_state_history(config)
            if snapshot.values.get(SOURCE)
        ]
        entries[type(middleware).__name__] = {name for entry in written for name in entry}
        named = {entry[NAME]["turn"] for entry in written}
        assert named <= turns
        assert len(named) >= 3  # one a tool turn, at least

    assert entries == {"RecordWriter": {NAME}, "RepeatToolReminderMiddleware": {NAME}}
