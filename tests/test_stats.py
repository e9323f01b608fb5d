"""Stats: calls, reminders the model saw or not, streaks, and whether the model recovered."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from repeat_reminder_langchain import ReminderConfig, RepeatToolReminderCallbackHandler
from repeat_reminder_langchain._counter import Call, Count, LoopCounter, Turn
from repeat_reminder_langchain._reminder import Escalation, Reminder
from repeat_reminder_langchain._stats import Stats
from repeat_reminder_langchain.tooling.demo import run_demo

from .conftest import Guarded
from .helpers import ask, assert_adjacent, call, kept_record, repeat, scripted, turn

SAME = {"q": "same"}
Make = Callable[..., Guarded]


def test_stats_count_calls_reminders_streaks_and_recovery() -> None:
    # The demo model ignores the gentle reminder (a repeat) and heeds the detailed one.
    guard = RepeatToolReminderCallbackHandler()
    assert_adjacent(run_demo(guard))

    snapshot = guard.stats.snapshot()
    assert snapshot == {
        "calls": 6,
        "reminders": {"job_status": {"detailed": 1, "gentle": 1}},
        "undelivered": {},
        "detectors": {"repeat": {"delivered": 2, "undelivered": 0}},
        "escalations": {},
        "longest_streak": ["job_status", 5],
        "followed": 2,
        "recovered": 1,
        "recovery_rate": 0.5,
    }
    assert json.loads(json.dumps(snapshot)) == snapshot


def test_a_pending_reminder_is_remembered_across_a_checkpoint(guarded: Make, thread: str) -> None:
    script = [*repeat("probe", SAME, 2), turn(call("probe", {"q": "other"}))]
    agent = guarded(scripted(script), checkpointer=InMemorySaver(), thresholds=[2])
    agent.invoke(ask(), thread)

    assert agent.stats.snapshot()["recovery_rate"] == 1.0  # the third call changed course
    record = kept_record(agent, thread)
    assert record["reminded"] is False
    assert record["result"] == ""


def reminder(level: str = "gentle", detector: str = "repeat") -> Reminder:
    return Reminder("grep", 3, level, "{}", "d" * 32, detector)  # type: ignore[arg-type]


def test_only_reminders_the_model_saw_count_as_reminders() -> None:
    stats = Stats()
    stats.add(Count({}, [reminder()], calls=3, longest=("grep", 3)), delivered=True)
    stats.add(Count({}, [reminder("detailed", "stale")], calls=1))  # not said: not delivered

    snapshot = stats.snapshot()
    assert snapshot["calls"] == 4
    assert snapshot["reminders"] == {"grep": {"gentle": 1}}
    assert snapshot["undelivered"] == {"grep": {"detailed": 1}}
    assert snapshot["detectors"] == {
        "repeat": {"delivered": 1, "undelivered": 0},
        "stale": {"delivered": 0, "undelivered": 1},
    }
    assert snapshot["longest_streak"] == ["grep", 3]


def test_reminders_of_every_detector_add_up_by_tool_and_level() -> None:
    stats = Stats()
    stats.add(Count({}, [reminder(), reminder(detector="stale")]), delivered=True)
    undelivered = [reminder(detector="same_error"), reminder("detailed", "stale"), reminder()]
    stats.add(Count({}, undelivered), delivered=False)

    snapshot = stats.snapshot()
    assert snapshot["reminders"] == {"grep": {"gentle": 2}}
    assert snapshot["undelivered"] == {"grep": {"detailed": 1, "gentle": 2}}


def test_followups_give_the_recovery_rate_and_none_before_any() -> None:
    stats = Stats()
    assert stats.snapshot()["recovery_rate"] is None
    stats.add(Count({}, followups=[False, True]), delivered=True)
    stats.add(Count({}, followups=[True]))
    stats.add(Count({}, followups=[False]))

    snapshot = stats.snapshot()
    assert (snapshot["followed"], snapshot["recovered"], snapshot["recovery_rate"]) == (4, 2, 0.5)


def test_escalations_are_counted_by_tool_and_detector_and_the_longest_streak_kept() -> None:
    stats = Stats()
    stopped = Escalation("grep", 9, "repeat", "{}", "end")
    stats.add(Count({}, escalation=stopped, calls=1, longest=("grep", 9)), delivered=True)
    stats.add(Count({}, calls=1, longest=("ls", 2)), delivered=True)

    snapshot = stats.snapshot()
    assert snapshot["escalations"] == {"grep": {"repeat": 1}}
    assert snapshot["longest_streak"] == ["grep", 9]


def test_totals_add_up_over_turns() -> None:
    stats = Stats()
    stopped = Escalation("grep", 9, "repeat", "{}", "end")
    for _ in range(2):
        tally = Count({}, [reminder()], escalation=stopped, calls=2, followups=[True])
        stats.add(tally, delivered=True)

    snapshot = stats.snapshot()
    assert snapshot["calls"] == 4
    assert snapshot["reminders"] == {"grep": {"gentle": 2}}
    assert snapshot["escalations"] == {"grep": {"repeat": 2}}
    assert (snapshot["followed"], snapshot["recovered"]) == (2, 2)


@pytest.mark.parametrize(
    ("streaks", "longest"),
    [
        ([("grep", 1)], None),
        ([("grep", 2)], ["grep", 2]),
        ([("grep", 3), ("ls", 3)], ["grep", 3]),  # a later one as long is not longer
        ([("grep", 3), ("ls", 4), ("grep", 2)], ["ls", 4]),
    ],
)
def test_the_longest_streak_is_the_first_to_reach_the_greatest_length(
    streaks: list[tuple[str, int]], longest: list[str | int] | None
) -> None:
    stats = Stats()
    for streak in streaks:
        stats.add(Count({}, calls=1, longest=streak), delivered=True)
    assert stats.snapshot()["longest_streak"] == longest


def test_no_longest_streak_before_a_call_is_repeated() -> None:
    stats = Stats()
    once = Turn("t", (Call("a", "grep", {"q": 1}),))
    stats.add(LoopCounter(ReminderConfig()).count({}, once), delivered=True)
    assert stats.snapshot()["longest_streak"] is None
