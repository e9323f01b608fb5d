"""`same_error`: one tool failing again and again with the same error, whatever the arguments."""

from __future__ import annotations

import pytest

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._canonical import result_text
from repeat_reminder_langchain._counter import CallTrace, LoopCounter, Turn
from repeat_reminder_langchain._detectors import Seen
from repeat_reminder_langchain._detectors.same_error import SameError
from repeat_reminder_langchain._record import Record, RecordError, read_record

from ..helpers import c, count, play

ERRORS = ReminderConfig(detect=["same_error"], same_error_thresholds=[3], error_pattern="^Error")


def failed(key: str = "k", text: str = "Error: no", *, marked: bool = False) -> Seen:
    # Failed as the counter judges it under `error_pattern="^Error"`, or marked as an error.
    return Seen("probe", key, 1, text, marked or text.startswith("Error"), text, compared=text)


# -- the detector on its own ----------------------------------------------------------------------


def test_the_part_counts_failures_with_one_error_and_keeps_its_memory_alone() -> None:
    detector = SameError(SameError.settings())
    memory = detector.start({})
    assert detector.see(memory, failed("a")) == 1
    assert detector.see(memory, failed("b")) == 2  # other arguments, the same error
    assert detector.see(memory, failed("c", "boom", marked=True)) == 1  # another error
    assert detector.details(memory, lambda text: text[:2]) == {
        "error": "bo",
        "variants": 1,
        "varied": "",
    }
    kept = detector.keep(memory)
    assert kept is not None
    assert sorted(kept) == ["error", "failures", "tool", "variants"]
    assert detector.see(detector.start(kept), failed("d", "boom", marked=True)) == 2  # read back
    assert detector.see(memory, failed("d", "fine")) is None  # no failure: the streak ends
    assert detector.keep(memory) is None


def test_after_the_user_spoke_only_arguments_that_failed_go_on_with_the_streak() -> None:
    detector = SameError(SameError.settings())
    memory = detector.start({})
    detector.see(memory, failed("a"))
    detector.see(memory, failed("b"))
    kept = detector.after_user(detector.keep(memory) or {})
    assert (
        kept["spoke"] is True and detector.keep(detector.start(kept)) == kept
    )  # kept until a call
    assert detector.see(detector.start(kept), failed("a")) == 3  # it failed with these before
    assert (
        detector.see(detector.start(kept), failed("c")) == 1
    )  # new arguments after the user: news
    read_record({"detectors": {"same_error": kept}})
    with pytest.raises(RecordError, match="spoke: Input should be a valid boolean, got 'yes'"):
        read_record({"detectors": {"same_error": {**kept, "spoke": "yes"}}})


def test_a_memory_stored_by_0_5_0_counts_on() -> None:
    # A thread checkpointed by 0.5.0 and resumed by a later version: two failures of one call
    # as 0.5.0 stored them (the error's fingerprint, the argument set's); the user speaks, and
    # the call fails again: arguments it failed with go on with the streak.
    streak = {"tool": "probe", "error": "65e561237b5e6fff6bee85d4d1bfd694", "failures": 2}
    stored: Record = {"detectors": {"same_error": {**streak, "variants": ["984530e4"]}}}
    again = LoopCounter(ERRORS).count(
        stored, Turn("t", (c(args={"n": 1}, result="Error: no"),), spoke_before=True)
    )
    assert [(r.detector, r.count) for r in again.reminders] == [("same_error", 3)]
    assert "with 2 different argument sets" not in again.reminders[0].text


def test_a_stored_failure_count_that_is_not_a_whole_number_is_rejected() -> None:
    # A count the guard did not write starts the streak over instead of counting on from it.
    kept = {"tool": "probe", "error": "e" * 32, "failures": 2.0}
    with pytest.raises(RecordError, match=r"failures: Input should be a valid integer, got 2\.0$"):
        read_record({"detectors": {"same_error": kept}})


# -- through the counter ----------------------------------------------------------------------


def test_same_error_counts_failures_with_one_error_text_and_their_argument_sets() -> None:
    turns = [[c(args={"n": n % 2}, result="boom", failed=True)] for n in range(3)]
    trace: list[CallTrace] = []
    record: Record = {}
    for number, calls in enumerate(turns):
        counted = count(record, f"t{number}", calls, ERRORS, trace=trace)
        assert counted.record is not None
        record = counted.record
    (reminder,) = counted.reminders
    assert (reminder.detector, reminder.count) == ("same_error", 3)
    assert reminder.details == {
        "error": "boom",
        "variants": 2,
        "varied": ", with 2 different argument sets",
    }
    assert "failed with the same error, with 2 different argument sets." in reminder.text
    assert [entry.counts for entry in trace] == [{"same_error": n} for n in (1, 2, 3)]
    # What the events, logs and audit show of it: the call's arguments, digest and place.
    assert (reminder.arguments, reminder.digest) == ('{"n":0}', record["key"])
    more = ReminderConfig(detect=["same_error"], same_error_thresholds=[3, 4])
    failing = c(args={"n": 1}, result="boom", failed=True)
    beside = count(record, "t3", [c(tool="other"), failing], more)
    assert [(r.count, r.position) for r in beside.reminders] == [(4, 1)]
    assert "seen" not in record  # `stale` is off: nothing of it is kept


def test_a_returned_text_matching_the_error_pattern_is_a_failure() -> None:
    turns = [[c(args={"n": n}, result=[{"type": "text", "text": "Error: no"}])] for n in range(3)]
    assert play(turns, ERRORS)[1] == [("same_error", "gentle", "probe", 3)]
    assert result_text([{"type": "text", "text": "a"}, "b", 7]) == "a\nb"
    assert result_text([{"type": "image", "url": "u"}, "b"]) == "b"  # a block without text
    assert result_text({"k": 1}) == '{"k":1}'


def test_a_call_without_a_result_starts_no_failure_streak() -> None:
    record = count({}, "t", [c()], ERRORS).record
    assert record is not None and "failing" not in record


def test_a_call_without_a_result_neither_counts_nor_ends_a_failure_streak() -> None:
    failing = c(args={"n": 1}, result="Error: no")
    unanswered = c(args={"n": 2})  # e.g. an invalid call, never answered in state
    turns = [[failing], [unanswered], [failing], [failing]]
    assert play(turns, ERRORS)[1] == [("same_error", "gentle", "probe", 3)]


def test_a_call_that_does_not_fail_clears_the_failure_streak() -> None:
    turns = [[c(result="Error: no")], [c(result="Error: no")], [c(result="fine")]]
    record = play(turns, ERRORS)[0]
    assert "detectors" not in record  # nothing of the streak is kept
    # A stored streak missing some of its fields ends as cleanly.
    stored: Record = {"detectors": {"same_error": {"tool": "probe", "error": "e"}}}
    ended = count(stored, "t", [c(result="fine")], ERRORS).record
    assert ended is not None and "detectors" not in ended


def test_a_failure_streak_remembers_at_most_sixteen_argument_sets() -> None:
    turns = [[c(args={"n": n}, result="Error: no")] for n in range(20)]
    record, _ = play(turns, ERRORS)
    streak = record["detectors"]["same_error"]
    assert (streak["failures"], len(streak["variants"])) == (20, 16)
