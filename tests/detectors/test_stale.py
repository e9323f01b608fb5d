"""`stale`: the same call returning the same result again, whatever comes between."""

from __future__ import annotations

import re
from typing import Any

import pytest

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._counter import LoopCounter, Turn
from repeat_reminder_langchain._detectors import STALE_MEMORY, Seen
from repeat_reminder_langchain._detectors.stale import Stale
from repeat_reminder_langchain._record import Record, RecordError, read_record

from ..helpers import c, count, play

STALE = ReminderConfig(detect=["stale"], stale_thresholds=[2])


def seen(tool: str = "probe", key: str = "k", text: str = "r", outcome: str = "") -> Seen:
    return Seen(tool, key, 1, text, False, text, outcome or f"digest-of-{text}")


# -- the detector on its own ----------------------------------------------------------------------


def test_the_part_counts_one_calls_identical_results_and_keeps_its_memory_alone() -> None:
    detector = Stale(Stale.settings())
    memory = detector.start({})
    assert [detector.see(memory, seen()) for _ in range(3)] == [1, 2, 3]
    assert detector.see(memory, seen(key="other")) == 1
    assert detector.see(memory, seen(text=" \n")) is None  # an empty result says nothing
    kept = detector.keep(memory)
    assert sorted(kept) == ["calls"]  # no change seen: no `changes`
    assert [times for _, times, _ in kept["calls"].values()] == [3, 1]  # plain values
    assert detector.start(kept).calls == kept["calls"]
    assert detector.details(memory, str) == {}


def test_the_part_starts_every_count_over_when_a_call_returns_something_new() -> None:
    detector = Stale(Stale.settings())
    memory = detector.start({})
    detector.see(memory, seen(key="a"))
    detector.see(memory, seen(key="b", text="one"))
    assert detector.see(memory, seen(key="b", text="two")) == 1
    assert detector.see(memory, seen(key="a")) == 1  # read before the change: a check, not a loop
    kept = detector.keep(memory)
    assert kept["changes"] == 1
    assert detector.start(kept).changes == 1


@pytest.mark.parametrize("entry", [["r", "2", 0], ["r", 0, 0], ["r", 1, None], ["r", 1]])
def test_a_stored_call_it_did_not_write_is_refused_saying_what_one_is(entry: list[Any]) -> None:
    # The words of the log line that sets the record aside, whatever the entry lacks.
    expected = (
        "stored stale memory is not valid: calls.c: a call must be [result, times, changes], "
        f"got {entry!r}"
    )
    with pytest.raises(RecordError, match=f"^{re.escape(expected)}$"):
        read_record({"detectors": {"stale": {"calls": {"c": entry}}}})


def test_a_memory_of_a_build_before_0_4_0_is_read_into_todays() -> None:
    # Those builds wrote each call as "result:times:changes": a call read once counts on from
    # one, and the changes are kept with no call remembered.
    memory = {"calls": {"a": ["r", 1, 0]}, "changes": 2}
    assert read_record({"seen": {"a": "r:1:0"}, "changes": 2}) == {"detectors": {"stale": memory}}
    assert read_record({"changes": 2}) == {"detectors": {"stale": {"calls": {}, "changes": 2}}}
    # Changes that are no whole number were not written there: the record is refused.
    with pytest.raises(
        RecordError, match=r"^stored stale memory is not valid: changes must be a int, got 0\.0$"
    ):
        read_record({"seen": {"a": "r:1:0"}, "changes": 0.0})


# -- through the counter ----------------------------------------------------------------------


def test_stale_counts_the_same_result_of_the_same_call_whatever_comes_between() -> None:
    turns = [[c(result="r")], [c(tool="other", result="o")], [c(result="r")]]
    assert play(turns, STALE)[1] == [("stale", "gentle", "probe", 2)]


def test_stale_needs_a_result_and_forgets_the_least_recent_call_first() -> None:
    assert play([[c()], [c()]], STALE)[1] == []  # no result known: nothing to compare
    calls = [[c(args={"n": n}, result=f"r{n}")] for n in range(STALE_MEMORY + 1)]
    record, _ = play(calls, STALE)
    assert len(record["detectors"]["stale"]["calls"]) == STALE_MEMORY
    _, forgotten = play([*calls, [c(args={"n": 0}, result="r0")]], STALE)
    _, remembered = play([*calls, [c(args={"n": 1}, result="r1")]], STALE)
    assert forgotten == [] and remembered == [("stale", "gentle", "probe", 2)]


