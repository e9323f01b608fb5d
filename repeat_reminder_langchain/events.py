"""Reporting: each reminder (or would-be reminder) as a custom event and a log line, and stats.

The custom event is named `repeat_tool_reminder`; it shows in `astream_events` and in
LangSmith traces. Log lines go to the `repeat_reminder_langchain` logger at INFO, with the
arguments only as a digest.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.callbacks import adispatch_custom_event, dispatch_custom_event
from langchain_core.runnables import RunnableConfig

from .chain import Tally
from .config import ReminderConfig
from .reminder import SOURCE, Reminder
from .stats import Stats

__all__ = ["EVENT", "areport", "report"]

EVENT = SOURCE
logger = logging.getLogger("repeat_reminder_langchain")


def report(
    tally: Tally, stats: Stats, config: ReminderConfig, where: RunnableConfig | None
) -> None:
    """Add `tally` to `stats`; log and dispatch its reminders from the run `where` belongs to."""
    for data in _record(tally, stats, config, where):
        try:
            dispatch_custom_event(EVENT, data, config=where)
        except Exception:  # outside a run there is no one to tell
            logger.debug("repeat reminder event not dispatched", exc_info=True)


async def areport(
    tally: Tally, stats: Stats, config: ReminderConfig, where: RunnableConfig | None
) -> None:
    """`report`, for async code: events go through the async dispatcher."""
    for data in _record(tally, stats, config, where):
        try:
            await adispatch_custom_event(EVENT, data, config=where)
        except Exception:  # outside a run there is no one to tell
            logger.debug("repeat reminder event not dispatched", exc_info=True)


def _record(
    tally: Tally, stats: Stats, config: ReminderConfig, where: RunnableConfig | None
) -> list[dict[str, Any]]:
    """Count the tally, log its reminders, and return their events' data."""
    stats.add(tally)
    for reminder in tally.reminders:
        _log(reminder, config, where)
    return [event_data(reminder, config) for reminder in tally.reminders]


def event_data(reminder: Reminder, config: ReminderConfig) -> dict[str, Any]:
    """What the `repeat_tool_reminder` event carries."""
    return {
        "tool": reminder.tool,
        "count": reminder.count,
        "level": reminder.level,
        "summary": reminder.summary,
        "arguments_digest": reminder.digest,
        "mode": config.mode,
        "delivered": config.mode == "remind",
    }


def _log(reminder: Reminder, config: ReminderConfig, where: RunnableConfig | None) -> None:
    metadata = (where or {}).get("metadata") or {}
    thread = metadata.get("thread_id")
    run = getattr((where or {}).get("callbacks"), "parent_run_id", None)
    logger.info(
        "repeat tool reminder %s: %s (%s, %s), arguments %s, thread %s, run %s",
        "sent" if config.mode == "remind" else "observed",
        reminder.summary,
        reminder.level,
        config.mode,
        reminder.digest,
        thread,
        run,
        # The same, as fields, for structured logging.
        extra={EVENT: event_data(reminder, config), "thread_id": thread, "run_id": run},
    )
