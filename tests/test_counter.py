"""Counting one agent's turns: runs, thresholds, transparency, detectors, the stored record."""

from __future__ import annotations

import re
from typing import Any

import pytest

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._counter import Call, CallTrace, LoopCounter, Turn
from repeat_reminder_langchain._messages import reminder_message
from repeat_reminder_langchain._policy import ToolPolicy
from repeat_reminder_langchain._record import Record, RecordError, asking_answer, read_record
from repeat_reminder_langchain._reminder import Escalation
from repeat_reminder_langchain._stats import Stats

from .helpers import CONFIG, c, count, play

# -- repeat -----------------------------------------------------------------------------------


def test_identical_calls_build_a_streak_and_draw_reminders_at_thresholds() -> None:
    record, found = play([[c(f"{i}")] for i in range(5)])
    assert found == [("repeat", "gentle", "probe", 2), ("repeat", "detailed", "probe", 4)]
    assert (record["tool"], record["count"]) == ("probe", 5)


def test_a_different_tool_or_different_arguments_start_a_new_streak() -> None:
    _, found = play([[c()], [c(tool="other")], [c()], [c(args={"q": 2})], [c()]])
    assert found == []


def test_untracked_calls_neither_count_nor_reset() -> None:
    config = ReminderConfig(thresholds=[3], exclude=["todo"])
    record, found = play([[c(), c(tool="todo"), c(), c(tool="todo"), c()]], config)
    assert found == [("repeat", "gentle", "probe", 3)]
    assert record["count"] == 3


def test_no_turn_to_count_leaves_the_record_as_it_is() -> None:
    first = count({}, "t", [c("a")])
    assert first.record is not None
    for waiting in (False, True):
        again = LoopCounter(CONFIG).count(first.record, Turn("", (c("b"),), waiting=waiting))
        assert (again.record, list(again.followups)) == (None, [])
        pending = LoopCounter(CONFIG).count(first.record, Turn("u", (c("b"),), waiting=True))
        assert pending.record is None  # counted once every result is in


def test_every_call_of_a_turn_counts_whatever_its_id() -> None:
    counted = count({}, "t", [c("same"), c("same"), c("")])
    assert counted.calls == 3
    assert counted.record is not None and counted.record["count"] == 3
    assert [r.count for r in counted.reminders] == [3]  # the count the model reads it at


def test_a_loop_past_several_thresholds_in_one_turn_is_reminded_once_at_its_count() -> None:
    # Thresholds 2 and 4 reached by five identical calls of one turn: the model reads one
    # reminder after the fifth, the firmest reached, at 5.
    counted = count({}, "t", [c(f"c{n}") for n in range(5)])
    assert [(r.level, r.count) for r in counted.reminders] == [("detailed", 5)]
    assert counted.record is not None and counted.record["reminded"]


def test_tally_counts_the_tracked_calls_and_the_longest_run() -> None:
    config = ReminderConfig(exclude=["todo"])
    counted = count({}, "t", [c(), c(tool="todo"), c(tool="grep")], config)
    assert counted.calls == 2
    assert counted.longest == ("probe", 1)  # on a tie, the run reached first


def test_the_longest_run_on_a_tie_is_the_same_tool_in_tally_and_stats() -> None:
    counted = count({}, "t", [c(), c(), c(tool="grep"), c(tool="grep")])
    stats = Stats()
    stats.add(counted, delivered=True)
    stats.add(count({}, "u", [c(tool="ls"), c(tool="ls")]), delivered=True)
    assert counted.longest == ("probe", 2)
    assert stats.snapshot()["longest_streak"] == ["probe", 2]


def test_reset_clears_the_record_but_keeps_the_turn_and_what_is_stored() -> None:
    config = ReminderConfig(thresholds=[2], detect=["repeat", "stale", "same_error"])
    counted = count({"system": True}, "t", [c(result="x", failed=True)] * 2, config)
    assert counted.record is not None
    memories = counted.record["detectors"]
    assert counted.record["reminded"] and memories["stale"] and memories["same_error"]
    plain = ReminderConfig(thresholds=[2], detect=["repeat", "stale"])
    assert LoopCounter(plain).reset(counted.record) == {"turn": "t", "system": True}
    assert LoopCounter(config).reset({"turn": "t", "count": 3}) == {"turn": "t"}


