"""Reporting: each reminder and escalation as an event, a log line and a stats entry.

Events are LangChain custom events (`repeat_tool_reminder`, `repeat_tool_escalation`: they
show in `astream_events` and in LangSmith traces) and entries of the graph's custom stream
(`stream_mode="custom"`, which LangGraph server clients watch), as
`{"repeat_tool_reminder": {...}}`. Log lines go to the `repeat_reminder_langchain` logger:
reminders at INFO with the arguments only as a digest, escalations at WARNING with their preview.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import sysconfig
import warnings
from collections.abc import Awaitable, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer

from .config import ReminderConfig
from .reminder import LOGGER_NAME, SOURCE, Escalation, Reminder, RepeatToolReminderWarning
from .stats import Stats

if TYPE_CHECKING:
    from ._guard import Guard, Step

__all__ = [
    "ESCALATION_EVENT",
    "REMINDER_EVENT",
    "Dispatch",
    "EscalationEvent",
    "Misplaced",
    "ReminderEvent",
    "escalation_event",
    "reminder_event",
    "report",
    "warn_wiring",
]

REMINDER_EVENT = SOURCE
ESCALATION_EVENT = "repeat_tool_escalation"

logger = logging.getLogger(LOGGER_NAME)

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


def warn_wiring(message: str) -> None:
    """Say, once, that the guard is wired so that it cannot do its work.

    As a Python warning, which is what a mistake the user can fix calls for: it shows with
    logging unconfigured, points at the user's line that ran the graph where that is on the
    stack, and can be made an error. (`logging.captureWarnings(True)` sends it to the log.)
    """
    warnings.warn(message, RepeatToolReminderWarning, stacklevel=_outside(sys._getframe(1)))


def _folders(*packages: str) -> tuple[str, ...]:
    """Where the packages' modules are (each folder, with a trailing separator)."""
    found = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        found += [folder + os.sep for folder in (spec and spec.submodule_search_locations) or ()]
    return tuple(found)


# Where the user's code is not: this package; the libraries that run a graph, and Python's own.
_OURS = _folders("repeat_reminder_langchain")
_LIBRARIES = (
    *_folders("langchain_core", "langgraph", "langchain"),
    sysconfig.get_paths()["stdlib"] + os.sep,
)


def _outside(frame: FrameType | None) -> int:
    """The `stacklevel` of the first frame outside these, or outside this package at least."""
    level, fallback = 2, None  # level 2: warn_wiring's caller
    while frame is not None:
        where = frame.f_code.co_filename
        if not where.startswith(_OURS):
            if not where.startswith(_LIBRARIES):
                return level
            fallback = fallback or level
        frame, level = frame.f_back, level + 1
    return fallback or 2


class Misplaced:
    """An attribute that the wrong place reads first: an error that names the right one.

    `create_agent` reads a middleware's hooks from its class, LangChain's callback manager a
    handler's flags; a guard given to the one that is not its own fails there, clearly.
    """

    def __init__(self, message: str) -> None:
        self.message = message

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        raise AttributeError(self.message)


def reminder_event(
    reminder: Reminder, config: ReminderConfig, delivered: bool, thread: str | None = None
) -> ReminderEvent:
    """What the `repeat_tool_reminder` event of `reminder` carries."""
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
    }


def escalation_event(
    escalation: Escalation,
    config: ReminderConfig,
    thread: str | None = None,
    *,
    acted: bool = True,
) -> EscalationEvent:
    """What the `repeat_tool_escalation` event of `escalation` carries."""
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
    }


class Dispatch(Protocol):
    """How a face sends a custom event: LangChain's `dispatch_custom_event`, or its async twin."""

    def __call__(
        self, name: str, data: Any, *, config: RunnableConfig | None = None
    ) -> Awaitable[None] | None:
        """Send the event; an async dispatcher returns what to await."""


def report(step: Step, guard: Guard, dispatch: Dispatch) -> list[Awaitable[None]]:
    """Add a step to the guard's stats; log what it found, and send its events.

    This is the one place a guard's stats (and so its metrics) are added to. Events go out
    through `dispatch`, from the step's run (the current graph run's when it names none); an
    async dispatcher's sendings are returned, for the async face to await.
    """
    found = step.found
    if not step.tell:
        return []  # a human's answer resumed a loop that was reported when they were asked
    if not found.reminders and found.escalation is None:
        guard.stats.add(found)  # most turns: nothing to tell
        return []
    events = _record(step, guard.stats, guard.config)
    sending: list[Awaitable[None]] = []
    for name, data in events:
        _write(name, data)
        try:
            sent = dispatch(name, data, config=step.run_config)
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


def _record(
    step: Step, stats: Stats, config: ReminderConfig
) -> list[tuple[str, Mapping[str, Any]]]:
    """Add the step's count to the stats, log what it found; its events."""
    counted, delivery, thread = step.found, step.delivery, step.thread
    delivered = delivery == "sent" and config.mode == "remind"
    stats.add(counted, delivered=delivered)
    run = getattr((step.run_config or {}).get("callbacks"), "parent_run_id", None)
    events: list[tuple[str, Mapping[str, Any]]] = []
    for reminder in counted.reminders:
        data = reminder_event(reminder, config, delivered, thread)
        if delivered:
            outcome = "sent"
        elif config.mode == "observe":
            outcome = "observed, not sent (observe mode)"
        else:
            outcome = f"due but not delivered ({_UNDELIVERED})"
        logger.info(
            "repeat tool reminder %s: %s (%s, %s), arguments %s, thread %s, run %s",
            outcome,
            reminder.summary,
            reminder.level,
            reminder.detector,
            reminder.digest,
            thread,
            run,
            # The same, as fields, for structured logging.
            extra={SOURCE: data, "thread_id": thread, "run_id": run},
        )
        events.append((REMINDER_EVENT, data))
    if counted.escalation is not None:
        escalation = counted.escalation
        escalated = escalation_event(escalation, config, thread, acted=delivered)
        if not escalated["acted"]:
            outcome = "repeat tool loop would be stopped"
        elif escalation.behavior == "block":
            outcome = "repeat tool call refused"  # the model decides what comes next
        else:
            outcome = f"repeat tool loop stopped ({escalation.behavior})"
        logger.warning(
            "%s: %s (%s, %s count reached escalate_after=%s), arguments %s, thread %s, run %s",
            outcome,
            escalation.summary,
            escalation.behavior,
            escalation.detector,
            escalation.limit,
            escalation.arguments,
            thread,
            run,
            extra={ESCALATION_EVENT: escalated, "thread_id": thread, "run_id": run},
        )
        events.append((ESCALATION_EVENT, escalated))
    return events
