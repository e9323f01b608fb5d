"""`same_output`: one tool returning one output again and again, to calls with new arguments."""

from __future__ import annotations

import re

import pytest

from repeat_reminder_langchain import ConfigError, ReminderConfig
from repeat_reminder_langchain._canonical import digest
from repeat_reminder_langchain._counter import LoopCounter, Turn
from repeat_reminder_langchain._detectors import Seen
from repeat_reminder_langchain._detectors.same_output import MIN_OUTPUT, OUTPUTS, SameOutput
from repeat_reminder_langchain._record import Record, RecordError, read_record

from ..helpers import c, count, play

SAME_OUTPUT = ReminderConfig(
    detect=["same_output"], same_output_thresholds=[3, 4], error_pattern="^Error"
)
OUTPUT = "Traceback (most recent call last):\n  File repro.py, line 3\nValueError: bad"


def seen(key: str = "k", text: str = OUTPUT, tool: str = "bash") -> Seen:
    # Failed as the counter judges it under `error_pattern="^Error"`.
    return Seen(tool, key, 1, text, text.startswith("Error"), text, digest(text))


# -- the detector on its own ----------------------------------------------------------------------


def test_the_part_counts_one_tools_calls_returning_one_output_from_new_arguments() -> None:
    detector = SameOutput(SameOutput.settings())
    memory = detector.start({})
    assert detector.see(memory, seen("a")) is None  # one argument set: the same call again
    assert detector.see(memory, seen("a")) is None
    assert detector.see(memory, seen("b")) == 3  # every call that returned it counts
    assert detector.see(memory, seen("x", "y" * MIN_OUTPUT)) is None  # another output between
    assert detector.see(memory, seen("c")) == 4
    assert detector.see(memory, seen("d", tool="python")) is None  # another tool: its own
    details = detector.details(memory, lambda text: text[:9])
    assert details == {"evidence": "Traceback", "variants": 3}


def test_short_outputs_and_failures_are_not_counted() -> None:
    detector = SameOutput(SameOutput.settings())
    memory = detector.start({})
    short = " " * MIN_OUTPUT + "x" * (MIN_OUTPUT - 1)  # long, but short once stripped
    failure = "Error: " + "x" * MIN_OUTPUT
    for key in "abc":
        assert detector.see(memory, seen(key, short)) is None
        assert detector.see(memory, seen(key, failure)) is None  # same_error's
        assert detector.see(memory, seen(key, "[]")) is None
    assert detector.keep(memory) is None  # nothing counted: nothing kept


def test_an_output_of_exactly_min_output_characters_is_counted() -> None:
    detector = SameOutput(SameOutput.settings())
    memory = detector.start({})
    assert [detector.see(memory, seen(key, "x" * MIN_OUTPUT)) for key in "ab"] == [None, 2]


def test_it_remembers_the_latest_outputs_only() -> None:
    detector = SameOutput(SameOutput.settings())
    memory = detector.start({})
    for n in range(OUTPUTS + 1):
        detector.see(memory, seen("a", f"{n:>3} {OUTPUT}"))
    kept = detector.keep(memory)
    assert kept is not None and len(kept["outputs"]) == OUTPUTS
    assert detector.see(detector.start(kept), seen("b", f"{0:>3} {OUTPUT}")) is None  # forgotten
    assert detector.see(detector.start(kept), seen("b", f"{OUTPUTS:>3} {OUTPUT}")) == 2


@pytest.mark.parametrize(
    "kept",
    [
        {"outputs": []},
        {"outputs": {"o": [1]}},
        {"outputs": {"o": [0, []]}},
        {"outputs": {"o": [1, "ab"]}},
        {"outputs": {"o": [1, [2]]}},
    ],
)
def test_a_stored_memory_it_did_not_write_is_refused(kept: object) -> None:
    with pytest.raises(RecordError, match="stored same_output memory is not valid"):
        read_record({"detectors": {"same_output": kept}})


def test_a_stored_output_it_did_not_write_is_refused_saying_what_one_is() -> None:
    # The words of the log line that sets the record aside.
    expected = (
        "stored same_output memory is not valid: outputs.o: an output must be "
        "[calls, argument sets], got [0, []]"
    )
    with pytest.raises(RecordError, match=f"^{re.escape(expected)}$"):
        read_record({"detectors": {"same_output": {"outputs": {"o": [0, []]}}}})


def test_a_stored_memory_it_wrote_is_read_back() -> None:
    stored = {"detectors": {"same_output": {"outputs": {"bash\x00ab": [2, ["k1", "k2"]]}}}}
    assert read_record(stored) == stored
    once = {"detectors": {"same_output": {"outputs": {"bash\x00ab": [1, ["k1"]]}}}}
    assert read_record(once) == once  # what one call leaves


