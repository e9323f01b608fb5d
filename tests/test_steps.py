"""What the faces share: acting on a counted turn, asking once, and streaks kept in state."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain._steps import Asked, StateStore
from repeat_reminder_langchain._streaks import Streaks, Tally
from repeat_reminder_langchain.escalation import interrupt_request, read_answer
from repeat_reminder_langchain.reminder import Escalation

from .conftest import Guarded
from .helpers import LoopModel, ask, assert_adjacent

ESCALATION = Escalation("probe", 6, "repeat", '{"q":"same"}', "interrupt")


def test_the_answers_a_human_can_give() -> None:
    assert read_answer("continue") == ("continue", "")
    assert read_answer("  END ") == ("end", "")
    assert read_answer("read the log instead") == ("message", "read the log instead")
    for unclear in (None, "", "   ", 3, {"choice": "end"}):
        assert read_answer(unclear) == ("continue", "")  # a resume never fails the run
    assert interrupt_request(ESCALATION)["choices"][:2] == ["continue", "end"]


@pytest.mark.parametrize(
    ("answer", "choice"), [("continue", "continue"), (" End", "end"), ("read the log", "message")]
)
def test_the_humans_answer_to_an_escalation_is_logged(
    guarded: Callable[..., Guarded],
    thread: str,
    caplog: pytest.LogCaptureFixture,
    answer: str,
    choice: str,
) -> None:
    agent = guarded(
        LoopModel(),
        checkpointer=InMemorySaver(),
        thresholds=[3, 5],
        escalate_after=6,
        exit_behavior="interrupt",
    )
    agent.graph.invoke(ask("loop 9"), agent.run_config(thread))
    with caplog.at_level(logging.INFO, "repeat_reminder_langchain"):
        agent.graph.invoke(Command(resume=answer), agent.run_config(thread))
    resumed = [r for r in caplog.records if "resumed" in r.getMessage().lower()]
    assert [(r.levelno, r.getMessage()) for r in resumed] == [
        (logging.INFO, f"repeat tool loop on probe \u00d7 6: resumed with {choice!r}")
    ]
    assert_adjacent(agent.state(thread)["messages"])


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


def test_each_thread_and_turn_is_asked_about_on_its_own() -> None:
    asked, config = Asked(), ReminderConfig(escalate_after=9, exit_behavior="interrupt")
    tally = Tally(Streaks(turn="t"), escalation=ESCALATION)
    later = Tally(Streaks(turn="u"), escalation=ESCALATION)
    assert asked.first_time(tally, config, "a")
    assert asked.first_time(later, config, "a")  # another turn of the same thread
    assert asked.first_time(tally, config, "b")  # the same turn id in another thread
    assert not asked.first_time(tally, config, "a")  # the human answered in thread a
    assert not asked.first_time(later, config, "a")
    assert not asked.first_time(tally, config, "b")


@pytest.mark.parametrize(
    "state",
    [dict, lambda **fields: MappingProxyType(fields), SimpleNamespace],
    ids=["dict", "other mapping", "object"],
)
def test_stored_streaks_are_read_from_dicts_objects_and_other_mappings(
    state: Callable[..., Any],
) -> None:
    store = StateStore("field", "mine")
    data = Streaks(turn="t", tool="probe", digest="d", count=2).to_dict()

    assert store.streaks(state(field={"mine": data})).count == 2
    assert store.streaks(state(field=MappingProxyType({"mine": MappingProxyType(data)}))).count == 2
    assert store.streaks(state()) == Streaks()  # nothing stored yet
    assert store.streaks(state(field="garbage")) == Streaks()
    assert store.streaks(state(field={"mine": "garbage"})) == Streaks()
    assert store.update(state(), data) == {"field": {"mine": data}}
    assert store.update(state(field="garbage"), data) == {"field": {"mine": data}}
    assert store.update(state(field={"other": 1}), data) == {"field": {"other": 1, "mine": data}}
    others = MappingProxyType({"other": 1})
    assert store.update(state(field=others), data) == {"field": {"other": 1, "mine": data}}
    assert StateStore("field").update(state(), data) == {"field": data}


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


def test_a_named_store_reads_what_it_wrote_without_parsing_it_again() -> None:
    store = StateStore("field", "mine")
    kept = Streaks(turn="t", tool="probe", digest="d", count=2)
    assert store.streaks(store.write({}, kept)) is kept


def test_what_was_parsed_is_remembered_and_the_oldest_forgotten_first() -> None:
    store = StateStore("field")
    store.limit = 3
    streaks = [Streaks(turn="t", count=count) for count in range(1, 6)]
    written = [store.write({}, kept)["field"] for kept in streaks]
    assert len(store._parsed) == 3
    assert store.streaks({"field": written[-1]}) is streaks[-1]  # the newest, remembered
    again = store.streaks({"field": written[0]})  # the oldest, parsed again
    assert again == streaks[0] and again is not streaks[0]
