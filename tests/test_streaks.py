"""Counting one agent's turns: streaks, thresholds, transparency, detectors, the stored form."""

from __future__ import annotations

import re
from typing import Any

import pytest

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._streaks import (
    STALE_MEMORY,
    Call,
    CallTrace,
    Streaks,
    count_turn,
    result_text,
)
from repeat_reminder_langchain.stats import Stats

CONFIG = ReminderConfig(thresholds=[2, 4])


def play(turns: list[list[Call]], config: ReminderConfig = CONFIG) -> tuple[Streaks, list[Any]]:
    streaks, found = Streaks(), []
    for number, calls in enumerate(turns):
        tally = count_turn(streaks, f"turn-{number}", calls, config)
        streaks = tally.streaks
        found += [(r.detector, r.level, r.tool, r.count) for r in tally.reminders]
    return streaks, found


def c(call_id: str = "", tool: str = "probe", args: Any = None, **outcome: Any) -> Call:
    return Call(call_id, tool, {"q": 1} if args is None else args, **outcome)


# -- repeat -----------------------------------------------------------------------------------


def test_identical_calls_build_a_streak_and_draw_reminders_at_thresholds() -> None:
    streaks, found = play([[c(f"{i}")] for i in range(5)])
    assert found == [("repeat", "gentle", "probe", 2), ("repeat", "detailed", "probe", 4)]
    assert (streaks.tool, streaks.count) == ("probe", 5)


def test_a_different_tool_or_different_arguments_start_a_new_streak() -> None:
    _, found = play([[c()], [c(tool="other")], [c()], [c(args={"q": 2})], [c()]])
    assert found == []


def test_untracked_calls_neither_count_nor_reset() -> None:
    config = ReminderConfig(thresholds=[3], exclude=["todo"])
    streaks, found = play([[c(), c(tool="todo"), c(), c(tool="todo"), c()]], config)
    assert found == [("repeat", "gentle", "probe", 3)]
    assert streaks.count == 3


def test_a_turn_counted_once_is_not_counted_again() -> None:
    first = count_turn(Streaks(), "t", [c("a")], CONFIG)
    again = count_turn(first.streaks, "t", [c("a"), c("b")], CONFIG)
    assert again.streaks is first.streaks
    assert (again.calls, again.reminders) == (0, ())


def test_every_call_of_a_turn_counts_whatever_its_id() -> None:
    tally = count_turn(Streaks(), "t", [c("same"), c("same"), c("")], CONFIG)
    assert tally.calls == 3
    assert tally.streaks.count == 3
    assert [r.count for r in tally.reminders] == [2]


def test_tally_counts_the_tracked_calls_and_the_longest_run() -> None:
    config = ReminderConfig(exclude=["todo"])
    tally = count_turn(Streaks(), "t", [c(), c(tool="todo"), c(tool="grep")], config)
    assert tally.calls == 2
    assert tally.longest == ("probe", 1)  # on a tie, the run reached first


def test_the_longest_run_on_a_tie_is_the_same_tool_in_tally_and_stats() -> None:
    tally = count_turn(Streaks(), "t", [c(), c(), c(tool="grep"), c(tool="grep")], CONFIG)
    stats = Stats()
    stats.add(tally, delivered=True)
    stats.add(count_turn(Streaks(), "u", [c(tool="ls"), c(tool="ls")], CONFIG), delivered=True)
    assert tally.longest == ("probe", 2)
    assert stats.snapshot()["longest_streak"] == ["probe", 2]


def test_reset_clears_the_streaks_but_keeps_the_turn_and_the_escalations() -> None:
    config = ReminderConfig(thresholds=[2], detect=["repeat", "stale", "same_error"])
    streaks = count_turn(Streaks(escalations=2), "t", [c(result="x", error=True)] * 2, config)
    cleared = streaks.streaks.reset()
    assert cleared == Streaks(turn="t", escalations=2)
    assert streaks.streaks.reminded and not cleared.reminded
    assert count_turn(cleared, "t", [c()], config).streaks is cleared


def test_the_reminder_quotes_the_capped_canonical_arguments() -> None:
    config = ReminderConfig(thresholds=[2], arguments_preview_chars=5)
    tally = count_turn(Streaks(), "t", [c(args={"b": 1, "a": 2}), c(args={"a": 2, "b": 1})], config)
    assert tally.reminders[0].arguments == '{"a":… (+8 more chars)'
    assert tally.reminders[0].position == 1


