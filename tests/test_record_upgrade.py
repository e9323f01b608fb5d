"""A thread whose guard stored its record as an earlier version did goes on counting where it
stood: 0.2.0, and the development builds between it and 0.4.0."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool

from repeat_reminder_langchain import RepeatToolReminderMiddleware
from repeat_reminder_langchain._conversation import is_reminder

from .helpers import assert_adjacent, call, reminders, scripted, turn

sqlite_saver = pytest.importorskip("langgraph.checkpoint.sqlite")

DATA = Path(__file__).parent / "data"
# Made by a development build (git 791cad7) with the middleware below: `read a`, `read b`,
# `read a`, then `book` failing three times in a row with one error, the third call stopped
# before its tool ran. The record holds the stale memory and the failure streak in flat fields.
CHECKPOINT = DATA / "checkpoint-dev-791cad7.sqlite"
# Made by 0.2.0 (git 023ecdf) with `RepeatToolReminderMiddleware()`: `read a` twice, a third
# time stopped before its tool ran (`interrupt_before=["tools"]`). 0.2.0 named the call's key
# `digest`.
CHECKPOINT_0_2_0 = DATA / "checkpoint-0.2.0.sqlite"


@tool
def book(seat: str = "") -> str:
    """Book a seat."""
    return "Error: payment declined"


@tool
def read(path: str = "") -> str:
    """Read a file."""
    return f"contents of {path}"


def test_a_record_of_a_development_build_is_read_and_its_counts_go_on(tmp_path: Path) -> None:
    copy = tmp_path / CHECKPOINT.name
    shutil.copy(CHECKPOINT, copy)
    with sqlite3.connect(copy, check_same_thread=False) as connection:
        saver = sqlite_saver.SqliteSaver(connection)
        config: Any = {"configurable": {"thread_id": "t03"}}
        guard = RepeatToolReminderMiddleware(
            detect=["repeat", "same_error", "stale"],
            error_pattern="^Error",
            stale_thresholds=[3],
            same_error_thresholds=[3],
        )
        model = scripted([turn(call("read", {"path": "a"}))])
        agent = create_agent(model, tools=[book, read], middleware=[guard], checkpointer=saver)
        stored = agent.get_state(config).values["repeat_tool_reminder"][guard.name]
        assert (stored["failing"], stored["failures"], len(stored["seen"])) == ("book", 2, 4)

        messages = agent.invoke(None, config)["messages"]
        kept = agent.get_state(config).values["repeat_tool_reminder"][guard.name]

    assert_adjacent(messages)
    # The third failure and the third read of `a` with the same result: both memories came
    # through, so both detectors count on from where that build left them.
    assert reminders(messages) == [("gentle", "book", 3), ("gentle", "read", 3)]
    tags = [m.additional_kwargs["repeat_tool_reminder"] for m in messages if is_reminder(m)]
    assert [tag["detector"] for tag in tags] == ["same_error", "stale"]
    assert "failing" not in kept and "seen" not in kept  # written back as today's record
    assert sorted(kept["detectors"]) == ["stale"]  # the streak ended with the read


def test_a_thread_of_0_2_0_counts_on_where_it_stood(tmp_path: Path) -> None:
    copy = tmp_path / CHECKPOINT_0_2_0.name
    shutil.copy(CHECKPOINT_0_2_0, copy)
    with sqlite3.connect(copy, check_same_thread=False) as connection:
        config: Any = {"configurable": {"thread_id": "t02"}}
        guard = RepeatToolReminderMiddleware()
        agent = create_agent(
            scripted([]),
            tools=[read],
            middleware=[guard],
            checkpointer=sqlite_saver.SqliteSaver(connection),
            interrupt_before=["tools"],
        )
        stored = agent.get_state(config).values["repeat_tool_reminder"][guard.name]
        assert (stored["tool"], stored["count"], "key" in stored) == ("read", 2, False)

        # The migration guide's warning: the thread's checkpoint holds the channel of the
        # `before_model` node the middleware had before 0.5, and LangGraph's static interrupt
        # sees it as new at every resume (langgraph#9001): the thread stays where it is.
        agent.invoke(None, config)
        assert agent.get_state(config).next == ("tools",)
        # Resumed by the same agent compiled without a static interrupt, it goes on.
        saver = sqlite_saver.SqliteSaver(connection)
        agent = create_agent(scripted([]), tools=[read], middleware=[guard], checkpointer=saver)
        messages = agent.invoke(None, config)["messages"]
        kept = agent.get_state(config).values["repeat_tool_reminder"][guard.name]

    assert_adjacent(messages)
    # The third `read a`: 0.2.0's count of two goes on (it started over before 0.4.0 read the
    # key 0.2.0 wrote), and the record is written back as today's.
    assert reminders(messages) == [("gentle", "read", 3)]
    assert (kept["count"], kept["key"], "digest" in kept) == (3, stored["digest"], False)
