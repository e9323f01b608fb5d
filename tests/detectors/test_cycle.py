"""`cycle`: a sequence of two to four calls done again and again, with the same results."""

from __future__ import annotations

import pytest

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._counter import Call
from repeat_reminder_langchain._detectors import Seen
from repeat_reminder_langchain._detectors.cycle import Cycle
from repeat_reminder_langchain._record import Record, RecordError, read_record

from ..helpers import c, count, play

CYCLES = ReminderConfig(detect=["cycle"], cycle_thresholds=[2, 3])


def seen(tool: str, result: str = "same", arguments: str = "{}") -> Seen:
    return Seen(tool, arguments, 1, result, False, result, result, arguments)


def counts(detector: Cycle, calls: list[Seen]) -> list[int | None]:
    memory = detector.start({})
    return [detector.see(memory, call) for call in calls]


# -- the detector on its own ----------------------------------------------------------------------


def test_a_round_is_counted_by_the_call_that_completes_it() -> None:
    a, b = seen("edit"), seen("run", "IndentationError")
    assert counts(Cycle(Cycle.settings()), [a, b, a, b, a, b]) == [None, None, None, 2, None, 3]


@pytest.mark.parametrize("period", [3, 4])
def test_sequences_of_three_and_four_calls_are_cycles(period: int) -> None:
    block = [seen(f"step{n}") for n in range(period)]
    found = counts(Cycle(Cycle.settings()), block * 3)
    assert found[period * 2 - 1 :: period] == [2, 3]
    assert [n for n in found if n is not None] == [2, 3]


def test_one_call_repeated_is_not_a_cycle_but_a_repeat() -> None:
    assert counts(Cycle(Cycle.settings()), [seen("grep")] * 8) == [None] * 8


def test_a_new_result_anywhere_in_the_round_breaks_the_cycle() -> None:
    a, b, b2 = seen("edit"), seen("run", "fails"), seen("run", "passes")
    assert counts(Cycle(Cycle.settings()), [a, b, a, b2, a, b]) == [None] * 6


def test_a_cycle_of_two_calls_is_counted_as_two_not_four() -> None:
    # A B A B A B A B repeats every 2 calls and every 4: the shortest sequence is the cycle.
    a, b = seen("edit"), seen("run")
    assert counts(Cycle(Cycle.settings()), [a, b] * 4) == [None, None, None, 2, None, 3, None, 4]


def test_the_reminder_lists_the_calls_of_one_round() -> None:
    detector = Cycle(Cycle.settings())
    memory = detector.start({})
    for call in [seen("edit", "", '{"line":3}'), seen("run", "IndentationError")] * 2:
        detector.see(memory, call)
    assert detector.details(memory, lambda text: text[:6]) == {
        "evidence": '  1. edit {"line\n  2. run {}'
    }


def test_the_memory_is_kept_between_turns_and_read_back() -> None:
    detector = Cycle(Cycle.settings())
    memory = detector.start({})
    a, b = seen("edit"), seen("run")
    for call in [a, b, a]:
        detector.see(memory, call)
    kept = detector.keep(memory)
    assert len(kept["calls"]) == 3 and kept["runs"] == [1, 0, 0]
    assert detector.see(detector.start(kept), b) == 2
    assert detector.keep(detector.start({})) is None  # nothing seen: nothing kept


@pytest.mark.parametrize(
    "kept",
    [
        {"calls": [["s", "t"]]},
        {"calls": [["s", "t", "a"]] * 5},
        {"runs": [1, 2]},
        {"runs": [-1, 0, 0]},
        {"calls": "x"},
    ],
)
def test_a_stored_memory_it_did_not_write_is_refused(kept: object) -> None:
    with pytest.raises(RecordError):
        read_record({"detectors": {"cycle": kept}})


# -- through the counter ----------------------------------------------------------------------


def _rounds(times: int) -> list[list[Call]]:
    """Insert a line, run (the same error), remove the line: `times` rounds, a call a turn."""
    steps = [
        c(tool="edit", args={"insert": "print(x)"}, result="ok"),
        c(tool="run", args={"cmd": "python t.py"}, result="IndentationError: line 3"),
        c(tool="edit", args={"delete": 3}, result="ok"),
    ]
    return [[step] for step in steps * times]


def test_the_counter_reminds_at_each_threshold_round() -> None:
    _, found = play(_rounds(3), CYCLES)
    assert found == [("cycle", "gentle", "edit", 2), ("cycle", "detailed", "edit", 3)]


def test_a_round_done_within_one_turn_counts_as_well() -> None:
    (calls,) = [[step for (step,) in _rounds(2)]]
    _, found = play([calls], CYCLES)
    assert found == [("cycle", "gentle", "edit", 2)]


def test_the_detailed_reminder_quotes_the_round() -> None:
    from repeat_reminder_langchain._counter import LoopCounter, Turn

    counter, record = LoopCounter(CYCLES), {}
    for number, calls in enumerate(_rounds(3)):
        counted = counter.count(record, Turn(f"t{number}", tuple(calls)))
        record = counted.record or record
    (reminder,) = counted.reminders
    assert reminder.text.splitlines()[1:6] == [
        "- rounds: 3",
        "- calls_per_round, in order:",
        '  1. edit {"insert":"print(x)"}',
        '  2. run {"cmd":"python t.py"}',
        '  3. edit {"delete":3}',
    ]


def test_a_stored_memory_it_wrote_is_read_back() -> None:
    kept = {"calls": [["s", "edit", "{}"], ["t", "run", "{}"]], "runs": [1, 0, 0]}
    assert read_record({"detectors": {"cycle": kept}}) == {"detectors": {"cycle": kept}}


def test_a_memory_stored_by_0_5_0_counts_on() -> None:
    # A thread checkpointed by 0.5.0 and resumed by a later version: the first round and two
    # calls of the second (`_rounds`), as 0.5.0 stored them (each call's fingerprint first).
    calls = [
        ["99f012a9b34b7f99", "run", '{"cmd":"python t.py"}'],
        ["3c76926382b1bfd3", "edit", '{"delete":3}'],
        ["373452269affda80", "edit", '{"insert":"print(x)"}'],
        ["99f012a9b34b7f99", "run", '{"cmd":"python t.py"}'],
    ]
    stored: Record = {"detectors": {"cycle": {"calls": calls, "runs": [0, 2, 0]}}}
    counted = count(stored, "t", _rounds(1)[-1], CYCLES)  # the round's last call
    assert [(r.detector, r.tool, r.count) for r in counted.reminders] == [("cycle", "edit", 2)]
