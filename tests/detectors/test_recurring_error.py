"""`recurring_error`: one call failing the same way each time it is made, whatever lies between."""

from __future__ import annotations

import re

import pytest

from repeat_reminder_langchain import ConfigError, ReminderConfig
from repeat_reminder_langchain._counter import LoopCounter, Turn
from repeat_reminder_langchain._detectors import Seen
from repeat_reminder_langchain._detectors.recurring_error import CALLS, RecurringError
from repeat_reminder_langchain._record import Record, RecordError, read_record

from ..helpers import c, count, play

RECURRING = ReminderConfig(
    detect=["recurring_error"], recurring_error_thresholds=[3, 4], error_pattern="^Error"
)


def seen(key: str = "k", text: str = "Error: card declined", tool: str = "book") -> Seen:
    # Failed as the counter judges it under `error_pattern="^Error"`.
    return Seen(tool, key, 1, text, text.startswith("Error"), text, compared=text)


# -- the detector on its own ----------------------------------------------------------------------


def test_the_part_counts_one_calls_failures_with_one_error() -> None:
    detector = RecurringError(RecurringError.settings())
    memory = detector.start({})
    assert detector.see(memory, seen("a")) == 1
    assert detector.see(memory, seen("b")) == 1  # another call: a count of its own
    assert detector.see(memory, seen("x", "found 3 flights", tool="search")) is None
    assert detector.see(memory, seen("a")) == 2  # the search between changes nothing
    assert detector.see(memory, seen("a", "Error: seat taken")) == 1  # another error
    assert detector.details(memory, lambda text: text[:8]) == {"error": "Error: s"}


def test_a_success_of_the_call_forgets_its_failures() -> None:
    detector = RecurringError(RecurringError.settings())
    memory = detector.start({})
    detector.see(memory, seen("a"))
    detector.see(memory, seen("a"))
    assert detector.see(memory, seen("a", "booked")) is None
    assert detector.keep(memory) is None  # nothing failing: nothing kept
    assert detector.see(memory, seen("a")) == 1


def test_it_remembers_the_latest_failing_calls_only() -> None:
    detector = RecurringError(RecurringError.settings())
    memory = detector.start({})
    for n in range(CALLS + 1):
        detector.see(memory, seen(str(n)))
    kept = detector.keep(memory)
    assert kept is not None and len(kept["calls"]) == CALLS
    assert detector.see(detector.start(kept), seen("0")) == 1  # the least recent was forgotten
    assert detector.see(detector.start(kept), seen(str(CALLS))) == 2


@pytest.mark.parametrize(
    "kept",
    [
        {"calls": []},
        {"calls": {"c": ["e"]}},
        {"calls": {"c": ["e", 0]}},
        {"calls": {"c": "e:1"}},
        {"calls": {"c": ["e", 1]}, "last": 3},
    ],
)
def test_a_stored_memory_it_did_not_write_is_refused(kept: object) -> None:
    with pytest.raises(RecordError, match="stored recurring_error memory is not valid"):
        read_record({"detectors": {"recurring_error": kept}})


def test_a_stored_call_it_did_not_write_is_refused_saying_what_one_is() -> None:
    # The words of the log line that sets the record aside.
    expected = (
        "stored recurring_error memory is not valid: calls.c: a call must be "
        "[error, failures], got ['e', 0]"
    )
    with pytest.raises(RecordError, match=f"^{re.escape(expected)}$"):
        read_record({"detectors": {"recurring_error": {"calls": {"c": ["e", 0]}}}})


# -- through the counter ----------------------------------------------------------------------

BOOK = c(tool="book", args={"card": "visa"}, result="Error: card declined")


def test_failures_count_across_other_tools_and_user_messages() -> None:
    counter, record = LoopCounter(RECURRING), {}
    found = []
    for number in range(4):
        search = c(tool="search", args={"q": number}, result="3 flights")
        turn = Turn(f"t{number}", (search, BOOK), spoke_before=number > 0)
        counted = counter.count(record, turn)
        record = counted.record or record
        found += [(r.detector, r.level, r.count) for r in counted.reminders]
    assert found == [("recurring_error", "gentle", 3), ("recurring_error", "detailed", 4)]
    (reminder,) = counted.reminders
    assert reminder.details == {"error": "Error: card declined"}
    assert "- failures_since_last_success: 4" in reminder.text


def test_each_payment_method_the_user_names_is_a_call_of_its_own() -> None:
    # The same error for other arguments is news: each is tried once.
    turns = [[c(tool="book", args={"card": card}, result="Error: card declined")] for card in "abc"]
    assert play(turns, RECURRING)[1] == []


def test_consecutive_identical_failures_are_said_by_repeat_first() -> None:
    config = ReminderConfig(detect=["repeat", "recurring_error"], error_pattern="^Error")
    assert play([[BOOK]] * 3, config)[1] == [("repeat", "gentle", "book", 3)]


def test_a_stored_memory_it_wrote_is_read_back() -> None:
    kept = {"calls": {"a": ["e", 2], "b": ["f", 1]}, "last": "b"}
    stored = {"detectors": {"recurring_error": kept}}
    assert read_record(stored) == stored


