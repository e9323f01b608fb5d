"""The guard step every face takes: acting on a count, asking a human once, records in state."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import MappingProxyType, SimpleNamespace
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import add_messages
from langgraph.types import Command
from pydantic import BaseModel

from repeat_reminder_langchain import (
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    from_guard,
)
from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain._escalation import interrupt_request, read_answer
from repeat_reminder_langchain._guard import StateStore
from repeat_reminder_langchain._record import Record
from repeat_reminder_langchain._reminder import Escalation

from .conftest import Guarded, build
from .helpers import (
    LoopModel,
    agent_graph,
    ask,
    assert_adjacent,
    call,
    model_call,
    probe,
    reminders,
    repeat,
    scripted,
    turn,
    wiring_warnings,
)

ESCALATION = Escalation("probe", 6, "repeat", '{"q":"same"}', "interrupt")
SAME = {"q": "same"}


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


# -- a conversation the guard joins, a run asked for its answer, a run outside a graph ---------


def handed_in(*made: AIMessage) -> list[BaseMessage]:
    """A conversation a client kept itself: the user's request, then `made`, each answered."""
    history: list[BaseMessage] = [HumanMessage("go")]
    for each in made:
        history += [each, ToolMessage("probed same", tool_call_id=each.tool_calls[0]["id"])]
    return history


def test_a_history_handed_in_counts_its_calls_as_their_tool_reads_them(
    guarded: Callable[..., Guarded],
) -> None:
    # The calls handed in spell the tool's default out, as a number or as text, or leave it
    # out: the tool reads each as the same call, so the model's own, the fifth, gets the
    # reminder of a fifth.
    @tool
    def probe(q: str = "", depth: int = 1) -> str:
        """Look something up."""
        return f"probed {q}"

    spelt = [SAME, {**SAME, "depth": 1}, {**SAME, "depth": "1"}, SAME]
    agent = guarded(scripted([turn(call("probe", {**SAME, "depth": 1}))]), tools=[probe])
    messages = agent.invoke({"messages": handed_in(*(turn(call("probe", a)) for a in spelt))})

    assert reminders(messages) == [("detailed", "probe", 5)]


def test_reminders_a_history_handed_in_drew_are_not_followed_up(
    guarded: Callable[..., Guarded],
) -> None:
    # The third call handed in drew a reminder no model read: the fourth is no follow-up of
    # it. The fifth is the model's, reminded; its answer then is the one recovery.
    agent = guarded(scripted(repeat("probe", SAME, 1)))
    messages = agent.invoke({"messages": handed_in(*repeat("probe", SAME, 4))})

    assert reminders(messages) == [("detailed", "probe", 5)]
    snapshot = agent.stats.snapshot()
    assert (snapshot["followed"], snapshot["recovered"]) == (1, 1)


def test_a_run_that_starts_with_no_message_is_guarded_and_logs_no_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A run started with no message (an agent working from its system prompt alone): there is
    # no history to read, and the guard counts the turns the run makes.
    agent = build("middleware", scripted(repeat("probe", SAME, 3)))
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        messages = agent.invoke({"messages": []})

    assert reminders(messages) == [("gentle", "probe", 3)]
    assert caplog.records == []


def test_asked_for_its_answer_a_model_is_held_to_it_until_the_user_speaks_again(
    thread: str,
) -> None:
    # The model answered as it was asked; a harness's note (not the user) wakes the thread,
    # and the model calls the loop's tool again: refused, not run, and the run ends. (The
    # middleware, which owns the model call, refuses it in the model's own step.)
    probe_again = turn(call("probe", SAME))
    model = scripted([*repeat("probe", SAME, 4), AIMessage("here is what I have"), probe_again])
    agent = build(
        "middleware",
        model,
        checkpointer=InMemorySaver(),
        thresholds=[3],
        escalate_after=4,
        exit_behavior="finish",
    )
    agent.invoke(ask(), thread)
    note = HumanMessage("job 7 finished", additional_kwargs={"lc_source": "notification"})
    messages = agent.invoke({"messages": [note]}, thread)

    refused, final = messages[-2:]
    assert (
        isinstance(refused, ToolMessage) and refused.tool_call_id == probe_again.tool_calls[0]["id"]
    )
    assert refused.status == "error" and from_guard(refused)
    tag = final.additional_kwargs["repeat_tool_reminder"]
    assert (tag["level"], tag["tool"], tag["count"]) == ("escalated", "probe", 5)


def test_the_missing_checkpointer_is_said_of_a_graph_never_of_a_call_outside_one(
    recwarn: pytest.WarningsRecorder,
) -> None:
    # A model call made outside any graph (a hook called on its own) has no checkpointer to
    # miss: the warning waits for the graph run that has none, and is said there.
    middleware = RepeatToolReminderMiddleware(
        thresholds=[3, 5], escalate_after=6, exit_behavior="interrupt"
    )
    added, _ = model_call(middleware, {"messages": handed_in(*repeat("probe", SAME, 3))})

    assert reminders(added) == [("gentle", "probe", 3)]
    assert wiring_warnings(recwarn.list) == []
    result = create_agent(LoopModel(), tools=[probe], middleware=[middleware]).invoke(ask("loop 9"))
    assert_adjacent(result["messages"])
    assert len(wiring_warnings(recwarn.list, "no checkpointer")) == 1


# -- a guard's name and its run, as its lines say them ----------------------------------------


def test_a_guards_default_name_says_every_tool_it_includes_and_excludes() -> None:
    # Two guards of one agent that watch different tools need different names: create_agent,
    # their events and their metrics tell them apart by name. Each pattern is said.
    guard = RepeatToolReminderMiddleware(
        include=["search_*", "fetch"], exclude=["search_cache", "fetch_local"]
    )
    assert guard.name == (
        "RepeatToolReminderMiddleware[include=search_*,fetch; exclude=search_cache,fetch_local]"
    )


class _ObjectState(BaseModel):
    """A state of the user's own, an object with the node's fields beside the conversation."""

    messages: Annotated[list[AnyMessage], add_messages]
    repeat_tool_reminder: dict[str, Any] | None = None
    repeat_tool_reminder_run: str | None = None


def test_the_lines_of_one_invocation_carry_its_id_on_an_object_state_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The state-kept node on a state object: each reminder is drawn in another graph step, and
    # the lines of the one invocation group together, by the id its first report kept.
    node = RepeatToolReminderNode(thresholds=[2, 3], profile="seed")
    graph = agent_graph(
        scripted(repeat("probe", SAME, 3)), [probe], None, after_tools=node, state=_ObjectState
    )
    with caplog.at_level(logging.INFO, "repeat_reminder_langchain"):
        messages = graph.invoke(ask())["messages"]

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]
    runs = [r.run_id for r in caplog.records if r.name == "repeat_reminder_langchain"]
    assert len(runs) == 2 and runs[0] == runs[1] is not None