@pytest.mark.parametrize("entry", [["other", 2, 0], ["{r}", 1, 1]])
def test_a_call_remembered_with_another_result_or_before_a_change_counts_from_one(
    entry: list[Any],
) -> None:
    record = play([[c(result="r")]], STALE)[0]
    ((call, (result, _, _)),) = record["detectors"]["stale"]["calls"].items()
    entry = [result if detector == "{r}" else detector for detector in entry]
    stored: Record = {**record, "detectors": {"stale": {"calls": {call: entry}}}}
    kept = count(stored, "t2", [c(result="r")], STALE)
    assert list(kept.reminders) == []  # one time, not two
    assert kept.record is not None
    assert kept.record["detectors"]["stale"]["calls"][call][1] == 1
    again = count(record, "t2", [c(result="r")], STALE)
    assert [r.count for r in again.reminders] == [2]


def test_a_call_that_returns_something_new_starts_every_stale_count_over() -> None:
    # The agent saw something change: reading again what it read before is a check, not a loop.
    a, b = c(args={"f": "a"}, result="same"), c(args={"f": "b"}, result="one")
    changed = c(args={"f": "b"}, result="two")
    assert play([[a], [b], [a]], STALE)[1] == [("stale", "gentle", "probe", 2)]
    record, reminders = play([[a], [b], [changed], [a]], STALE)
    assert reminders == [] and record["detectors"]["stale"]["changes"] == 1
    assert play([[a], [b], [changed], [a], [a]], STALE)[1] == [("stale", "gentle", "probe", 2)]
    # The call that changed counts its new result from there.
    assert play([[b], [changed], [changed]], STALE)[1] == [("stale", "gentle", "probe", 2)]
    # Every change counts: what was read between two changes starts over at the second.
    again = c(args={"f": "b"}, result="three")
    record, reminders = play([[a], [b], [changed], [a], [again], [a]], STALE)
    assert reminders == [] and record["detectors"]["stale"]["changes"] == 2
    # The user speaking forgets the changes with the rest.
    assert "detectors" not in LoopCounter(STALE).reset(record)


def test_results_that_are_not_text_are_told_apart_by_their_content() -> None:
    first, second = [{"type": "text", "text": "a"}], [{"type": "text", "text": "b"}]
    assert play([[c(result=first)], [c(tool="other")], [c(result=second)]], STALE)[1] == []
    assert play([[c(result=first)], [c(tool="other")], [c(result=first)]], STALE)[1] != []


@pytest.mark.parametrize("empty", ["", "  \n", [{"type": "text", "text": " "}]])
def test_an_empty_result_is_no_evidence_that_nothing_changed(empty: Any) -> None:
    assert play([[c(result=empty)], [c(tool="other")], [c(result=empty)]], STALE)[1] == []
    assert play([[c(result="r")], [c(tool="other")], [c(result="r")]], STALE)[1] != []


def test_a_result_other_calls_return_too_is_no_evidence_that_nothing_changed() -> None:
    # A checkout answers every file alike: checking out `a` again after `b` may well matter.
    done = "Updated 1 path from the index"
    a, b = c(args={"f": "a"}, result=done), c(args={"f": "b"}, result=done)
    assert play([[a], [b], [a], [a]], STALE)[1] == []
    # Another call with a result of its own leaves the count alone.
    b = c(args={"f": "b"}, result="other text")
    assert play([[a], [b], [a]], STALE)[1] == [("stale", "gentle", "probe", 2)]
    # Another call with a result of its own, remembered, is no such evidence either.
    record: Record = {"detectors": {"stale": {"calls": {"x": ["other result", 1, 0]}}}}
    counted = LoopCounter(STALE).count(record, Turn("t1", (a,)))
    assert counted.record is not None
    counted = LoopCounter(STALE).count(counted.record, Turn("t2", (a,)))
    assert [(r.detector, r.count) for r in counted.reminders] == [("stale", 2)]
