"""The graph node that adds the reminders, right after a turn's tool results."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from .callbacks import RepeatToolReminderCallbackHandler
from .messages import reminder_message

__all__ = ["RepeatToolReminderNode"]

logger = logging.getLogger("repeat_reminder_langchain")


class RepeatToolReminderNode:
    """A LangGraph node, placed between the tools node and the model node, that adds reminders.

    It reads the conversation, has `handler` count the tool turn that just finished, and
    returns one tagged message per reminder due (none most of the time). It runs after the
    whole block of tool results, so an assistant turn is always followed by all its results
    first. It never changes a tool result and never fails the run: a problem is logged.

    Args:
        handler: The `RepeatToolReminderCallbackHandler` passed in the run's callbacks.
        messages_key: The state key holding the messages.

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
        self, handler: RepeatToolReminderCallbackHandler, *, messages_key: str = "messages"
    ) -> None:
        if not isinstance(handler, RepeatToolReminderCallbackHandler):
            raise TypeError(
                "RepeatToolReminderNode needs a RepeatToolReminderCallbackHandler, got "
                f"{type(handler).__name__}"
            )
        self.handler = handler
        self.messages_key = messages_key

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, list[BaseMessage]]:
        """Return `{messages_key: [reminder messages]}` for the turn that just finished."""
        try:
            messages = _messages(state, self.messages_key)
            reminders = self.handler.take_reminders(messages, config)
            message_type = self.handler.config.message_type
            return {self.messages_key: [reminder_message(r, message_type) for r in reminders]}
        except Exception:
            logger.exception("repeat reminder node failed; the run goes on without reminders")
            return {self.messages_key: []}


def _messages(state: Any, key: str) -> Sequence[BaseMessage]:
    messages = state.get(key, ()) if isinstance(state, Mapping) else getattr(state, key, ())
    return messages if isinstance(messages, Sequence) else ()
