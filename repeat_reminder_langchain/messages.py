"""Between LangChain messages and the core: reading a conversation, writing a reminder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableSequence, RunnableWithFallbacks
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.configurable import DynamicRunnable

from .chain import Call, Chain, Tally, count_calls
from .config import ReminderConfig
from .policy import ToolSpec
from .reminder import SOURCE, Reminder, is_reminder, wrap

__all__ = [
    "STATE_KEY",
    "Turn",
    "latest_turn",
    "observe",
    "prepare_messages",
    "reminder_message",
    "reminder_messages",
    "state_update",
    "user_spoke",
]

STATE_KEY = "repeat_tool_reminder"
"""The state field that holds an agent's chain when the chain lives in graph state."""


class Turn(NamedTuple):
    """The latest model turn with tool calls, as far as the conversation has answered it.

    Attributes:
        id: The turn's identity (the `AIMessage` id, or its position and calls without one).
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
    index, message, answered, _ = _scan(messages, end)
    return None if message is None else _turn(message, index, answered)


def user_spoke(messages: Sequence[BaseMessage], end: int | None = None) -> bool:
    """Whether, in `messages[:end]`, a user message came in after the model last spoke.

    The guard's own reminders and a summary written by summarisation are not user messages.
    """
    return _scan(messages, end)[3]


def observe(
    chain: Chain,
    messages: Sequence[BaseMessage],
    config: ReminderConfig,
    specs: Mapping[str, ToolSpec] | None = None,
) -> Tally:
    """Bring an agent's chain up to date with its conversation; tally what is new.

    The latest model turn is counted once all its calls have their results (a call seen again
    is not counted twice); a user message that came in since resets the chain, and then no
    reminder is due: the user has spoken since the repeats.
    """
    index, message, answered, spoke = _scan(messages, None)
    turn = None if message is None or _counted(chain, message) else _turn(message, index, answered)
    if turn is None or not turn.complete:
        return Tally(chain.reset() if spoke else chain)
    tally = count_calls(chain, turn.id, turn.calls, config, specs)
    return tally._replace(chain=tally.chain.reset(), reminders=()) if spoke else tally


def _scan(
    messages: Sequence[BaseMessage], end: int | None
) -> tuple[int, AIMessage | None, dict[str, object], bool]:
    """Read back from `end` to the last `AIMessage`.

    Returns its index, the message, the results after it by call id, and whether a user
    message came in after it.
    """
    answered: dict[str, object] = {}
    spoke = False
    for index in range((len(messages) if end is None else end) - 1, -1, -1):
        item = messages[index]
        if isinstance(item, AIMessage):
            return index, item, answered, spoke
        if isinstance(item, ToolMessage):
            answered[item.tool_call_id] = item.content
        elif (
            isinstance(item, HumanMessage)
            and not is_reminder(item)
            and item.additional_kwargs.get("lc_source") != "summarization"
        ):
            spoke = True
    return -1, None, answered, spoke


def _turn(message: AIMessage, index: int, answered: Mapping[str, object]) -> Turn | None:
    calls: list[Call] = []
    complete = True
    for position, tool_call in enumerate(message.tool_calls):
        call_id = tool_call.get("id")
        if call_id and call_id not in answered:
            complete = False
        elif call_id:
            calls.append(Call(call_id, tool_call["name"], tool_call["args"], answered[call_id]))
        else:
            # Without an id no result can be matched to the call; it counts with its turn.
            calls.append(Call(f"#{position}", tool_call["name"], tool_call["args"]))
    # Calls whose arguments could not be parsed never reach a tool and get no result in the
    # state (create_agent answers them only in the request it sends): they count with their
    # turn, after the others.
    for position, invalid in enumerate(message.invalid_tool_calls, len(message.tool_calls)):
        name = invalid.get("name")
        if isinstance(name, str):
            calls.append(Call(invalid.get("id") or f"#{position}", name, invalid.get("args")))
    if not message.tool_calls and not calls:
        return None
    # Messages in graph state always have ids; a bare list may not, so fall back to the
    # message's position and its calls.
    turn_id = message.id or f"#{index}:" + "\x1f".join(call.id for call in calls)
    return Turn(turn_id, tuple(calls), complete)


def _counted(chain: Chain, message: AIMessage) -> bool:
    """Whether every call of the turn `message` made is already counted.

    A shortcut (counting again would change nothing) for the common case of a model call whose
    prompt shows the turn the node has just counted.
    """
    if not message.id or message.id != chain.turn:
        return False
    named = sum(isinstance(call.get("name"), str) for call in message.invalid_tool_calls)
    return len(message.tool_calls) + named == len(chain.counted)


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


def state_update(
    state: Any,
    config: ReminderConfig,
    specs: Mapping[str, ToolSpec] | None = None,
    *,
    messages_key: str = "messages",
    state_key: str = STATE_KEY,
) -> tuple[dict[str, Any], Tally]:
    """The graph-state update that brings the chain kept in `state` up to date, and its tally.

    The update holds `state_key` when the chain changed, and `messages_key` with the reminder
    messages when reminders are due and `config.mode` is `"remind"`; it is empty otherwise.
    """
    before = Chain.from_dict(read_state(state, state_key))
    tally = observe(before, read_messages(state, messages_key), config, specs)
    update: dict[str, Any] = {}
    if tally.chain != before:
        update[state_key] = tally.chain.to_dict()
    if tally.reminders and config.mode == "remind":
        update[messages_key] = reminder_messages(tally.reminders, config)
    return update, tally


def reminder_messages(
    reminders: Sequence[Reminder], config: ReminderConfig
) -> list[SystemMessage | HumanMessage]:
    """The messages that carry `reminders`, of the configured type."""
    return [reminder_message(reminder, config.message_type) for reminder in reminders]


def read_state(state: Any, key: str) -> Any:
    """`state[key]` of a dict state, `state.key` of an object state, None when absent."""
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def read_messages(state: Any, key: str) -> Sequence[BaseMessage]:
    """The message list under `key` of a graph state; empty when there is none."""
    messages = read_state(state, key)
    return messages if isinstance(messages, (list, tuple)) else ()


def prepare_messages(messages: Sequence[BaseMessage], model: object) -> list[BaseMessage]:
    """The messages to send `model`, with stored system reminders made safe for its provider.

    A reminder kept as a `SystemMessage` is sent as a `<system-reminder>`-wrapped
    `HumanMessage` (same name, id and tags) unless every chat model behind `model` (a chat
    model, or a runnable wrapping one: `bind_tools`, `with_retry`, `with_fallbacks`,
    configurable fields, a sequence) declares `mid_conversation_system_messages` in its
    profile. Anthropic rejects a mid-conversation system message when the request also has a
    system prompt, and Gemini drops or hoists it; a user turn is accepted everywhere. Returns
    `messages` itself when nothing changes.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from repeat_reminder_langchain import Reminder
        >>> stored = [HumanMessage("go"), reminder_message(Reminder("ls", 3, "gentle", "{}"))]
        >>> [m.type for m in prepare_messages(stored, model=None)]
        ['human', 'human']
    """
    listed = messages if isinstance(messages, list) else list(messages)
    # This runs before every model call, over the whole conversation: the scans over message
    # types run in C, and Python only visits the system messages.
    kinds = list(map(type, listed))
    system_kinds = [kind for kind in set(kinds) if issubclass(kind, SystemMessage)]
    if not system_kinds or _keeps_system_messages_in_place(model):
        return listed
    prepared: list[BaseMessage] | None = None
    for index in sorted(_positions(kinds, system_kinds)):
        message = listed[index]
        if is_reminder(message):
            prepared = prepared or list(listed)
            prepared[index] = HumanMessage(
                wrap(message.text),
                name=message.name,
                id=message.id,
                additional_kwargs=message.additional_kwargs,
            )
    return listed if prepared is None else prepared


def _positions(items: Sequence[object], wanted: Sequence[object]) -> Iterator[int]:
    """Every index of `items` holding one of `wanted`, found with `list.index`."""
    for item in wanted:
        index = items.index(item)
        while True:
            yield index
            try:
                index = items.index(item, index + 1)
            except ValueError:
                break


def _keeps_system_messages_in_place(model: object) -> bool:
    models = list(_chat_models(model))
    return bool(models) and all(
        (m.profile or {}).get("mid_conversation_system_messages") is True for m in models
    )


def _chat_models(runnable: object, depth: int = 0) -> Iterator[BaseChatModel]:
    if isinstance(runnable, BaseChatModel):
        yield runnable
        return
    if depth >= 8:
        return
    inner: list[object] = []
    if isinstance(runnable, RunnableBindingBase):
        inner = [runnable.bound]
    elif isinstance(runnable, RunnableWithFallbacks):
        inner = [runnable.runnable, *runnable.fallbacks]
    elif isinstance(runnable, RunnableSequence):
        inner = list(runnable.steps)
    elif isinstance(runnable, DynamicRunnable):
        inner = [runnable.default]
    for item in inner:
        yield from _chat_models(item, depth + 1)
