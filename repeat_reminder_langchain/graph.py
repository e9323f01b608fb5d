"""The graph node that adds the reminders, right after a turn's tool results."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import MessagesState
from typing_extensions import NotRequired

from .callbacks import RepeatToolReminderCallbackHandler
from .config import ReminderConfig, resolve_config
from .events import report
from .messages import STATE_KEY, read_messages, read_state, reminder_messages, state_update
from .policy import ToolSpecs
from .stats import Stats

__all__ = ["RepeatToolReminderNode", "RepeatToolReminderState"]

logger = logging.getLogger("repeat_reminder_langchain")


class RepeatToolReminderState(MessagesState):
    """`MessagesState` with a field for the guard's chain, for `RepeatToolReminderNode()`."""

    repeat_tool_reminder: NotRequired[dict[str, Any]]


class RepeatToolReminderNode:
    """A LangGraph node, placed between the tools node and the model node, that adds reminders.

    It reads the conversation, counts the tool turn that just finished, and returns one tagged
    message per reminder due (none most of the time). It runs after the whole block of tool
    results, so an assistant turn is always followed by all its results first. It never
    changes a tool result and never fails the run: a problem is logged.

    Where the counts live depends on how it is built:

    * `RepeatToolReminderNode(handler)`: in the `RepeatToolReminderCallbackHandler` passed in
      the run's callbacks, which keeps one chain per agent and needs no state field.
    * `RepeatToolReminderNode(**fields)` or `RepeatToolReminderNode(config=...)`: in the graph
      state, under `state_key`, so the chain is checkpointed with the conversation and survives
      interrupts, restarts and several worker processes. The state needs that field: use
      `RepeatToolReminderState`, or add `repeat_tool_reminder: NotRequired[dict]` to yours.

    Args:
        handler: The handler passed in the run's callbacks, or None to keep the chain in state.
        config: A `ReminderConfig`, when there is no handler (the handler has its own).
        messages_key: The state key holding the messages.
        state_key: The state key holding the chain, when there is no handler.
        tools: The graph's tools, whose metadata may declare their own policy (with a
            handler, the handler reads it as the tools run).
        **fields: `ReminderConfig` fields, when there is no handler.

    Example:
        ```python
        guard = RepeatToolReminderCallbackHandler()
        builder.add_node("tools", ToolNode(tools))
        builder.add_node("repeat_reminder", RepeatToolReminderNode(guard))
        builder.add_edge("tools", "repeat_reminder")
        builder.add_edge("repeat_reminder", "agent")
        graph.invoke(inputs, config={"callbacks": [guard]})
        ```
    """

    def __init__(
        self,
        handler: RepeatToolReminderCallbackHandler | None = None,
        *,
        config: ReminderConfig | None = None,
        messages_key: str = "messages",
        state_key: str = STATE_KEY,
        tools: Sequence[Any] = (),
        **fields: Any,
    ) -> None:
        if handler is not None and not isinstance(handler, RepeatToolReminderCallbackHandler):
            raise TypeError(
                "RepeatToolReminderNode takes a RepeatToolReminderCallbackHandler or none, got "
                f"{type(handler).__name__}"
            )
        if handler is not None and (config is not None or fields):
            raise TypeError("the handler has its own configuration; pass it there")
        self.handler = handler
        self.config = handler.config if handler is not None else resolve_config(config, fields)
        self.messages_key = messages_key
        self.state_key = state_key
        self._warned = False
        self.stats = handler.stats if handler is not None else Stats()
        self.tool_specs = handler.tool_specs if handler is not None else ToolSpecs()
        for tool in tools:
            self.tool_specs.learn(getattr(tool, "name", None), getattr(tool, "metadata", None))

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """Return the state update for the turn that just finished (empty most of the time)."""
        try:
            if self.handler is None:
                return self._from_state(state, config)
            messages = read_messages(state, self.messages_key)
            reminders = self.handler.take_reminders(messages, config) if messages else []
            if not reminders or self.config.mode == "observe":
                return {}
            return {self.messages_key: reminder_messages(reminders, self.config)}
        except Exception:
            logger.exception("repeat reminder node failed; the run goes on without reminders")
            return {}

    def _from_state(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        if (
            not self._warned
            and read_state(state, self.state_key) is None
            and _tool_turns(read_messages(state, self.messages_key)) > 1
        ):
            self._warned = True
            logger.warning(
                "RepeatToolReminderNode keeps its count in the state field %r, which this "
                "graph's state does not have, so nothing is remembered between turns: build "
                "the graph with RepeatToolReminderState or add the field to your state.",
                self.state_key,
            )
        update, tally = state_update(
            state,
            self.config,
            self.tool_specs,
            messages_key=self.messages_key,
            state_key=self.state_key,
        )
        report(tally, self.stats, self.config, config)
        return update


def _tool_turns(messages: Sequence[BaseMessage]) -> int:
    """How many model turns with tool calls there are, counting no further than two."""
    found = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            found += 1
            if found == 2:
                break
    return found