def test_the_reminder_quotes_the_capped_canonical_arguments() -> None:
    config = ReminderConfig(thresholds=[2], arguments_preview_chars=5)
    counted = count({}, "t", [c(args={"b": 1, "a": 2}), c(args={"a": 2, "b": 1})], config)
    assert counted.reminders[0].arguments == '{"a":… (+8 more chars)'
    assert counted.reminders[0].position == 1


def test_followups_say_whether_the_model_changed_course_after_a_reminder_it_saw() -> None:
    config = ReminderConfig(thresholds=[2])
    seen = count({}, "t", [c(), c()], config).record
    assert seen is not None and seen["reminded"]
    assert count(seen, "u", [c(tool="other")], config).followups == [True]
    assert count(seen, "u", [c()], config).followups == [False]
    unseen = count({}, "t", [c(), c()], config, reminders_reach_model=False).record
    assert unseen is not None and not unseen["reminded"]
    assert list(count(unseen, "u", [c()], config).followups) == []


# -- progress ---------------------------------------------------------------------------------


def test_a_new_result_is_progress_only_when_results_count() -> None:
    calls = [[c(result=str(n))] for n in range(4)]
    assert play(calls, ReminderConfig(profile="seed", thresholds=[2], progress="result"))[1] == []
    assert len(play(calls, ReminderConfig(profile="seed", thresholds=[2]))[1]) == 1


def test_results_are_fingerprinted_only_when_something_reads_them() -> None:
    calls = [c(result="x")]
    for detect in (["repeat"], ["repeat", "stale"]):
        plain = count({}, "t", calls, ReminderConfig(profile="seed", detect=detect)).record  # type: ignore[arg-type]
        assert plain is not None and plain["result"] == ""
    aware = count({}, "t", calls, ReminderConfig(profile="seed", progress="result")).record
    assert aware is not None and len(aware["result"]) == 32


def test_a_call_whose_result_is_unknown_is_no_progress_and_leaves_no_result() -> None:
    # An unanswered call (an invalid one, never given a result in state) between two answers.
    aware = ReminderConfig(thresholds=[3], progress="result")
    record = play([[c(result="r")], [c()]], aware)[0]
    assert record["count"] == 2 and record["result"] == ""
    assert play([[c(result="r")], [c()], [c(result="r")]], aware)[1] == [
        ("repeat", "gentle", "probe", 3)
    ]


def test_a_turn_of_untracked_calls_leaves_a_record_that_reads_back_with_nothing_counted() -> None:
    config = ReminderConfig(exclude=["todo"])
    empty = {"tool": "", "key": "", "count": 0, "result": "", "reminded": False}
    record = count({}, "t", [c(tool="todo")], config).record
    assert record == {"turn": "t", **empty} and read_record(record) == record
    # A model that answered after a reminder it saw recovered, whatever it calls next.
    answered = Turn("u", (c(tool="todo"),), answered=True)
    counted = LoopCounter(config).count({"reminded": True}, answered)
    assert counted.followups == [True] and counted.record == {"turn": "u", **empty}
    # The user spoke before: the reminder they had seen is behind them.
    spoke = Turn("v", (c(tool="todo"),), spoke_before=True)
    assert LoopCounter(config).count({"reminded": True}, spoke).record == {"turn": "v", **empty}


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
    both = [[c(result="e", failed=True)], [c(result="e", failed=True)]]
    assert play(both, everything)[1] == [("repeat", "gentle", "probe", 2)]
    apart = [
        [c(args={"n": 1}, result="e", failed=True)],
        [c(args={"n": 2}, result="e", failed=True)],
    ]
    assert play(apart, everything)[1] == [("same_error", "gentle", "probe", 2)]