def test_followups_say_whether_the_model_changed_course_after_a_reminder_it_saw() -> None:
    config = ReminderConfig(thresholds=[2])
    seen = count_turn(Streaks(), "t", [c(), c()], config)
    assert seen.streaks.reminded
    assert count_turn(seen.streaks, "u", [c(tool="other")], config).followups == [True]
    assert count_turn(seen.streaks, "u", [c()], config).followups == [False]
    unseen = count_turn(Streaks(), "t", [c(), c()], config, seen_by_model=False)
    assert not unseen.streaks.reminded
    assert count_turn(unseen.streaks, "u", [c()], config).followups == []


# -- progress ---------------------------------------------------------------------------------


def test_a_new_result_is_progress_only_when_results_count() -> None:
    calls = [[c(result=str(n))] for n in range(4)]
    assert play(calls, ReminderConfig(thresholds=[2], progress="result"))[1] == []
    assert len(play(calls, ReminderConfig(thresholds=[2]))[1]) == 1


def test_results_are_fingerprinted_only_when_something_reads_them() -> None:
    calls = [c(result="x")]
    assert count_turn(Streaks(), "t", calls, ReminderConfig()).streaks.result == ""
    aware = count_turn(Streaks(), "t", calls, ReminderConfig(progress="result"))
    assert len(aware.streaks.result) == 32


# -- stale ------------------------------------------------------------------------------------

STALE = ReminderConfig(detect=["stale"], stale_thresholds=[2])


def test_stale_counts_the_same_result_of_the_same_call_whatever_comes_between() -> None:
    turns = [[c(result="r")], [c(tool="other", result="o")], [c(result="r")]]
    assert play(turns, STALE)[1] == [("stale", "gentle", "probe", 2)]


def test_stale_needs_a_result_and_forgets_the_least_recent_call_first() -> None:
    assert play([[c()], [c()]], STALE)[1] == []  # no result known: nothing to compare
    calls = [[c(args={"n": n}, result="r")] for n in range(STALE_MEMORY + 1)]
    streaks, _ = play(calls, STALE)
    assert len(streaks.seen) == STALE_MEMORY
    _, forgotten = play([*calls, [c(args={"n": 0}, result="r")]], STALE)
    _, remembered = play([*calls, [c(args={"n": 1}, result="r")]], STALE)
    assert forgotten == [] and remembered == [("stale", "gentle", "probe", 2)]


# -- same_error -------------------------------------------------------------------------------

ERRORS = ReminderConfig(detect=["same_error"], same_error_thresholds=[3], error_pattern="^Error")


def test_same_error_counts_failures_with_one_error_text_and_their_argument_sets() -> None:
    turns = [[c(args={"n": n % 2}, result="boom", error=True)] for n in range(3)]
    tally_list: list[CallTrace] = []
    streaks = Streaks()
    for number, calls in enumerate(turns):
        tally = count_turn(streaks, f"t{number}", calls, ERRORS, trace=tally_list)
        streaks = tally.streaks
    (reminder,) = tally.reminders
    assert (reminder.detector, reminder.count, reminder.variants, reminder.error) == (
        "same_error",
        3,
        2,
        "boom",
    )
    assert [entry.counts for entry in tally_list] == [{"same_error": n} for n in (1, 2, 3)]


def test_a_returned_text_matching_the_error_pattern_is_a_failure() -> None:
    turns = [[c(args={"n": n}, result=[{"type": "text", "text": "Error: no"}])] for n in range(3)]
    assert play(turns, ERRORS)[1] == [("same_error", "gentle", "probe", 3)]
    assert result_text([{"type": "text", "text": "a"}, "b", 7]) == "a\nb"
    assert result_text([{"type": "image", "url": "u"}, "b"]) == "b"  # a block without text
    assert result_text({"k": 1}) == '{"k":1}'


def test_a_call_without_a_result_neither_counts_nor_ends_a_failure_streak() -> None:
    failing = c(args={"n": 1}, result="Error: no")
    unanswered = c(args={"n": 2})  # e.g. an invalid call, never answered in state
    turns = [[failing], [unanswered], [failing], [failing]]
    assert play(turns, ERRORS)[1] == [("same_error", "gentle", "probe", 3)]


def test_a_call_that_does_not_fail_clears_the_failure_streak() -> None:
    turns = [[c(result="Error: no")], [c(result="Error: no")], [c(result="fine")]]
    streaks = play(turns, ERRORS)[0]
    assert (streaks.failing, streaks.error, streaks.failures, streaks.variants) == ("", "", 0, ())
    assert "failing" not in streaks.to_dict()


