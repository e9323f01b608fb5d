"""What the guard reports: custom events, log lines with their fields, and reporting off-graph."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Callable
from typing import Any, NotRequired

import pytest
from langchain_core.callbacks import (
    BaseCallbackHandler,
    CallbackManager,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState

import repeat_reminder_langchain._guard as guard_module
from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)
from repeat_reminder_langchain._counter import Count
from repeat_reminder_langchain._events import (
    Report,
    escalation_event,
    reminder_event,
    report,
)
from repeat_reminder_langchain._reminder import Escalation, Reminder

from .conftest import Guarded
from .helpers import (
    agent_graph,
    amodel_call,
    ask,
    assert_adjacent,
    call,
    final_messages,
    model_call,
    probe,
    reminders,
    repeat,
    scripted,
    turn,
)

SAME = {"q": "same"}
Make = Callable[..., Guarded]
DIGEST = re.compile("^[0-9a-f]{32}$")
RUN_ID = re.compile("^[0-9a-f-]{36}$")


class Collector(BaseCallbackHandler):
    """Collects the custom events of a synchronous run."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append((name, data))


# -- custom events ----------------------------------------------------------------------------


async def test_reminders_are_custom_events_in_astream_events(guarded: Make) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 2)), thresholds=[2])
    run = [e async for e in agent.graph.astream_events(ask(), agent.run_config(), version="v2")]
    events = [e for e in run if e["event"] == "on_custom_event"]

    assert_adjacent(final_messages(run))
    assert [e["name"] for e in events] == ["repeat_tool_reminder"]
    data = events[0]["data"]
    assert data == {
        "tool": "probe",
        "count": 2,
        "level": "gentle",
        "detector": "repeat",
        "summary": "probe × 2",
        "arguments_digest": data["arguments_digest"],
        "mode": "remind",
        "delivered": True,
        "thread_id": None,
        "guard": type(agent.handler or agent.guard).__name__,  # a guard's default name: its face
    }
    assert DIGEST.match(data["arguments_digest"])


def test_events_name_the_thread_of_the_run(guarded: Make, thread: str) -> None:
    agent = guarded(
        scripted(repeat("probe", SAME, 2)), checkpointer=InMemorySaver(), thresholds=[2]
    )
    collector = Collector()
    agent.invoke(ask(), thread, callbacks=[collector])

    assert [(name, data["thread_id"]) for name, data in collector.events] == [
        ("repeat_tool_reminder", thread)
    ]


def test_an_escalation_event_names_the_thread_of_the_run(guarded: Make, thread: str) -> None:
    # A monitor that watches for stopped loops tells which conversation was stopped.
    agent = guarded(
        scripted(repeat("probe", SAME, 3)),
        checkpointer=InMemorySaver(),
        thresholds=[2],
        escalate_after=3,
    )
    collector = Collector()
    agent.invoke(ask(), thread, callbacks=[collector])

    assert [(name, data["thread_id"]) for name, data in collector.events] == [
        ("repeat_tool_reminder", thread),
        ("repeat_tool_escalation", thread),
    ]


def test_events_name_the_thread_a_run_without_a_checkpointer_is_traced_under(
    guarded: Make,
) -> None:
    # No checkpointer, no thread of LangGraph's: the thread the run's metadata names (as
    # LangSmith groups traces into threads) is the one its events name.
    agent = guarded(scripted(repeat("probe", SAME, 3)), thresholds=[2], escalate_after=3)
    collector = Collector()
    agent.invoke(ask(), callbacks=[collector], metadata={"thread_id": "traced-1"})

    assert [(name, data["thread_id"]) for name, data in collector.events] == [
        ("repeat_tool_reminder", "traced-1"),
        ("repeat_tool_escalation", "traced-1"),
    ]