def test_a_failure_streak_that_overshoots_the_limit_in_one_turn_says_how_far_it_went() -> None:
    config = ReminderConfig(
        thresholds=[2], detect=["repeat", "same_error"], same_error_thresholds=[2], escalate_after=3
    )
    failing = [c(args={"n": n}, result="Error: no", failed=True) for n in range(5)]
    counted = count({}, "t", [*failing, c(tool="other", result="Error: no", failed=True)], config)

    assert counted.escalation is not None
    assert (counted.escalation.detector, counted.escalation.count) == ("same_error", 5)


def test_a_failure_streak_that_goes_on_in_its_turn_is_told_as_it_stands_at_its_end() -> None:
    # The reminder drawn at 2 is read after the turn's last result: by then the streak is 3
    # calls with 3 argument sets, and its words say so.
    config = ReminderConfig(
        thresholds=[2], detect=["repeat", "same_error"], same_error_thresholds=[2]
    )
    failing = [c(f"{n}", args={"n": n}, result="Error: no", failed=True) for n in range(3)]
    [reminder] = count({}, "t", failing, config).reminders
    assert (reminder.detector, reminder.count, reminder.details["variants"]) == ("same_error", 3, 3)
    said = "The last 3 calls to `probe` failed with the same error, with 3 different argument sets."
    assert said in reminder_message(reminder).text


def test_a_detector_that_only_reports_leaves_the_stop_to_one_that_acts() -> None:
    # repeat reports here, and counts the same calls as same_error: the loop is stopped in
    # same_error's name.
    config = ReminderConfig(
        thresholds=[2],
        detect=["repeat", "same_error"],
        detectors={"repeat": {"remind": False}},
        same_error_thresholds=[2],
        escalate_after=3,
    )
    failing = [c(f"{n}", result="Error: no", failed=True) for n in range(3)]
    counted = count({}, "t", failing, config)
    assert counted.escalation is not None
    assert (counted.escalation.detector, counted.escalation.count) == ("same_error", 3)


def test_a_blocked_call_sent_again_in_a_later_turn_ends_the_run() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3, exit_behavior="block")
    counter = LoopCounter(config)
    refused = counter.count({}, Turn("t1", (c("a"), c("b"), c("c"), c("d"))))
    assert refused.escalation is not None
    assert (refused.escalation.behavior, refused.escalation.count) == ("block", 4)
    assert refused.record is not None

    again = counter.count(refused.record, Turn("t2", (c("e"),)))
    assert again.escalation is not None
    assert (again.escalation.behavior, again.escalation.count) == ("end", 5)
    # Another call first, then the refused one: a new run of calls, not a refusal ignored.
    changed = counter.count(refused.record, Turn("t3", (c("f", args={"q": 2}), c("g"))))
    assert changed.escalation is None


def test_a_count_at_the_limit_escalates_instead_of_reminding() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3)
    counted = count({}, "t", [c("a"), c("b"), c("c"), c("d")], config)
    assert counted.reminders == ()  # the escalation replaces the turn's reminders
    assert counted.escalation is not None
    # Reached by the third call; the fourth went on with the loop, and the count says so.
    assert (counted.escalation.count, counted.escalation.position) == (4, 2)
    assert counted.escalation.limit == 3
    reminded = count({}, "t", [c("a"), c("b")], config).reminders[0]
    assert counted.escalation.digest == reminded.digest  # the event's arguments_digest


def test_an_escalation_still_reports_the_streak_the_followups_and_every_call() -> None:
    config = ReminderConfig(thresholds=[2], escalate_after=3)
    reminded = count({}, "t1", [c("a"), c("b")], config).record
    assert reminded is not None and reminded["reminded"]
    trace: list[CallTrace] = []
    counted = count(reminded, "t2", [c("c")], config, trace=trace)
    assert counted.escalation is not None and counted.record is not None
    assert (counted.longest, list(counted.followups)) == (("probe", 3), [False])
    assert not counted.record["reminded"]  # an escalation is no reminder to follow
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
        count({}, "t", calls, config, trace=trace)
        return [entry.escalation is not None for entry in trace]

    identical = [c(str(n), result="e", failed=True) for n in range(5)]
    varied = [c(str(n), args={"n": n}, result="e", failed=True) for n in range(5)]
    assert escalated("block", identical) == [False, False, True, True, True]
    # A failure count depends on results, unknown before a call runs: it is never blocked.
    assert escalated("block", varied) == [False] * 5
    assert escalated("end", varied) == [False, False, True, False, False]