def test_a_failure_streak_remembers_at_most_sixteen_argument_sets() -> None:
    turns = [[c(args={"n": n}, result="Error: no")] for n in range(20)]
    streaks, _ = play(turns, ERRORS)
    assert (streaks.failures, len(streaks.variants)) == (20, 16)


def test_a_failure_streak_stored_by_0_2_knows_its_argument_sets_again() -> None:
    # Two failures of `probe` with {"q": 0} and {"q": 1}, as 0.2.0 stored them.
    stored = Streaks.from_dict(
        {
            "turn": "t1",
            "tool": "probe",
            "digest": "3e32c03e38378c3ceb244c461d436d4a",
            "count": 1,
            "failing": "probe",
            "error": "65e561237b5e6fff6bee85d4d1bfd694",
            "failures": 2,
            "variants": ["eb4536ea", "3e32c03e"],
        }
    )
    config = ReminderConfig(detect=["repeat", "same_error"])
    tally = count_turn(
        stored, "t2", [c("2", args={"q": 1}, result="Error: no", error=True)], config
    )
    (reminder,) = tally.reminders
    assert (reminder.detector, reminder.count, reminder.variants) == ("same_error", 3, 2)


def test_ignored_arguments_are_left_out_with_every_detector_on() -> None:
    config = ReminderConfig(
        thresholds=[3], detect=["repeat", "stale"], ignore_arguments={"probe": ["nonce"]}
    )
    same = [[c(args={"q": 1, "nonce": n})] for n in range(3)]
    assert play(same, config)[1] == [("repeat", "gentle", "probe", 3)]
    other = [[c(args={"q": n, "nonce": n})] for n in range(3)]
    assert play(other, config)[1] == []


# -- one reminder per call, and escalation ----------------------------------------------------


def test_one_reminder_per_call_repeat_first_then_same_error_then_stale() -> None:
    everything = ReminderConfig(
        thresholds=[2],
        detect=["stale", "same_error", "repeat"],
        stale_thresholds=[2],
        same_error_thresholds=[2],
    )
    both = [[c(result="e", error=True)], [c(result="e", error=True)]]
    assert play(both, everything)[1] == [("repeat", "gentle", "probe", 2)]
    apart = [[c(args={"n": 1}, result="e", error=True)], [c(args={"n": 2}, result="e", error=True)]]
    assert play(apart, everything)[1] == [("same_error", "gentle", "probe", 2)]


def test_a_count_at_the_limit_escalates_instead_of_reminding() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3)
    tally = count_turn(Streaks(), "t", [c("a"), c("b"), c("c"), c("d")], config)
    assert tally.reminders == ()  # the escalation replaces the turn's reminders
    assert tally.escalation is not None
    assert (tally.escalation.count, tally.escalation.position) == (3, 2)
    assert tally.streaks.escalations == 1
    reminded = count_turn(Streaks(), "t", [c("a"), c("b")], config).reminders[0]
    assert tally.escalation.digest == reminded.digest  # the event's arguments_digest


def test_an_escalation_still_reports_the_streak_the_followups_and_every_call() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3)
    reminded = count_turn(Streaks(), "t1", [c("a"), c("b")], config).streaks
    assert reminded.reminded
    trace: list[CallTrace] = []
    tally = count_turn(reminded, "t2", [c("c")], config, trace=trace)
    assert tally.escalation is not None
    assert (tally.longest, list(tally.followups)) == (("probe", 3), [False])
    assert not tally.streaks.reminded  # an escalation is no reminder to follow
    assert [(entry.call, entry.reminder) for entry in trace] == [(c("c"), None)]


def test_blocking_escalates_every_repeat_at_or_past_the_limit_and_nothing_else() -> None:
    def escalated(behavior: str, calls: list[Call]) -> list[bool]:
        config = ReminderConfig(
            thresholds=[2],
            detect=["repeat", "same_error"],
            same_error_thresholds=[2],
            escalate_after=3,
            exit_behavior=behavior,  # type: ignore[arg-type]
        )
        trace: list[CallTrace] = []
        count_turn(Streaks(), "t", calls, config, trace=trace)
        return [entry.escalation is not None for entry in trace]

    identical = [c(str(n), result="e", error=True) for n in range(5)]
    varied = [c(str(n), args={"n": n}, result="e", error=True) for n in range(5)]
    assert escalated("block", identical) == [False, False, True, True, True]
    # A failure count depends on results, unknown before a call runs: it is never blocked.
    assert escalated("block", varied) == [False] * 5
    assert escalated("end", varied) == [False, False, True, False, False]


# -- the stored form --------------------------------------------------------------------------


