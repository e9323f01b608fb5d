"""What every face does with a count: where its record is kept, and what is due.

Shared by the middleware, the node and the handler: where the record lives differs (a state
field, the handler's memory); what is added to the conversation, and how a loop is stopped,
does not.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt

from ._conversation import read_state
from ._counter import Count, Counter, Record, RecordError, read_record
from .escalation import RepeatToolLoopError, interrupt_request, read_answer
from .messages import escalation_message, reminder_message
from .reminder import LOGGER_NAME

__all__ = ["Action", "StateStore", "act"]

logger = logging.getLogger(LOGGER_NAME)


class Action(NamedTuple):
    """What a count that found something due leads to.

    Attributes:
        record: The record to keep.
        messages: The messages to add to the conversation, in order.
        end: Whether the run ends here (the last message is the guard's final word).
        tell: Whether to report the count (not when a human's answer resumes a loop that was
            reported when they were asked).
        stop: What to raise once the count is reported: the run stops there.
    """

    record: Record
    messages: list[BaseMessage]
    end: bool = False
    tell: bool = True
    stop: BaseException | None = None


def act(
    counted: Count,
    counter: Counter,
    message_type: Literal["system", "human"],
    thread: str | None,
) -> Action:
    """The reminders to add, or the escalation to carry out, for a count with something due.

    With `exit_behavior="error"` the action stops the run with `RepeatToolLoopError`; with
    `"interrupt"`, the first time, with LangGraph's `GraphInterrupt` (the run pauses for a
    human); when their answer resumes the run, this returns what they chose.
    """
    record: Record = counted.record or {}
    escalation = counted.escalation
    if counter.config.mode == "observe":
        return Action(record, [])
    if escalation is None or escalation.behavior == "block":
        due = counted.reminders
        return Action(record, [reminder_message(due, message_type)] if due else [])
    if escalation.behavior == "error":
        return Action(record, [], stop=RepeatToolLoopError(escalation, thread))
    if escalation.behavior == "interrupt":
        try:
            answer = interrupt(interrupt_request(escalation))
        except GraphInterrupt as asked:
            return Action(record, [], stop=asked)
        choice, text = read_answer(answer)
        logger.info("repeat tool loop on %s: resumed with %r", escalation.summary, choice)
        if choice == "continue":
            return Action(counter.reset(record), [], tell=False)
        if choice == "message":
            return Action(counter.reset(record), [HumanMessage(text)], tell=False)
        return Action(record, [escalation_message(escalation)], end=True, tell=False)
    return Action(record, [escalation_message(escalation)], end=True)


class StateStore:
    """Records kept in graph state, under `key` (and, for middleware instances, by `name`).

    Every instance writes only its own entry: the middleware's field merges the entries
    written in one step. A record is checked when read, unless it equals the one this store
    wrote last (the usual case: the record of the turn before).
    """

    def __init__(self, key: str, name: str | None = None) -> None:
        self.key = key
        self.name = name
        self._written: Record | None = None
        self._warned = False

    def read(self, state: Any) -> Record:
        """The record kept in `state`; one that is not valid starts over (logged once)."""
        data = state.get(self.key) if type(state) is dict else read_state(state, self.key)
        if data and self.name is not None:
            data = data.get(self.name) if isinstance(data, (dict, Mapping)) else None
        if not data:
            return {}
        if type(data) is dict and data == self._written:
            return data  # type: ignore[return-value]
        try:
            return read_record(data)
        except RecordError as error:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "stored repeat reminder state is not valid (%s); starting over", error
                )
            return {}

    def write(self, record: Record) -> dict[str, Any]:
        """The state update that keeps `record`."""
        self._written = record
        if self.name is None:
            return {self.key: record}
        return {self.key: {self.name: record}}