def test_an_escalation_event_carries_the_digest_its_reminders_carried(guarded: Make) -> None:
    # The digest is what joins a loop's reminders and its escalation, arguments unseen.
    agent = guarded(scripted(repeat("probe", SAME, 3)), thresholds=[2], escalate_after=3)
    collector = Collector()
    agent.invoke(ask(), callbacks=[collector])

    (reminded, escalated) = [data for _, data in collector.events]
    assert DIGEST.match(escalated["arguments_digest"])
    assert escalated["arguments_digest"] == reminded["arguments_digest"]


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_observed_reminders_are_custom_events_marked_not_delivered(
    guarded: Make, asynchronous: bool
) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 3)), mode="observe")
    if asynchronous:
        run = [e async for e in agent.graph.astream_events(ask(), agent.run_config(), version="v2")]
        assert_adjacent(final_messages(run))
        events = [(e["name"], e["data"]) for e in run if e["event"] == "on_custom_event"]
    else:
        collector = Collector()
        agent.invoke(ask(), callbacks=[collector])
        events = collector.events

    assert [(name, data["delivered"], data["mode"]) for name, data in events] == [
        ("repeat_tool_reminder", False, "observe")
    ]


def test_event_data_says_what_fired_and_where() -> None:
    reminder = Reminder("grep", 5, "detailed", '{"q":1}', "d" * 32, "stale")
    observed = reminder_event(reminder, ReminderConfig(mode="observe"), False, "t-1", guard="g")
    assert observed == {
        "tool": "grep",
        "count": 5,
        "level": "detailed",
        "detector": "stale",
        "summary": "grep × 5",
        "arguments_digest": "d" * 32,
        "mode": "observe",
        "delivered": False,
        "thread_id": "t-1",
        "guard": "g",
    }
    escalation = Escalation("grep", 9, "repeat", '{"q":1}', "end", "d" * 32)
    config = ReminderConfig(escalate_after=9)
    # Every field, as a monitor reads it: what was stopped, and how (its mode acts).
    assert escalation_event(escalation, config, "t-1", guard="g") == {
        "tool": "grep",
        "count": 9,
        "detector": "repeat",
        "behavior": "end",
        "summary": "grep × 9",
        "arguments": '{"q":1}',
        "arguments_digest": "d" * 32,
        "mode": "remind",
        "acted": True,
        "thread_id": "t-1",
        "guard": "g",
    }
    assert escalation_event(escalation, config, acted=False)["acted"] is False
    observing = ReminderConfig(escalate_after=9, mode="observe")
    assert escalation_event(escalation, observing)["acted"] is False  # observe never acts
    assert escalation_event(escalation, observing)["mode"] == "observe"


# -- log lines --------------------------------------------------------------------------------


def test_reminders_are_logged_at_info_with_a_digest_not_the_arguments(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    secret = {"token": "s3cr3t-value"}
    agent = guarded(scripted(repeat("probe", secret, 2)), thresholds=[2])
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        agent.invoke(ask(), "t-9")

    (record,) = [r for r in caplog.records if r.name == "repeat_reminder_langchain"]
    line = record.getMessage()
    assert record.levelno == logging.INFO
    assert line.startswith("repeat tool reminder sent: probe × 2 (gentle, repeat), arguments ")
    assert re.search(r", thread t-9, run [0-9a-f-]{36}$", line)
    assert "s3cr3t" not in line
    # The same, as fields, for structured logging.
    fields = record.__dict__
    assert fields["repeat_tool_reminder"]["summary"] == "probe × 2"
    assert fields["thread_id"] == "t-9"
    assert str(fields["run_id"]) in line
    assert "s3cr3t" not in str(fields["repeat_tool_reminder"])


def test_an_escalation_is_logged_at_warning_with_its_thread_and_run(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 3)), thresholds=[2], escalate_after=3)
    with caplog.at_level(logging.WARNING, logger="repeat_reminder_langchain"):
        agent.invoke(ask(), "t-9")

    (record,) = [r for r in caplog.records if r.name == "repeat_reminder_langchain"]
    assert record.levelno == logging.WARNING
    assert re.search(r", thread t-9, run [0-9a-f-]{36}$", record.getMessage())
    assert record.__dict__["thread_id"] == "t-9"


