"""Reporting: each reminder and escalation as an event and a log line.

Events are LangChain custom events (`repeat_tool_reminder`, `repeat_tool_escalation`: they
show in `astream_events` and in LangSmith traces) and entries of the graph's custom stream
(`stream_mode="custom"`, which LangGraph server clients watch), as
`{"repeat_tool_reminder": {...}}`. Log lines go to the `repeat_reminder_langchain` logger:
reminders at INFO, escalations at WARNING, each naming the arguments by their digest only
(arguments may hold secrets, and logs travel far); `log_arguments=True` adds their preview.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from typing import Any, Literal, NamedTuple, Protocol, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer

from ._config import ReminderConfig
from ._conversation import SOURCE
from ._counter import Count
from ._log import LOGGER_NAME
from ._reminder import Escalation, Reminder

__all__ = [
    "ESCALATION_EVENT",
    "REMINDER_EVENT",
    "Delivery",
    "Dispatch",
    "EscalationEvent",
    "ReminderEvent",
    "Report",
    "escalation_event",
    "reminder_event",
    "report",
]

REMINDER_EVENT = SOURCE
ESCALATION_EVENT = "repeat_tool_escalation"

logger = logging.getLogger(LOGGER_NAME)

Delivery = Literal["sent", "undelivered"]
"""Whether a face puts its reminders in the conversation, or has no way to."""

_UNDELIVERED = (
    "no RepeatToolReminderNode ran after the tools node for this agent: put one there "
    "(custom graphs), or use RepeatToolReminderMiddleware with create_agent"
)


class ReminderEvent(TypedDict):
    """What a `repeat_tool_reminder` event carries."""

    tool: str
    count: int
    level: str
    detector: str
    summary: str
    arguments_digest: str
    mode: str
    delivered: bool
    thread_id: str | None
    guard: str


class EscalationEvent(TypedDict):
    """What a `repeat_tool_escalation` event carries."""

    tool: str
    count: int
    detector: str
    behavior: str
    summary: str
    arguments: str
    arguments_digest: str
    mode: str
    acted: bool
    thread_id: str | None
    guard: str


def reminder_event(
    reminder: Reminder,
    config: ReminderConfig,
    delivered: bool,
    thread: str | None = None,
    *,
    guard: str = "",
) -> ReminderEvent:
    """What the `repeat_tool_reminder` event of `reminder` carries; `guard`: the guard's name."""
    return {
        "tool": reminder.tool,
        "count": reminder.count,
        "level": reminder.level,
        "detector": reminder.detector,
        "summary": reminder.summary,
        "arguments_digest": reminder.digest,
        "mode": config.mode,
        "delivered": delivered,
        "thread_id": thread,
        "guard": guard,
    }


_NOT_STOPPED = "repeat tool loop would be stopped"  # observed, or nothing on the face ends it


def escalation_event(
    escalation: Escalation,
    config: ReminderConfig,
    thread: str | None = None,
    *,
    acted: bool = True,
    guard: str = "",
) -> EscalationEvent:
    """What the `repeat_tool_escalation` event of `escalation` carries; `guard`: its name."""
    return {
        "tool": escalation.tool,
        "count": escalation.count,
        "detector": escalation.detector,
        "behavior": escalation.behavior,
        "summary": escalation.summary,
        "arguments": escalation.arguments,
        "arguments_digest": escalation.digest,
        "mode": config.mode,
        "acted": acted and config.mode == "remind",
        "thread_id": thread,
        "guard": guard,
    }


class Dispatch(Protocol):
    """How a face sends a custom event: LangChain's `dispatch_custom_event`, or its async twin."""

    def __call__(
        self, name: str, data: Any, *, config: RunnableConfig | None = None
    ) -> Awaitable[None] | None:
        """Send the event; an async dispatcher returns what to await."""


class Report(NamedTuple):
    """What one turn of a guard has to report: built by the guard's step, sent by `report`.

    Attributes:
        found: What counting the turn found.
        config: The guard's configuration (its mode).
        delivered: Whether its reminders reach the model, and its escalation is carried out:
            not in observe mode, nor where a face cannot add messages or end the run.
        run_config: The config of the run to send the events from (None outside a graph run,
            and for a turn with nothing to report).
        thread: The conversation the run belongs to, if it has one.
        run: The invocation the turn is in (`_guard.invocation_of`), for the log lines.
        guard: The guard's name, which its events carry.
        named: Whether the user gave that name: then its log lines carry it too (a subagent's
            guard named for it tells its lines from the main agent's).
    """

    found: Count
    config: ReminderConfig
    delivered: bool
    run_config: RunnableConfig | None
    thread: str | None
    run: str | None
    guard: str = ""
    named: bool = False