def test_a_memory_stored_by_0_5_0_counts_on() -> None:
    # A thread checkpointed by 0.5.0 and resumed by a later version: `run("a")` and `run("b")`
    # as 0.5.0 stored them (the tool and output's fingerprint, the argument sets').
    outputs = {"bash\x006e0aeb5aa4d06793": [2, ["d70022c8", "5f0ca2e8"]]}
    stored: Record = {"detectors": {"same_output": {"outputs": outputs}}}
    (reminder,) = count(stored, "t", [run("b")], SAME_OUTPUT).reminders
    assert "returned this same output 3 times, to 2 different sets of arguments" in reminder.text


# -- through the counter ----------------------------------------------------------------------


def run(name: str) -> object:
    return c(tool="bash", args={"command": f"python {name}.py"}, result=OUTPUT)


def write(name: str) -> object:
    return c(tool="bash", args={"command": f"cat > {name}.py"}, result="")


def test_the_same_experiment_under_new_names_draws_a_reminder() -> None:
    turns = [[write(name)] for name in "abcd"]
    turns = [[*w, run(name)] for w, name in zip(turns, "abcd", strict=True)]
    found = play(turns, SAME_OUTPUT)[1]
    assert found == [("same_output", "gentle", "bash", 3), ("same_output", "detailed", "bash", 4)]


def test_the_reminder_quotes_the_output_and_the_argument_sets() -> None:
    counter, record = LoopCounter(SAME_OUTPUT), {}
    for name in "abc":
        counted = counter.count(record, Turn(name, (run(name),)))
        record = counted.record or record
    (reminder,) = counted.reminders
    assert reminder.details == {"variants": 3, "evidence": OUTPUT}
    assert "returned this same output 3 times, to 3 different sets of arguments" in reminder.text
    assert OUTPUT in reminder.text


def test_an_output_remembers_at_most_sixteen_argument_sets() -> None:
    # A thread's record stays small however many variations the model tries.
    record, _ = play([[run(f"n{n}")] for n in range(20)], SAME_OUTPUT)
    ((calls, variants),) = record["detectors"]["same_output"]["outputs"].values()
    assert (calls, len(variants)) == (20, 16)


def test_a_new_user_message_starts_it_over() -> None:
    counter, record = LoopCounter(SAME_OUTPUT), {}
    found = []
    for n, name in enumerate("abcd"):
        counted = counter.count(record, Turn(name, (run(name),), spoke_before=n == 2))
        record = counted.record or record
        found += counted.reminders
    assert found == []  # two calls each side of the user


def test_the_same_call_again_is_said_by_repeat_first() -> None:
    config = ReminderConfig(detect=["repeat", "same_output"])
    turns = [[run("a")], [run("b")], [run("b")]]
    assert play(turns, config)[1] == [("same_output", "gentle", "bash", 3)]
    assert play([*turns, [run("b")]], config)[1][1:] == [("repeat", "gentle", "bash", 3)]


# -- reporting, not reminding -------------------------------------------------------------------


def test_it_reports_without_reminding_unless_asked() -> None:
    config = ReminderConfig(detect=["same_output"])
    counter, record = LoopCounter(config), {}
    for name in "abc":
        counted = counter.count(record, Turn(name, (run(name),)))
        record = counted.record or record
    (reported,) = counted.reminders
    assert (reported.detector, reported.count, reported.reminds) == ("same_output", 3, False)
    assert record["reminded"] is False  # the model read nothing: no answer to follow up
    asked = ReminderConfig(detect=["same_output"], detectors={"same_output": {"remind": True}})
    counter, record = LoopCounter(asked), {}
    for name in "abc":
        counted = counter.count(record, Turn(name, (run(name),)))
        record = counted.record or record
    assert [r.reminds for r in counted.reminders] == [True]
    assert record["reminded"] is True


def test_a_detector_that_reports_gives_way_to_one_that_reminds() -> None:
    # Any detector can be told to report only; `repeat` first by precedence, `stale` reminds.
    config = ReminderConfig(detect=["repeat", "stale"], detectors={"repeat": {"remind": False}})
    same = [[c(tool="read", args={"p": 1}, result="the same text")] for _ in range(3)]
    counter, record, found = LoopCounter(config), {}, []
    for number, calls in enumerate(same):
        counted = counter.count(record, Turn(f"t{number}", tuple(calls)))
        record = counted.record or record
        found += counted.reminders
    assert [(r.detector, r.reminds) for r in found] == [("stale", True)]
    alone = ReminderConfig(detectors={"repeat": {"remind": False}})
    reported = LoopCounter(alone)
    record = {}
    for number, calls in enumerate(same):
        counted = reported.count(record, Turn(f"t{number}", tuple(calls)))
        record = counted.record or record
    assert [(r.detector, r.reminds) for r in counted.reminders] == [("repeat", False)]


@pytest.mark.parametrize("value", [1, "yes", None])
def test_remind_takes_true_or_false(value: object) -> None:
    with pytest.raises(
        ConfigError, match=r"detectors: same_output\.remind: Input should be a valid boolean, got "
    ):
        ReminderConfig(detect=["same_output"], detectors={"same_output": {"remind": value}})