def test_a_tools_own_thresholds_past_the_limit_do_not_put_off_the_stop() -> None:
    # A tool's own thresholds win over the defaults, and may lie past escalate_after: its loop
    # still stops at the limit, though no reminder was due before it.
    counter = LoopCounter(ReminderConfig(escalate_after=9))
    policies = {"probe": ToolPolicy(thresholds=(12,))}
    counted = counter.count({}, Turn("t", tuple(c(f"{i}") for i in range(9))), policies)

    assert counted.reminders == ()
    assert counted.escalation is not None
    assert (counted.escalation.count, counted.escalation.position) == (9, 8)


# -- the stored record ------------------------------------------------------------------------


def test_a_record_survives_its_stored_form() -> None:
    config = ReminderConfig(thresholds=[2], detect=["repeat", "stale", "same_error"])
    record = play([[c(result="e", failed=True)]] * 2, config)[0]
    assert sorted(record["detectors"]) == ["same_error", "stale"] and record["reminded"]
    assert read_record(record) == record
    assert read_record({}) == {}
    assert read_record({"unknown": 1, "count": 2}) == {"unknown": 1, "count": 2}  # not read


BAD_FIELDS: dict[str, Any] = {
    "turn": 1,
    "tool": 5,
    "key": None,
    "count": "many",
    "result": 2,
    "reminded": "yes",
    "detectors": ["stale"],
    "system": 1,
    "finishing": "repeat",  # what a development build stored: the detector alone
}


@pytest.mark.parametrize("name", BAD_FIELDS)
def test_a_stored_record_with_one_bad_field_is_rejected_naming_it(name: str) -> None:
    value = BAD_FIELDS[name]
    good: Record = {"turn": "t", "tool": "probe", "key": "d", "count": 2}
    kind = type(read_record({**good, name: _GOOD[name]})[name]).__name__  # type: ignore[literal-required]
    expected = f"stored {name} must be a {kind}, got {value!r}"
    with pytest.raises(RecordError, match=f"^{re.escape(expected)}$"):
        read_record({**good, name: value})


_GOOD: dict[str, Any] = {
    "turn": "t",
    "tool": "probe",
    "key": "k",
    "count": 1,
    "result": "r",
    "reminded": True,
    "detectors": {},
    "system": False,
    "finishing": dict(Escalation("probe", 4, "repeat", "{}", "finish").tag()),
}


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"count": -1}, "stored counts must be whole numbers from zero"),
        ({"count": True}, "stored count must be a int"),
        ({"detectors": {"stale": []}}, "stale memory is not valid: Input should be a valid dict"),
        ({"detectors": {"stale": {"changes": -3}}}, "stale memory is not valid: changes: Input"),
        ({"detectors": {"stale": {"calls": {"c": "r:1:0"}}}}, "calls.c: Input should be a valid"),
        ({"detectors": {"stale": {"calls": {"c": ["r", 0, 0]}}}}, "a call must be [result"),
        ({"detectors": {"same_error": {"failures": -2}}}, "same_error memory is not valid"),
        ({"detectors": {"same_error": {"variants": ["a", 1]}}}, "variants.1: Input should be a"),
        ({"detectors": {"same_error": {"tool": 3}}}, "tool: Input should be a valid string, got 3"),
        ({"finishing": {"level": "escalated"}}, "stored finishing must be an escalation's tag"),
    ],
)
def test_a_stored_count_or_memory_that_the_guard_did_not_write_is_rejected(
    data: Any, problem: str
) -> None:
    with pytest.raises(RecordError, match=re.escape(problem)):
        read_record(data)
    assert read_record({"count": 0}) == {"count": 0}
    # A memory of a detector this version does not know is left as it is.
    assert read_record({"detectors": {"later": [1]}}) == {"detectors": {"later": [1]}}


