"""The guard step every face takes: acting on a count, asking a human once, records in state."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain._escalation import interrupt_request, read_answer
from repeat_reminder_langchain._guard import StateStore
from repeat_reminder_langchain._record import Record
from repeat_reminder_langchain._reminder import Escalation

from .conftest import Guarded, build
from .helpers import LoopModel, ask, assert_adjacent, repeat, scripted

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


@pytest.mark.parametrize("face", ["state", "middleware"])
def test_an_escalation_put_to_a_human_is_reported_once_whichever_process_resumes_it(
    face: str, thread: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Two graphs built from the same code share one checkpointer, as two workers of a server
    # do: the one that asks is not the one that resumes. The question is reported once.
    saver = InMemorySaver()
    fields: dict[str, Any] = {"thresholds": [3, 5], "escalate_after": 6}
    asking = build(face, LoopModel(), checkpointer=saver, exit_behavior="interrupt", **fields)
    resuming = build(face, LoopModel(), checkpointer=saver, exit_behavior="interrupt", **fields)
    with caplog.at_level(logging.INFO, "repeat_reminder_langchain"):
        asking.graph.invoke(ask("loop 9"), asking.run_config(thread))
        resuming.graph.invoke(Command(resume="end"), resuming.run_config(thread))

    stopped = [r for r in caplog.records if r.getMessage().startswith("repeat tool loop")]
    assert [r.levelno for r in stopped] == [logging.WARNING, logging.INFO]  # asked, resumed
    assert asking.stats.snapshot()["escalations"] == {"probe": {"repeat": 1}}
    assert resuming.stats.snapshot()["escalations"] == {}
    assert resuming.stats.snapshot()["calls"] == 0  # the turn was counted where it was asked
    assert_adjacent(resuming.state(thread)["messages"])


def test_every_reminder_kept_as_a_system_message_reaches_a_model_that_takes_none_as_a_user_turn(
    thread: str,
) -> None:
    # Two reminders, each kept where it was added as a system message: a model that takes no
    # system message mid-conversation (Anthropic rejects one) is sent both as user turns, the
    # earlier one as well as the latest, in this run and when the thread goes on.
    model = scripted([*repeat("probe", {"q": "same"}, 3), AIMessage("done"), "done again"])
    agent = build("middleware", model, checkpointer=InMemorySaver(), thresholds=[2, 3])
    messages = agent.invoke(ask(), thread)
    agent.invoke(ask("go on"), thread)

    stored = [m for m in messages if is_reminder(m)]
    assert [m.type for m in stored] == ["system", "system"]
    for request in (model.seen[3], model.seen[4]):  # the answer after them, and the next run's
        sent = [m for m in request if is_reminder(m)]
        assert [(m.type, m.id) for m in sent] == [("human", m.id) for m in stored]


@pytest.mark.parametrize(
    "state",
    [dict, lambda **fields: MappingProxyType(fields), SimpleNamespace],
    ids=["dict", "other mapping", "object"],
)
def test_stored_records_are_read_from_dicts_objects_and_other_mappings(
    state: Callable[..., Any],
) -> None:
    store = StateStore("field", "mine")
    record: Record = {"turn": "t", "tool": "probe", "key": "d", "count": 2}

    assert store.read(state(field={"mine": record})) == record
    assert store.read(state(field=MappingProxyType({"mine": MappingProxyType(record)}))) == record
    assert store.read(state()) == {}  # nothing stored yet
    assert store.read(state(field="garbage")) == {}
    assert store.read(state(field={"mine": "garbage"})) == {}
    assert store.write(state(), record) == {"field": {"mine": record}}
    assert StateStore("field").write(state(), record) == {"field": record}
    assert StateStore("field").read(state(field=record)) == record


def test_stored_data_that_is_not_valid_starts_over_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = StateStore("field")
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        for bad in ({"count": "many"}, {"count": -1}):
            assert store.read({"field": bad}) == {}
    assert [r.getMessage() for r in caplog.records] == [
        "stored repeat reminder state is not valid (stored count must be a int, got "
        "'many'); counting the conversation again"
    ]


def test_the_record_written_last_is_read_back_and_any_other_is_checked() -> None:
    store = StateStore("field")
    record: Record = {"turn": "t", "tool": "probe", "count": 2}
    store.write({}, record)
    kept = dict(record)  # as a checkpoint gives it back: equal, another object
    assert store.read({"field": kept}) is kept
    assert store.read({"field": {**record, "count": -1}}) == {}
    assert store.read({"field": {**record, "count": "2"}}) == {}
    assert store.read({"field": MappingProxyType(record)}) == record  # not a dict: checked
