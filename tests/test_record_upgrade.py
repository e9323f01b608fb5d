"""A thread whose guard stored its record as 0.3 did goes on counting where it stood."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool

from repeat_reminder_langchain import RepeatToolReminderMiddleware
from repeat_reminder_langchain._reminder import is_reminder

from .helpers import assert_adjacent, call, reminders, scripted, turn

sqlite_saver = pytest.importorskip("langgraph.checkpoint.sqlite")

# Made by 0.3 (git 791cad7) with the middleware below: `read a`, `read b`, `read a`, then
# `book` failing three times in a row with one error, the third call stopped before its tool
# ran. The record holds the stale memory and the failure streak in 0.3's flat fields.
CHECKPOINT = Path(__file__).parent / "data" / "checkpoint-0.3.sqlite"


@tool
def book(seat: str = "") -> str:
    """Book a seat."""
    return "Error: payment declined"


@tool
def read(path: str = "") -> str:
    """Read a file."""
    return f"contents of {path}"


def test_a_record_stored_by_0_3_is_read_and_its_counts_go_on(tmp_path: Path) -> None:
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
    # through, so both detectors count on from where 0.3 left them.
    assert reminders(messages) == [("gentle", "book", 3), ("gentle", "read", 3)]
    tags = [m.additional_kwargs["repeat_tool_reminder"] for m in messages if is_reminder(m)]
    assert [tag["detector"] for tag in tags] == ["same_error", "stale"]
    assert "failing" not in kept and "seen" not in kept  # written back as today's record
    assert sorted(kept["detectors"]) == ["stale"]  # the streak ended with the read