def test_a_run_without_a_thread_is_logged_without_one(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    agent = guarded(scripted(repeat("probe", SAME, 3)), thresholds=[2], escalate_after=3)
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        agent.invoke(ask())  # checked for call/result adjacency

    records = [r for r in caplog.records if r.name == "repeat_reminder_langchain"]
    assert [r.levelno for r in records] == [logging.INFO, logging.WARNING]
    for record in records:
        line = record.getMessage()
        assert re.search(r"\), arguments [0-9a-f]{32}, run [0-9a-f-]{36}$", line), line
        assert "thread" not in line
        assert record.__dict__["thread_id"] is None  # the field stays, for structured logging


def test_a_node_run_outside_any_graph_names_no_run_it_does_not_have(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Called as a plain function (a test of the user's, a graph of another library): no
    # thread, no run. The line leaves both out rather than saying "run None".
    node = RepeatToolReminderNode(thresholds=[2])
    looped = [*ask()["messages"]]
    for n in range(2):
        looped += [AIMessage("", tool_calls=[call("probe", SAME, f"c{n}")])]
        looped += [ToolMessage("same", tool_call_id=f"c{n}")]
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        update = node({"messages": looped}, {})

    assert len(update["messages"]) == 1  # the reminder
    [line] = [r.getMessage() for r in caplog.records if r.name == "repeat_reminder_langchain"]
    assert re.search(r"\), arguments [0-9a-f]{32}$", line), line
    assert caplog.records[-1].__dict__["run_id"] is None  # the field stays, as thread_id's


def test_a_node_called_with_a_runs_config_sends_its_events_to_that_run() -> None:
    # Called by a function of the user's that hands it a run's config outside LangGraph's
    # context: the events go to that run's handlers, not to whatever run the context holds.
    node = RepeatToolReminderNode(thresholds=[2])
    looped = [*ask()["messages"]]
    for n in range(2):
        looped += [AIMessage("", tool_calls=[call("probe", SAME, f"c{n}")])]
        looped += [ToolMessage("same", tool_call_id=f"c{n}")]
    collector = Collector()
    run: Any = {"callbacks": CallbackManager([collector], parent_run_id=uuid.uuid4())}

    update = node({"messages": looped}, run)

    assert len(update["messages"]) == 1  # the reminder
    assert [name for name, _ in collector.events] == ["repeat_tool_reminder"]
    assert collector.events[0][1]["summary"] == "probe × 2"


def _runs_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.run_id for r in caplog.records if r.name == "repeat_reminder_langchain"]


def test_the_log_lines_of_one_invocation_carry_its_id(
    guarded: Make, thread: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Two invocations on one thread, each drawing two reminders: the lines of each group
    # together, whichever graph step drew them.
    script = [*repeat("probe", SAME, 3), AIMessage("first"), *repeat("probe", SAME, 3)]
    agent = guarded(scripted(script), thresholds=[2, 3], checkpointer=InMemorySaver())
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        agent.invoke(ask(), thread)
        agent.invoke(ask("again"), thread)

    first, second = _runs_logged(caplog)[:2], _runs_logged(caplog)[2:]
    assert len(first) == len(second) == 2
    assert first[0] == first[1] != second[0] == second[1]
    assert all(RUN_ID.match(run) for run in first + second)
    assert "repeat_tool_reminder_run" not in agent.state(thread)  # kept for the run only


def test_the_log_lines_carry_the_run_id_langgraph_was_given(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    # The LangGraph server gives each of its runs its id this way.
    agent = guarded(scripted(repeat("probe", SAME, 3)), thresholds=[2, 3])
    given = uuid.uuid4()
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        agent.invoke(ask(), run_id=given)

    assert _runs_logged(caplog) == [str(given)] * 2


def test_an_escalation_log_line_carries_the_run_id_too(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    agent = guarded(
        scripted([*repeat("probe", SAME, 3), AIMessage("done")]), thresholds=[2], escalate_after=3
    )
    given = uuid.uuid4()
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        agent.invoke(ask(), run_id=given)

    assert any(r.levelname == "WARNING" for r in caplog.records)  # the escalation's line
    assert _runs_logged(caplog) == [str(given)] * 2


def test_a_state_without_the_run_field_logs_each_steps_own_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A user's own state with the counts' field alone: the node cannot keep the invocation's
    # id, and each line names the run of the step that drew it.
    class Own(MessagesState):
        repeat_tool_reminder: NotRequired[dict[str, Any]]

    node = RepeatToolReminderNode(thresholds=[2, 3])
    graph = agent_graph(
        scripted(repeat("probe", SAME, 3)), [probe], None, after_tools=node, state=Own
    )
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        result = graph.invoke(ask())

    assert_adjacent(result["messages"])
    first, second = _runs_logged(caplog)
    assert first != second and RUN_ID.match(first) and RUN_ID.match(second)


# -- reporting outside a graph ----------------------------------------------------------------


def _told(found: Count, delivered: bool = True, **fields: Any) -> Report:
    return Report(found, ReminderConfig(**fields), delivered, None, None, None)


async def _areport(told: Report) -> None:
    for sending in report(told, adispatch_custom_event):
        await sending


def test_reporting_outside_a_run_still_logs(caplog: pytest.LogCaptureFixture) -> None:
    tally = Count({}, [Reminder("grep", 3, "gentle", "{}", "d" * 32)], calls=1)
    with caplog.at_level(logging.DEBUG, logger="repeat_reminder_langchain"):
        report(_told(tally), dispatch_custom_event)
        asyncio.run(_areport(_told(tally, False, mode="observe")))
        report(_told(tally, False), dispatch_custom_event)

    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("repeat_tool_reminder event not dispatched") == 3
    assert messages.count("repeat_tool_reminder event not written to the custom stream") == 3
    assert any(m.startswith("repeat tool reminder sent: grep × 3") for m in messages)
    assert any(m.startswith("repeat tool reminder observed, not sent (observe mode): grep × 3")
               for m in messages)  # fmt: skip
    assert any(m.startswith("repeat tool reminder due but not delivered (") for m in messages)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_an_event_that_cannot_be_sent_says_why_at_debug(
    caplog: pytest.LogCaptureFixture, asynchronous: bool
) -> None:
    tally = Count({}, [Reminder("grep", 3, "gentle", "{}", "d" * 32)], calls=1)
    with caplog.at_level(logging.DEBUG, logger="repeat_reminder_langchain"):
        if asynchronous:  # the async faces' dispatcher fails when its sending is awaited
            asyncio.run(_areport(_told(tally)))
        else:
            report(_told(tally), dispatch_custom_event)

    unsent = [r for r in caplog.records if r.getMessage().startswith("repeat_tool_reminder event")]
    assert len(unsent) == 2  # not dispatched, not written to the custom stream
    # With what stopped it, to debug (a line logged with exc_info=False carries False).
    assert all(r.exc_info and isinstance(r.exc_info[1], Exception) for r in unsent)


def test_outside_a_graph_the_log_lines_carry_no_run_id(caplog: pytest.LogCaptureFixture) -> None:
    # No run to name: a structured log gets an empty field (null), not the text "None".
    done = turn(call("probe", SAME), call("probe", SAME))
    state = {"messages": [done, *(ToolMessage("r", tool_call_id=c["id"]) for c in done.tool_calls)]}
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        _, update = model_call(RepeatToolReminderMiddleware(thresholds=[2]), state)

    assert update is not None and "repeat_tool_reminder_run" not in update
    assert [r.__dict__["run_id"] for r in caplog.records] == [None]


def test_in_a_runnable_outside_a_graph_each_line_names_the_run_it_was_drawn_in(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A model call the user's own runnable makes, in no graph: no invocation to keep an id
    # for, so each line names the run that drew it, and the next call's names its own.
    guard = RepeatToolReminderMiddleware(thresholds=[2])
    done = turn(call("probe", SAME), call("probe", SAME))
    results = [ToolMessage("r", tool_call_id=c["id"]) for c in done.tool_calls]
    runs = [uuid.uuid4(), uuid.uuid4()]
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        for run in runs:  # each call a state of its own: the conversation, as new
            RunnableLambda(lambda state: model_call(guard, state)).invoke(
                {"messages": [done, *results]}, {"run_id": run}
            )

    assert [r.__dict__["run_id"] for r in caplog.records] == [str(run) for run in runs]


async def test_the_middleware_hooks_work_outside_a_graph_and_survive_their_own_bugs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    middleware = RepeatToolReminderMiddleware(thresholds=[2])
    done = turn(call("probe", SAME), call("probe", SAME))
    results = [ToolMessage("r", tool_call_id=c["id"]) for c in done.tool_calls]
    state = {"messages": [done, *results]}
    added, update = model_call(middleware, state)
    assert update is not None
    assert reminders(added) == [("gentle", "probe", 2)]

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("guard bug")

    monkeypatch.setattr(guard_module, "reminder_message", broken)
    with caplog.at_level(logging.ERROR, logger="repeat_reminder_langchain"):
        assert await amodel_call(middleware, dict(state)) == ([], None)  # another call
    assert "repeat reminder middleware failed" in caplog.text
