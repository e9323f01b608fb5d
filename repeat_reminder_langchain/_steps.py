"""What every face does once a turn is counted: keep the streaks, and act on what is due.

Shared by the middleware, the state-kept node and the handler's node: where the streaks live
differs (a state field, the handler's memory); what is added to the conversation, and how a
loop is stopped, does not.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.types import interrupt

from ._streaks import Streaks, Tally
from .config import ReminderConfig
from .escalation import RepeatToolLoopError, interrupt_request, read_answer
from .messages import escalation_message, reminder_messages
from .reminder import LOGGER_NAME

__all__ = ["Action", "Asked", "StateStore", "act"]

logger = logging.getLogger(LOGGER_NAME)


class Action(NamedTuple):
    """What a counted turn leads to.

    Attributes:
        streaks: The streaks to keep.
        messages: The messages to add to the conversation, in order.
        end: Whether the run ends here (the last message is the guard's final word).
    """

    streaks: Streaks
    messages: list[BaseMessage]
    end: bool = False


def act(
    tally: Tally,
    config: ReminderConfig,
    message_type: Literal["system", "human"],
    thread: str | None,
) -> Action:
    """The reminders to add, or the escalation to carry out, for a counted turn.

    Raises:
        RepeatToolLoopError: With `exit_behavior="error"`, when a loop reached the limit.
        GraphInterrupt: With `exit_behavior="interrupt"`, the first time (LangGraph's
            `interrupt()`: the run pauses for a human; on resume this returns their choice).
    """
    if config.mode == "observe":
        return Action(tally.streaks, [])
    escalation = tally.escalation
    if escalation is None or escalation.behavior == "block":
        return Action(tally.streaks, list(reminder_messages(tally.reminders, message_type)))
    if escalation.behavior == "error":
        raise RepeatToolLoopError(escalation, thread)
    if escalation.behavior == "interrupt":
        choice, text = read_answer(interrupt(interrupt_request(escalation)))
        logger.info("repeat tool loop on %s: resumed with %r", escalation.summary, choice)
        if choice == "continue":
            return Action(tally.streaks.reset(), [])
        if choice == "message":
            return Action(tally.streaks.reset(), [HumanMessage(text)])
    return Action(tally.streaks, [escalation_message(escalation)], end=True)


class Asked:
    """The escalations put to a human and not yet answered.

    The step that asked runs again when the human answers; this keeps it from reporting the
    same turn twice.
    """

    limit = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str | None, str], None] = {}

    def first_time(self, tally: Tally, config: ReminderConfig, thread: str | None) -> bool:
        """Whether this tally is to be reported.

        Always, unless it is an escalation that interrupts and was already reported when it
        first asked.
        """
        escalation = tally.escalation
        if escalation is None or escalation.behavior != "interrupt" or config.mode != "remind":
            return True
        key = (thread, tally.streaks.turn)
        with self._lock:
            if key in self._waiting:
                del self._waiting[key]
                return False
            if len(self._waiting) >= self.limit:
                self._waiting.clear()
            self._waiting[key] = None
            return True


class StateStore:
    """Streaks kept in graph state, under `key` (and, for middleware instances, by `name`).

    Reading parses and checks the stored data. What was parsed, and what was written, is
    remembered by the identity of the stored object (held, so that the identity cannot be
    reused): the state a step wrote and the next step reads in this process is not checked
    again.

    A middleware field in the layout from before instances could coexist holds one instance's
    data itself (it has a `count`); whichever instance reads it first takes it over.
    """

    limit = 1024

    def __init__(self, key: str, name: str | None = None) -> None:
        self.key = key
        self.name = name
        self._parsed: OrderedDict[int, tuple[object, Streaks]] = OrderedDict()
        self._warned = False

    def stored(self, state: Any) -> Mapping[str, Any]:
        """The raw data of this store in `state` (empty when there is none)."""
        field = state.get(self.key) if type(state) is dict else _field(state, self.key)
        if type(field) is not dict:
            field = dict(field) if isinstance(field, Mapping) else _EMPTY
        if self.name is not None and "count" not in field:
            field = field.get(self.name)
            if type(field) is not dict:
                field = dict(field) if isinstance(field, Mapping) else _EMPTY
        return field

    def read(self, state: Any) -> tuple[Mapping[str, Any], Streaks]:
        """The raw data of this store in `state`, and its streaks.

        Stored data that is not valid starts over (logged once).
        """
        data = self.stored(state)
        if not data:
            return data, _NO_STREAKS
        entry = self._parsed.get(id(data))
        if entry is not None and entry[0] is data:
            return data, entry[1]
        try:
            streaks = Streaks.from_dict(data)
        except ValueError as error:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "stored repeat reminder state is not valid (%s); starting over", error
                )
            streaks = _NO_STREAKS
        self._remember(data, streaks)
        return data, streaks

    def streaks(self, state: Any) -> Streaks:
        """The streaks kept in `state`."""
        return self.read(state)[1]

    def write(
        self, state: Any, streaks: Streaks, extra: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The state update that stores `streaks` (and `extra` fields) as this store's."""
        data: dict[str, Any] = streaks.to_dict()  # type: ignore[assignment]
        if extra:
            data.update(extra)
        self._remember(data, streaks)
        return self.update(state, data)

    def update(self, state: Any, data: Mapping[str, Any]) -> dict[str, Any]:
        """The state update that stores raw `data` as this store's."""
        if self.name is None:
            return {self.key: data}
        field = state.get(self.key) if type(state) is dict else _field(state, self.key)
        if (type(field) is not dict and not isinstance(field, Mapping)) or not field:
            return {self.key: {self.name: data}}
        if "count" in field:  # the older layout, taken over
            return {self.key: {self.name: data}}
        return {self.key: {**field, self.name: data}}

    def _remember(self, data: object, streaks: Streaks) -> None:
        parsed = self._parsed
        parsed[id(data)] = (data, streaks)
        if len(parsed) > self.limit:
            parsed.popitem(last=False)  # the oldest: the newest are read next


_EMPTY: Mapping[str, Any] = {}
_NO_STREAKS = Streaks()


def _field(state: Any, key: str) -> Any:
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