def test_a_record_stored_by_0_3_is_read_into_todays() -> None:
    flat = {
        "turn": "t",
        "count": 1,
        "failing": "book",
        "error": "e" * 32,
        "failures": 2,
        "variants": ["3c49904e", "5e44a602"],
        "seen": {"a": "279ddbaa60cbc7fc:2:0", "b": "r:x:0", "c": 7, "d": "r:0:1"},
        "changes": 1,
    }
    assert read_record(flat) == {
        "turn": "t",
        "count": 1,
        "detectors": {
            "same_error": {
                "tool": "book",
                "error": "e" * 32,
                "failures": 2,
                "variants": ["3c49904e", "5e44a602"],
            },
            # An entry that does not read "result:times:changes" was a call not seen.
            "stale": {"calls": {"a": ["279ddbaa60cbc7fc", 2, 0]}, "changes": 1},
        },
    }
    assert "failing" in flat  # what was read is left as it was
    assert read_record({"seen": {}}) == {"detectors": {"stale": {"calls": {}}}}
    assert read_record({"failing": "", "failures": 0}) == {}  # no streak: nothing of it
    with pytest.raises(RecordError, match=r"^stored same_error memory is not valid: variants"):
        read_record({"failing": "book", "variants": ["a", 1]})
    with pytest.raises(RecordError, match=r"^stored stale memory is not valid: seen must be"):
        read_record({"seen": ["a"]})


def test_a_record_stored_by_0_2_names_its_key_digest_and_is_read_into_todays() -> None:
    stored = {"turn": "t", "tool": "read", "digest": "d" * 32, "count": 2, "reminded": False}
    assert read_record(stored) == {
        "turn": "t",
        "tool": "read",
        "key": "d" * 32,
        "count": 2,
        "reminded": False,
    }
    assert "digest" in stored  # what was read is left as it was


def test_a_record_with_earlier_fields_beside_todays_memories_keeps_them_all() -> None:
    # A development build before 0.4.0 keeps the fields it does not know: on a thread that
    # today's guard and such a build both wrote to, today's memories are read with its fields.
    stale = {"calls": {"a": ["279ddbaa60cbc7fc", 2, 0]}}
    data = {"failing": "book", "error": "e" * 32, "failures": 2, "detectors": {"stale": stale}}
    assert read_record(data)["detectors"] == {
        "same_error": {"tool": "book", "error": "e" * 32, "failures": 2, "variants": []},
        "stale": stale,
    }


def test_a_memory_of_a_detector_not_in_use_goes_on_being_kept_as_turns_are_counted() -> None:
    # A thread that another build (or another configuration) also writes to: its memories stay
    # for it, whatever this guard's own detectors remember and forget turn by turn.
    config = ReminderConfig(thresholds=[3], detect=["repeat", "same_error"], profile="seed")
    later: Any = {"detectors": {"later": [1]}}
    failed: Any = count(later, "t", [c("a", result="Error: no", failed=True)], config).record
    assert failed["detectors"]["later"] == [1]
    assert failed["detectors"]["same_error"]["failures"] == 1
    succeeded: Any = count(failed, "u", [c("b", result="fine")], config).record
    assert succeeded["detectors"] == later["detectors"]


def test_a_stored_mapping_of_another_kind_is_read_and_anything_else_rejected() -> None:
    from types import MappingProxyType

    assert read_record(MappingProxyType({"count": 2})) == {"count": 2}
    with pytest.raises(RecordError, match=r"^a stored record must be a mapping, got list$"):
        read_record(["tool", "probe"])


