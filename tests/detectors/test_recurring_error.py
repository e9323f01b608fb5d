"""`recurring_error`: one call failing the same way each time it is made, whatever lies between."""

from __future__ import annotations

import pytest

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._counter import LoopCounter, RecordError, Turn, read_record
from repeat_reminder_langchain._detectors import Seen
from repeat_reminder_langchain._detectors.recurring_error import CALLS, RecurringError

from ..helpers import c, play

RECURRING = ReminderConfig(
    detect=["recurring_error"], recurring_error_thresholds=[3, 4], error_pattern="^Error"
)


def seen(key: str = "k", text: str = "Error: card declined", tool: str = "book") -> Seen:
    # Failed as the counter judges it under `error_pattern="^Error"`.
    return Seen(tool, key, 1, text, text.startswith("Error"), text)


# -- the part on its own ----------------------------------------------------------------------


def test_the_part_counts_one_calls_failures_with_one_error() -> None:
    part = RecurringError(RECURRING, {})
    memory = part.start({})
    assert part.see(memory, seen("a")) == 1
    assert part.see(memory, seen("b")) == 1  # another call: a count of its own
    assert part.see(memory, seen("x", "found 3 flights", tool="search")) is None
    assert part.see(memory, seen("a")) == 2  # the search between changes nothing
    assert part.see(memory, seen("a", "Error: seat taken")) == 1  # another error
    assert part.details(memory, lambda text: text[:8]) == {"error": "Error: s"}


def test_a_success_of_the_call_forgets_its_failures() -> None:
    part = RecurringError(RECURRING, {})
    memory = part.start({})
    part.see(memory, seen("a"))
    part.see(memory, seen("a"))
    assert part.see(memory, seen("a", "booked")) is None
    assert part.keep(memory) is None  # nothing failing: nothing kept
    assert part.see(memory, seen("a")) == 1


def test_it_remembers_the_latest_failing_calls_only() -> None:
    part = RecurringError(RECURRING, {})
    memory = part.start({})
    for n in range(CALLS + 1):
        part.see(memory, seen(str(n)))
    kept = part.keep(memory)
    assert kept is not None and len(kept["calls"]) == CALLS
    assert part.see(part.start(kept), seen("0")) == 1  # the least recent was forgotten
    assert part.see(part.start(kept), seen(str(CALLS))) == 2


@pytest.mark.parametrize(
    "kept",
    [{"calls": []}, {"calls": {"c": ["e"]}}, {"calls": {"c": ["e", 0]}}, {"calls": {"c": "e:1"}}],
)
def test_a_stored_memory_it_did_not_write_is_refused(kept: object) -> None:
    with pytest.raises(RecordError, match="stored recurring_error memory is not valid"):
        read_record({"detectors": {"recurring_error": kept}})


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
    kept = {"calls": {"a": ["e", 2], "b": ["f", 1]}}
    stored = {"detectors": {"recurring_error": kept}}
    assert read_record(stored) == stored