def test_streaks_survive_their_stored_form() -> None:
    config = ReminderConfig(thresholds=[2], detect=["repeat", "stale", "same_error"])
    streaks = play([[c(result="e", error=True)]] * 2, config)[0]
    assert streaks.seen and streaks.failing and streaks.reminded
    assert Streaks.from_dict(streaks.to_dict()) == streaks
    cleared = streaks.reset()
    assert Streaks.from_dict(cleared.to_dict()) == cleared
    assert Streaks.from_dict(None) == Streaks()


def test_a_stored_dict_from_an_older_version_keeps_its_streak() -> None:
    older = {"tool": "probe", "digest": "d", "count": 4, "turn": "t", "counted": ["a"]}
    assert Streaks.from_dict(older) == Streaks(turn="t", tool="probe", digest="d", count=4)


BAD_FIELDS: dict[str, tuple[Any, str]] = {
    "turn": (1, "a str"),
    "tool": (5, "a str"),
    "digest": (None, "a str"),
    "count": ("many", "a count"),
    "result": (2, "a str"),
    "reminded": ("yes", "a bool"),
    "failing": (3, "a str"),
    "error": ([], "a str"),
    "failures": (-1, "a count"),
    "variants": ([1], "a list of strings"),
    "seen": ("abc", "a list of strings"),
    "escalations": (1.5, "a count"),
}


@pytest.mark.parametrize("name", BAD_FIELDS)
def test_a_stored_dict_with_one_bad_field_is_rejected_naming_it(name: str) -> None:
    value, kind = BAD_FIELDS[name]
    good = Streaks(turn="t", tool="probe", digest="d", count=2).to_dict()
    expected = f"stored {name} must be {kind}, got {value!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        Streaks.from_dict({**good, name: value})


@pytest.mark.parametrize("value", [True, -1, 2.0])
def test_a_stored_count_is_a_whole_number_from_zero(value: Any) -> None:
    with pytest.raises(ValueError, match="stored count must be a count"):
        Streaks.from_dict({"count": value})
    assert Streaks.from_dict({"count": 0}) == Streaks()


@pytest.mark.parametrize("entry", ["nonsense", ":r:1", "c:r:", "c:r:x", "c:r:x:1"])
def test_a_stored_seen_entry_reads_call_result_times(entry: str) -> None:
    expected = f"stored seen entry must read call:result:times, got {entry!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        Streaks.from_dict({"seen": [entry]})
    assert Streaks.from_dict({"seen": ["c:r:12", "d::3"]}).seen == {"c": "c:r:12", "d": "d::3"}


# Written by 0.2.0 after two identical `probe` calls answering "still running", as text and as
# a text block: a checkpoint taken before an upgrade must go on counting after it.
STORED_AFTER_TWO = {
    "text": {
        "turn": "t1",
        "tool": "probe",
        "digest": "3e32c03e38378c3ceb244c461d436d4a",
        "count": 2,
        "result": "5c10777a8628e19eabadd62f4041b0a8",
        "reminded": False,
        "seen": ["17adc7112345cfc9:5c10777a8628e19e:2"],
    },
    "block": {
        "turn": "t1",
        "tool": "probe",
        "digest": "3e32c03e38378c3ceb244c461d436d4a",
        "count": 2,
        "result": "e3b2b307a9f5e04e8a6ce66389d1a3c9",
        "reminded": False,
        "seen": ["17adc7112345cfc9:e3b2b307a9f5e04e:2"],
    },
}
RESULTS = {"text": "still running", "block": [{"type": "text", "text": "still running"}]}


@pytest.mark.parametrize("form", STORED_AFTER_TWO)
def test_streaks_stored_by_0_2_go_on_counting_the_same_call_and_result(form: str) -> None:
    config = ReminderConfig(thresholds=[3], progress="result", detect=["repeat", "stale"])
    stored = Streaks.from_dict(STORED_AFTER_TWO[form])
    third = count_turn(stored, "t2", [c("2", result=RESULTS[form])], config)
    assert [(r.detector, r.count) for r in third.reminders] == [("repeat", 3)]
    assert [entry[-2:] for entry in third.streaks.seen.values()] == [":3"]  # the same result, again
    other = count_turn(stored, "t2", [c("2", result=[{"type": "text", "text": "done"}])], config)
    assert (list(other.reminders), other.streaks.count) == ([], 1)


def test_a_stored_dict_missing_every_field_is_no_streak() -> None:
    assert Streaks.from_dict({}) == Streaks()
    assert Streaks.from_dict({"tool": None}) == Streaks()


def test_anything_but_a_mapping_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"^stored streaks must be a mapping, got list$"):
        Streaks.from_dict(["tool", "probe"])