def test_a_failure_streak_goes_on_after_the_user_speaks_and_every_other_count_starts_over() -> None:
    config = ReminderConfig(thresholds=[2], detect=["repeat", "stale", "same_error"])
    failing = [c("a", result="Error: no", failed=True)] * 2
    record = count({}, "t", failing, config).record
    assert record is not None
    assert LoopCounter(config).reset(record) == {
        "turn": "t",
        "detectors": {"same_error": {**record["detectors"]["same_error"], "spoke": True}},
    }
    spoke = LoopCounter(config).count(
        record, Turn("u", (c("b", result="Error: no", failed=True),), spoke_before=True)
    )
    assert [(r.detector, r.count) for r in spoke.reminders] == [("same_error", 3)]


def test_after_the_user_spoke_a_failure_with_new_arguments_is_news() -> None:
    # Each payment method the user names fails alike: each attempt is news, not a streak. The
    # streak goes on only where arguments it failed with fail again.
    config = ReminderConfig(detect=["same_error"], same_error_thresholds=[2, 3])
    declined = "Error: card declined"
    record: Any = {}
    found = []
    for number, card in enumerate(["visa", "amex", "amex", "amex", "visa"]):
        attempt = c(f"t{number}", args={"card": card}, result=declined, failed=True)
        turn = Turn(f"t{number}", (attempt,), spoke_before=number in (1, 3, 4))
        counted = LoopCounter(config).count(record, turn)
        record = counted.record or record
        found.append([r.count for r in counted.reminders])
    # visa; the user names amex: news; amex again: 2; the user speaks, amex again: 3; the user
    # speaks, visa (not in this streak): news.
    assert found == [[], [], [2], [3], []]
    assert record["detectors"]["same_error"]["failures"] == 1


@pytest.mark.parametrize(
    ("detector", "args"),
    [("same_error", lambda n: {"n": n}), ("recurring_error", lambda n: {"n": 0})],
)
def test_the_error_pattern_makes_a_returned_error_a_failure_for_every_part(
    detector: str, args: Any
) -> None:
    # The counter judges a failure once per call, for every part that reads failures.
    turns = [[c(tool="book", args=args(n), result="Error: card declined")] for n in range(3)]
    plain = ReminderConfig(profile="seed", thresholds=[9], detect=[detector])
    assert play(turns, plain)[1] == []  # returned, not marked: a success
    patterned = ReminderConfig(
        profile="seed", thresholds=[9], detect=[detector], error_pattern="^Error"
    )
    assert play(turns, patterned)[1] == [(detector, "gentle", "book", 3)]
    # As installed, the text ToolNode writes for a failure is one without a pattern.
    installed = ReminderConfig(thresholds=[9], detect=[detector])
    assert play(turns, installed)[1] == [(detector, "gentle", "book", 3)]


def test_the_error_pattern_judges_only_known_results_and_only_for_parts_that_read_them() -> None:
    # A tool that answers "Error: ..." or a bare null when it fails. The second call's result
    # is unknown (never given): no failure, though its result reads as null when rendered.
    calls = [c("a", result="Error: card declined"), c("b")]

    def failed(detect: list[str]) -> list[bool]:
        config = ReminderConfig(detect=detect, error_pattern=r"\AError:|\Anull\Z")  # type: ignore[arg-type]
        trace: list[CallTrace] = []
        count({}, "t", calls, config, trace=trace)
        return [entry.failed for entry in trace]

    assert failed(["repeat", "same_error"]) == [True, False]
    assert failed(["repeat"]) == [False, False]  # no part reads results: none is judged


def test_the_error_pattern_reads_the_result_as_the_tool_wrote_it() -> None:
    # Not as normalised for comparing results: a pattern may name what normalising sets aside.
    config = ReminderConfig(
        detect=["repeat", "same_error"], error_pattern=r"\Ajob [0-9a-f-]{36} failed"
    )
    result = "job 123e4567-e89b-12d3-a456-426614174000 failed"
    trace: list[CallTrace] = []
    count({}, "t", [c("a", result=result)], config, trace=trace)
    assert [entry.failed for entry in trace] == [True]


