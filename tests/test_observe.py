"""`mode="observe"`: everything is counted and reported, nothing is added to the conversation."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from .conftest import Guarded
from .helpers import ask, kept_record, reminders, repeat, scripted

SAME = {"q": "same"}
Make = Callable[..., Guarded]


def test_observe_mode_counts_everything_and_adds_nothing(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 5)), mode="observe")

    assert reminders(agent.invoke(ask())) == []
    stats = agent.stats.snapshot()
    assert stats["calls"] == 5
    assert stats["longest_streak"] == ["probe", 5]
    # The model saw none of them: they are counted as not delivered, and none is followed up.
    assert stats["reminders"] == {}
    assert stats["undelivered"] == {"probe": {"detailed": 1, "gentle": 1}}
    assert stats["detectors"] == {"repeat": {"delivered": 0, "undelivered": 2}}
    assert (stats["followed"], stats["recovery_rate"]) == (0, None)


def test_observe_mode_keeps_its_counts_like_remind_mode(guarded: Make, thread: str) -> None:
    agent = guarded(
        scripted(repeat("probe", SAME, 3)), checkpointer=InMemorySaver(), mode="observe"
    )

    assert reminders(agent.invoke(ask(), thread)) == []
    record = kept_record(agent, thread)
    assert (record["tool"], record["count"]) == ("probe", 3)
    assert record["reminded"] is False  # nothing reached the model, so nothing is followed up
    assert agent.stats.snapshot()["undelivered"] == {"probe": {"gentle": 1}}


def test_observe_mode_logs_what_it_would_have_sent(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 3)), mode="observe")
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        agent.invoke(ask())

    lines = [r.getMessage() for r in caplog.records if r.name == "repeat_reminder_langchain"]
    assert len(lines) == 1
    assert lines[0].startswith(
        "repeat tool reminder observed, not sent (observe mode): probe × 3 (gentle, repeat)"
    )