def test_a_memory_stored_by_0_5_0_counts_on() -> None:
    # A thread checkpointed by 0.5.0 and resumed by a later version: `BOOK` failing twice, a
    # search between, as 0.5.0 stored it (the call's fingerprint, the error's).
    calls = {"d8f27c1fac228766": ["27789397e85d8a1b", 2]}
    stored: Record = {"detectors": {"recurring_error": {"calls": calls}}}
    counted = count(stored, "t", [c(tool="search", result="3 flights"), BOOK], RECURRING_BY_CALL)
    assert [(r.detector, r.count) for r in counted.reminders] == [("recurring_error", 3)]


# -- by cause: one refusal the model comes back to, whatever it sends --------------------------


def refused(paid: int) -> object:
    args = {"flights": ["HAT1"], "paid": paid}
    return c(tool="book", args=args, result=f"Error: total price is 1002, but paid {paid}")


def total(expression: str) -> object:
    return c(tool="calculate", args={"expression": expression}, result="957.0")


def test_the_same_refusal_with_new_amounts_counts_when_the_model_comes_back_to_it() -> None:
    # The error echoes the amount sent: set aside, the refusal (the total it names) is one.
    turns = [[total("a")], [refused(957)], [total("b")], [refused(1047)], [total("c")]]
    turns += [[refused(957)]]
    found = play(turns, ReminderConfig(detect=["recurring_error"], error_pattern="^Error"))[1]
    assert found == [("recurring_error", "gentle", "book", 3)]
    assert play(turns, RECURRING_BY_CALL)[1] == []  # by the call alone: 957 twice


def test_by_cause_leaves_variations_one_after_another_to_same_error() -> None:
    turns = [[refused(paid)] for paid in (957, 1047, 1002, 990)]
    assert play(turns, ReminderConfig(detect=["recurring_error"], error_pattern="^Error"))[1] == []


def test_by_cause_a_success_of_the_tool_forgets_its_refusals() -> None:
    booked = c(tool="book", args={"paid": 1002}, result="booked")
    turns = [[refused(957)], [total("a")], [refused(1047)], [booked], [refused(990)], [total("b")]]
    turns += [[refused(957)]]
    assert play(turns, ReminderConfig(detect=["recurring_error"], error_pattern="^Error"))[1] == []


def test_numbers_the_call_did_not_send_are_part_of_the_cause() -> None:
    # Another total named is another refusal; a number only in the error is not set aside.
    other = c(tool="book", args={"paid": 957}, result="Error: total price is 1500, but paid 957")
    turns = [[refused(957)], [total("a")], [other], [total("b")], [refused(957)]]
    config = ReminderConfig(
        detect=["recurring_error"], recurring_error_thresholds=[2], error_pattern="^Error"
    )
    assert play(turns, config)[1] == [("recurring_error", "gentle", "book", 2)]  # call 4 only


def test_arguments_that_are_not_json_set_nothing_aside() -> None:
    detector = RecurringError(RecurringError.settings(by="cause"))
    memory = detector.start({})
    text = "Error: total price is 1002, but paid 957"
    between = Seen("other", "j", 1, "ok", False, "ok", compared="ok")
    assert (
        detector.see(memory, Seen("book", "k", 1, text, True, text, "", "not json 957", text)) == 1
    )
    assert detector.see(memory, between) is None
    assert (
        detector.see(memory, Seen("book", "k", 1, text, True, text, "", "not json 957", text)) == 2
    )
    # Lists, nested objects, strings that are numbers are walked; a flag is no number.
    sent = Seen("book", "m", 1, text, True, text, "", '{"amounts": [957, true]}', text)
    assert detector.see(memory, sent) == 1  # "paid 957" set aside: another cause than above
    assert detector.see(memory, between) is None
    again = Seen("book", "n", 1, text, True, text, "", '{"x": {"paid": "957"}}', text)
    assert detector.see(memory, again) == 2


def test_a_cause_forgotten_starts_over_even_right_after_itself() -> None:
    detector = RecurringError(RecurringError.settings(by="cause"))
    memory = detector.start({})
    text = "Error: sold out"
    assert detector.see(memory, Seen("book", "k", 1, text, True, text, "", "{}", text)) == 1
    memory.calls.clear()  # forgotten (the least recent go first), though seen last
    assert detector.see(memory, Seen("book", "j", 1, text, True, text, "", "{}", text)) == 1
    kept = detector.keep(memory)
    assert kept is not None and all(entry[1] > 0 for entry in kept["calls"].values())


@pytest.mark.parametrize("value", ["tool", 1, None])
def test_by_takes_call_or_cause(value: object) -> None:
    with pytest.raises(
        ConfigError, match=r"recurring_error\.by: Input should be 'call' or 'cause', got "
    ):
        ReminderConfig(detect=["recurring_error"], detectors={"recurring_error": {"by": value}})


RECURRING_BY_CALL = ReminderConfig(
    detect=["recurring_error"],
    detectors={"recurring_error": {"by": "call"}},
    error_pattern="^Error",
)