def test_a_failure_the_pattern_marks_is_no_output_for_same_output() -> None:
    long_error = "Error: " + "the card was declined by the issuing bank " * 2
    turns = [[c(tool="book", args={"card": n}, result=long_error)] for n in range(3)]
    config = ReminderConfig(profile="seed", detect=["same_output"])
    assert play(turns, config)[1] == [("same_output", "gentle", "book", 3)]
    assert (
        play(turns, ReminderConfig(profile="seed", detect=["same_output"], error_pattern="^Error"))[
            1
        ]
        == []
    )


def test_a_detector_with_nothing_to_remember_yet_leaves_the_later_ones_their_count() -> None:
    # same_error remembers nothing until a call fails; the detectors after it in precedence
    # still count each call that succeeds (here stale: one call returning one result again).
    config = ReminderConfig(detect=["repeat", "same_error", "stale"], stale_thresholds=[2])
    turns = [[c(result="r")], [c(tool="other", result="o")], [c(result="r")]]
    assert play(turns, config)[1] == [("stale", "gentle", "probe", 2)]


def test_a_failure_in_a_quiet_turn_shows_the_detectors_the_rest_of_the_turn() -> None:
    # Under the defaults a call below every threshold and the limit is shown to no detector,
    # unless one remembers something of the agent: a failure starts same_error's memory, and
    # the success after it in the same turn ends that streak.
    counter = LoopCounter(ReminderConfig())
    failing = Call("1", "book", {"seat": 1}, "Error: sold out", True)
    alone = counter.count({}, Turn("t1", (failing,)))
    assert alone.record is not None
    assert alone.record["detectors"]["same_error"]["failures"] == 1

    then_booked = counter.count({}, Turn("t1", (failing, Call("2", "book", {"seat": 2}, "ok"))))
    assert then_booked.record is not None
    assert "same_error" not in then_booked.record.get("detectors", {})
    assert not then_booked.reminders


def _asked_for_the_answer(counter: LoopCounter) -> Record:
    """A loop of grep that `finish` asked at 3 for its answer: its record, as the guard keeps it."""
    record: Record = {}
    for n in range(3):
        found = counter.count(record, Turn(f"t{n}", [c(f"c{n}", "grep", result="r")]))
        record = found.record or record
    assert found.escalation is not None and found.escalation.behavior == "finish"
    return asking_answer(record, found.escalation)


ASKS_AT_3 = ReminderConfig(thresholds=[2], escalate_after=3)


def test_a_call_after_the_request_for_the_answer_ends_counted_with_no_tool_known() -> None:
    # A conversation replayed (no tool's schema known): the loop was asked for its answer at
    # 3, and the model called it again; that call ends the run at the count it took it to.
    counter = LoopCounter(ASKS_AT_3)

    again = counter.count(_asked_for_the_answer(counter), Turn("t3", [c("c3", "grep", result="r")]))

    assert again.escalation is not None
    assert (again.escalation.count, again.escalation.behavior) == (4, "end")


def test_a_turn_after_the_request_for_the_answer_draws_no_reminder_beside_its_end() -> None:
    # Asked for its answer, the model made two identical calls of another tool: they reach a
    # threshold, but the run ends, and the end is all the turn says.
    counter = LoopCounter(ASKS_AT_3)
    other = [c("c3", "ls", result="r"), c("c4", "ls", result="r")]

    again = counter.count(_asked_for_the_answer(counter), Turn("t3", other))

    assert again.escalation is not None and again.escalation.tool == "grep"
    assert again.reminders == ()


def test_an_answer_after_a_reminder_is_followed_up_once_in_its_count() -> None:
    # The model answered after a reminder it saw, and the run went on without the user (a run
    # resumed with no new message): the answer is the follow-up; the next call is not another.
    counter = LoopCounter(CONFIG)
    record: Record = {"turn": "t1", "tool": "grep", "key": "k", "count": 3, "reminded": True}

    found = counter.count(record, Turn("t2", [c(tool="grep")], answered=True))

    assert found.followups == [True]