def report(reported: Report | None, dispatch: Dispatch) -> list[Awaitable[None]]:
    """Log what a turn found, and send its events.

    Events go out through `dispatch`; an async dispatcher's sendings are returned, for an async
    face to await. None: nothing to report (most turns: nothing was due; or a human's answer
    resumed a loop reported when they were asked). The turn was added to the guard's stats by
    its step (`Guard.step`).
    """
    if reported is None:
        return []  # most turns
    sending: list[Awaitable[None]] = []
    for name, data in _logged(reported):
        _write(name, data)
        try:
            sent = dispatch(name, data, config=reported.run_config)
        except Exception:  # outside a run there is no one to tell
            logger.debug("%s event not dispatched", name, exc_info=True)
        else:
            if sent is not None:
                sending.append(_sent(name, sent))
    return sending


async def _sent(name: str, sending: Awaitable[None]) -> None:
    try:
        await sending
    except Exception:  # outside a run there is no one to tell
        logger.debug("%s event not dispatched", name, exc_info=True)


def _write(name: str, data: Mapping[str, Any]) -> None:
    """Put an event on the graph's custom stream, when there is a graph run to put it on."""
    try:
        get_stream_writer()({name: data})
    except Exception:
        logger.debug("%s event not written to the custom stream", name, exc_info=True)


def _logged(reported: Report) -> list[tuple[str, Mapping[str, Any]]]:
    """Log what a turn found; its events."""
    counted, config, thread, guard = (
        reported.found,
        reported.config,
        reported.thread,
        reported.guard,
    )
    where = _where(thread, reported.run, guard if reported.named else None)
    delivered = reported.delivered
    events: list[tuple[str, Mapping[str, Any]]] = []
    for reminder in counted.reminders:
        sent = delivered and reminder.reminds
        data = reminder_event(reminder, config, sent, thread, guard=guard)
        if sent:
            outcome = "sent"
        elif config.mode == "observe":
            outcome = "observed, not sent (observe mode)"
        elif not reminder.reminds:
            outcome = f"counted, not sent ({reminder.detector} reports only: remind=False)"
        else:
            outcome = f"due but not delivered ({_UNDELIVERED})"
        logger.info(
            "repeat tool reminder %s: %s (%s, %s), arguments %s%s",
            outcome,
            reminder.summary,
            reminder.level,
            reminder.detector,
            _arguments(reminder, config),
            where,
            # The same, as fields, for structured logging.
            extra={SOURCE: data, "thread_id": thread, "run_id": reported.run},
        )
        events.append((REMINDER_EVENT, data))
    if counted.escalation is not None:
        escalation = counted.escalation
        escalated = escalation_event(escalation, config, thread, acted=delivered, guard=guard)
        logged = escalated if config.log_arguments else _without_arguments(escalated)
        outcome = (
            escalation.exit.done if escalated["acted"] else "repeat tool loop would be stopped"
        )
        logger.warning(
            "%s: %s (%s, %s count reached escalate_after=%s), arguments %s%s",
            outcome,
            escalation.summary,
            escalation.behavior,
            escalation.detector,
            escalation.limit,
            _arguments(escalation, config),
            where,
            extra={ESCALATION_EVENT: logged, "thread_id": thread, "run_id": reported.run},
        )
        events.append((ESCALATION_EVENT, escalated))
    return events


def _where(thread: str | None, run: str | None, guard: str | None = None) -> str:
    """The guard, the thread and the run as a log line names them: nothing of what it has not."""
    return (
        (", guard " + guard if guard is not None else "")
        + (", thread " + thread if thread is not None else "")
        + (", run " + run if run is not None else "")
    )


def _arguments(due: Reminder | Escalation, config: ReminderConfig) -> str:
    """The arguments as a log line names them: the digest, with the preview if asked for."""
    return f"{due.digest} {due.arguments}" if config.log_arguments else due.digest


def _without_arguments(event: EscalationEvent) -> dict[str, Any]:
    """An escalation event as a log line's fields carry it: the arguments by digest only."""
    return {name: value for name, value in event.items() if name != "arguments"}
