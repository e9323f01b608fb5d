"""What the faces share: acting on a counted turn, asking once, and streaks kept in state."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._steps import Asked, StateStore
from repeat_reminder_langchain._streaks import Streaks, Tally
from repeat_reminder_langchain.escalation import interrupt_request, read_answer
from repeat_reminder_langchain.reminder import Escalation

ESCALATION = Escalation("probe", 6, "repeat", '{"q":"same"}', "interrupt")


def test_the_answers_a_human_can_give() -> None:
    assert read_answer("continue") == ("continue", "")
    assert read_answer("  END ") == ("end", "")
    assert read_answer("read the log instead") == ("message", "read the log instead")
    for unclear in (None, "", "   ", 3, {"choice": "end"}):
        assert read_answer(unclear) == ("continue", "")  # a resume never fails the run
    assert interrupt_request(ESCALATION)["choices"][:2] == ["continue", "end"]


def test_an_escalation_put_to_a_human_is_reported_once_and_the_memory_stays_bounded() -> None:
    asked, config = Asked(), ReminderConfig(escalate_after=9, exit_behavior="interrupt")
    tally = Tally(Streaks(turn="t"), escalation=ESCALATION)
    assert asked.first_time(tally, config, "thread")  # reported when it first asks
    assert not asked.first_time(tally, config, "thread")  # not again when the human answers
    assert asked.first_time(tally, config, "thread")  # a new question after that
    asked.limit = 2
    for n in range(5):
        asked.first_time(Tally(Streaks(turn=f"t{n}"), escalation=ESCALATION), config, None)
    assert len(asked._waiting) <= 2
    ended = Tally(Streaks(turn="t"), escalation=replace(ESCALATION, behavior="end"))
    assert asked.first_time(ended, config, "thread") and asked.first_time(ended, config, "thread")
    observed = ReminderConfig(escalate_after=9, exit_behavior="interrupt", mode="observe")
    assert asked.first_time(tally, observed, "x") and asked.first_time(tally, observed, "x")


def test_stored_streaks_are_read_from_dicts_objects_and_other_mappings() -> None:
    store = StateStore("field", "mine")
    data = Streaks(turn="t", tool="probe", digest="d", count=2).to_dict()

    class State:
        def __init__(self) -> None:
            self.field = {"mine": data}

    assert store.streaks({"field": {"mine": data}}).count == 2
    assert store.streaks(State()).count == 2
    assert store.streaks({"field": "garbage"}) == Streaks()
    assert store.streaks({"field": {"mine": "garbage"}}) == Streaks()
    assert store.update({"field": "garbage"}, data) == {"field": {"mine": data}}
    assert store.update({"field": {"other": 1}}, data) == {"field": {"other": 1, "mine": data}}
    assert StateStore("field").update({}, data) == {"field": data}


def test_stored_data_that_is_not_valid_starts_over_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = StateStore("field")
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        for bad in ({"count": "many"}, {"count": -1}):
            assert store.streaks({"field": bad}) == Streaks()
    assert [r.getMessage() for r in caplog.records] == [
        "stored repeat reminder state is not valid (stored count must be a count, got "
        "'many'); starting over"
    ]


def test_what_was_parsed_is_remembered_and_the_oldest_forgotten_first() -> None:
    store = StateStore("field")
    store.limit = 3
    written: list[Any] = []
    for count in range(1, 6):
        update = store.write({}, Streaks(turn="t", count=count))
        written.append(update["field"])
    assert len(store._parsed) == 3
    assert store.streaks({"field": written[-1]}).count == 5  # the newest, remembered
    assert store.streaks({"field": written[0]}).count == 1  # the oldest, parsed again
