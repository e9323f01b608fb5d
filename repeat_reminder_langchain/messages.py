"""Between LangChain messages and the core: reading a conversation, writing a reminder."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from .chain import Call
from .reminder import SOURCE, Reminder, is_reminder, wrap

__all__ = ["Turn", "latest_turn", "reminder_message", "user_spoke"]


@dataclass(frozen=True, slots=True)
class Turn:
    """The latest model turn with tool calls, as far as the conversation has answered it.

    Attributes:
        id: The turn's identity (the `AIMessage` id, or its call ids when it has none).
        calls: The answered calls, in the order the model made them.
        complete: Whether every call has its result, so a message may follow the block.

    """

    id: str
    calls: tuple[Call, ...]
    complete: bool


def latest_turn(messages: Sequence[BaseMessage], end: int | None = None) -> Turn | None:
    """The last `AIMessage` of `messages[:end]` and its answered calls, or None if it made none.

    Only the messages after that `AIMessage` are read, so the cost does not grow with history.
    Calls whose arguments could not be parsed (`invalid_tool_calls`) follow the others, with
    their raw argument text as their value.
    """
    answered: set[str] = set()
    message: AIMessage | None = None
    for index in range((len(messages) if end is None else end) - 1, -1, -1):
        item = messages[index]
        if isinstance(item, AIMessage):
            message = item
            break
        if isinstance(item, ToolMessage):
            answered.add(item.tool_call_id)
    if message is None:
        return None
    requested: list[tuple[str | None, str, object]] = [
        (call.get("id"), call["name"], call["args"]) for call in message.tool_calls
    ]
    for invalid in message.invalid_tool_calls:
        name = invalid.get("name")
        if isinstance(name, str):
            requested.append((invalid.get("id"), name, invalid.get("args")))
    if not requested:
        return None
    calls: list[Call] = []
    complete = True
    for position, (call_id, name, args) in enumerate(requested):
        if not call_id:
            # Without an id no result can be matched to the call; it counts with its turn.
            calls.append(Call(f"#{position}", name, args))
        elif call_id in answered:
            calls.append(Call(call_id, name, args))
        else:
            complete = False
    turn_id = message.id or "\x1f".join(str(call_id) for call_id, _, _ in requested)
    return Turn(turn_id, tuple(calls), complete)


def user_spoke(messages: Sequence[BaseMessage], end: int | None = None) -> bool:
    """Whether, in `messages[:end]`, a user message came in after the model last spoke.

    The guard's own reminders and a summary written by summarisation are not user messages.
    """
    for index in range((len(messages) if end is None else end) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            return False
        if (
            isinstance(message, HumanMessage)
            and not is_reminder(message)
            and message.additional_kwargs.get("lc_source") != "summarization"
        ):
            return True
    return False


def reminder_message(
    reminder: Reminder, message_type: Literal["system", "human"] = "system"
) -> SystemMessage | HumanMessage:
    """The tagged message that carries `reminder` into the conversation.

    Example:
        >>> message = reminder_message(Reminder("grep", 3, "gentle", "{}"), "human")
        >>> message.name, message.content.startswith("<system-reminder>")
        ('repeat_tool_reminder', True)

    """
    message_id = f"{SOURCE}-{uuid.uuid4().hex}"
    if message_type == "human":
        return HumanMessage(
            wrap(reminder.text), name=SOURCE, id=message_id, additional_kwargs=reminder.tag()
        )
    return SystemMessage(
        reminder.text, name=SOURCE, id=message_id, additional_kwargs=reminder.tag()
    )
