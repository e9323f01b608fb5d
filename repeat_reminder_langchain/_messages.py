"""Writing the guard's messages, and making stored reminders safe for each provider."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import RunnableSequence, RunnableWithFallbacks
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.configurable import DynamicRunnable

from ._canonical import canonicalize, result_text
from ._config import ReminderConfig
from ._conversation import SOURCE, from_guard, is_reminder, is_user_message, tag_of
from ._exits import EXITS
from ._reminder import (
    Escalation,
    LoopContext,
    Reminder,
    ReminderTag,
    UserWords,
    preview,
    reminder_content,
)

__all__ = [
    "as_user_turn",
    "blocked_result",
    "escalation_message",
    "finish_message",
    "keeps_system_messages",
    "latest_results",
    "loop_context",
    "no_tool_choice",
    "prepare_messages",
    "reminder_message",
    "shown_once",
    "stop_reason",
]


def wrap(text: str) -> str:
    """The text inside `<system-reminder>` tags, for reminders sent as a user turn."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def _new_id() -> str:
    return f"{SOURCE}-{uuid.uuid4().hex}"


def reminder_message(
    reminders: Reminder | Sequence[Reminder],
    message_type: Literal["system", "human"] = "system",
    words: UserWords | None = None,
) -> SystemMessage | HumanMessage:
    """The one tagged message that carries a reminder, or a turn's reminders in order.

    A turn whose calls draw several reminders (two tools looping side by side, a failing call
    beside a note that keeps saying the same) is told once: one message, each reminder's words
    in a paragraph of their own.

    Example:
        >>> message = reminder_message(Reminder("grep", 3, "gentle", "{}"), "human")
        >>> message.name, message.content.startswith("<system-reminder>")
        ('repeat_tool_reminder', True)

    """
    due = (reminders,) if isinstance(reminders, Reminder) else reminders
    return _guard_message(*reminder_content(due, words), message_type)


def escalation_message(
    escalation: Escalation,
    words: UserWords | None = None,
    handed: str = "",
    seen: LoopContext | None = None,
) -> AIMessage:
    """The final message of a run the guard ended: tagged like a reminder, no tool calls.

    The guard's words say which loop was stopped, and `handed` (`latest_results`) follows them: what
    the run's tools returned, for a user who reads the run's last message and nothing else.
    The user's own `final` words are said as they are (quoting `seen`, `loop_context`), alone.
    """
    tags = {"lc_source": SOURCE, SOURCE: escalation.tag()}
    own = escalation.say(seen=seen)
    text = own if words is None else words.say(escalation, seen)
    if handed and text == own:
        text = f"{text}\n\n{handed}"
    return AIMessage(text, name=SOURCE, id=_new_id(), additional_kwargs=tags)


# What the final message hands over: at most this many calls, each result cut to this.
HANDED_OVER, RESULT_CHARS = 6, 300


def loop_context(messages: Sequence[BaseMessage], tool: str) -> LoopContext:
    """What the user asked, and the latest result of `tool` since, each cut to `RESULT_CHARS`.

    What the words that ask a looping model for its answer quote: what an answer needs, where
    a description of the loop is what a small model says back.
    """
    answered, asked = _answered(messages)
    result = next((r for call, r in answered if call["name"] == tool), None)
    return LoopContext(
        "" if asked is None else _cut(result_text(asked.content)),
        "" if result is None else _cut(result_text(result.content)),
    )


def _answered(
    messages: Sequence[BaseMessage],
) -> tuple[list[tuple[ToolCall, ToolMessage]], BaseMessage | None]:
    """Each call answered since the user last spoke, and what the user said then.

    The calls the latest first, each with its result (a tool's, not a refusal of the guard's);
    the user's message None when none is in sight (a history handed in without one). A call
    without an id has no result, as the counter reads it: the results without one cannot be
    told apart.
    """
    results: dict[str, ToolMessage] = {}
    answered: list[tuple[ToolCall, ToolMessage]] = []
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            if not from_guard(message):
                results.setdefault(message.tool_call_id, message)
        elif isinstance(message, AIMessage):
            for call in reversed(message.tool_calls):
                result = results.get(call["id"]) if call["id"] else None
                if result is not None:
                    answered.append((call, result))
        elif is_user_message(message):
            return answered, message
    return answered, None


def _cut(text: str) -> str:
    """`text` as one line (whitespace as one space), cut to `RESULT_CHARS`."""
    return preview(" ".join(text.split()), RESULT_CHARS)


def latest_results(
    messages: Sequence[BaseMessage],
    config: ReminderConfig,
    failed: Callable[[bool, str], bool],
) -> str:
    """What the tools returned since the user last spoke, for the user of a run the guard ended.

    The latest result of each distinct call (its tool and canonical arguments), in the order
    the calls were last made, failures last (as the guard's counter judges them: `failed`); at most
    `HANDED_OVER` calls, each result cut to `RESULT_CHARS`. The arguments are quoted as the
    reminders quote them (cut to `arguments_preview_chars`): the user reads this message, in a
    conversation that holds them already. Empty: no call answered.
    """
    latest: dict[tuple[str, str], ToolMessage] = {}
    for call, result in _answered(messages)[0]:
        latest.setdefault((call["name"], canonicalize(call["args"])), result)
    said: list[tuple[bool, str]] = []
    for (tool, arguments), result in reversed(list(latest.items())[:HANDED_OVER]):
        text = result_text(result.content)
        failing = failed(result.status == "error", text)
        named = preview(arguments, config.arguments_preview_chars)
        said.append((failing, f"- `{tool}` ({named}){' failed' if failing else ''}: {_cut(text)}"))
    if not said:
        return ""
    said.sort(key=lambda line: line[0])  # failures last; in call order each (a stable sort)
    return "What the tools returned, the latest of each call:\n" + "\n".join(
        line for _, line in said
    )


def finish_message(
    escalation: Escalation,
    message_type: Literal["system", "human"] = "system",
    words: UserWords | None = None,
    seen: LoopContext | None = None,
) -> SystemMessage | HumanMessage:
    """The guard's last words to a looping model (`exit_behavior="finish"`): answer now.

    Its own words quote `seen` (`loop_context`). Sent as a reminder is, and tagged as the escalation
    it is (`level: "escalated"`).
    """
    text = escalation.say(seen=seen) if words is None else words.say(escalation, seen)
    return _guard_message(text, escalation.tag(), message_type)


def _guard_message(
    text: str, tag: ReminderTag, message_type: Literal["system", "human"]
) -> SystemMessage | HumanMessage:
    """What the guard tells the model, tagged, as a system message or a wrapped user turn."""
    tags = {"lc_source": SOURCE, SOURCE: tag}
    if message_type == "human":
        return HumanMessage(wrap(text), name=SOURCE, id=_new_id(), additional_kwargs=tags)
    return SystemMessage(text, name=SOURCE, id=_new_id(), additional_kwargs=tags)


def blocked_result(escalation: Escalation, call_id: str) -> ToolMessage:
    """The error result of a call the guard did not let run.

    One it refused (`"block"`), or one made after the model was asked for its answer
    (`"finish"`).
    """
    text = escalation.refusal()
    tags = {"lc_source": SOURCE, SOURCE: escalation.tag()}
    return ToolMessage(
        text,
        tool_call_id=call_id,
        name=escalation.tool,
        status="error",
        id=_new_id(),
        additional_kwargs=tags,
    )


def as_user_turn(message: BaseMessage) -> HumanMessage:
    """A system reminder as the `<system-reminder>` user turn every provider accepts.

    It keeps the reminder's name, id and tags.
    """
    return HumanMessage(
        wrap(message.text),
        name=message.name,
        id=message.id,
        additional_kwargs=message.additional_kwargs,
    )


def prepare_messages(messages: Sequence[BaseMessage], model: object) -> list[BaseMessage]:
    """The messages to send `model`, with stored system reminders made safe for its provider.

    A reminder kept as a `SystemMessage` is sent as a `<system-reminder>`-wrapped
    `HumanMessage` (same name, id and tags) unless every chat model behind `model` (a chat
    model, or a runnable wrapping one: `bind_tools`, `with_retry`, `with_fallbacks`,
    configurable fields, a sequence) declares `mid_conversation_system_messages` in its
    profile. Anthropic rejects a mid-conversation system message when the request also has a
    system prompt, and Gemini drops or hoists it; a user turn is accepted everywhere. Returns
    `messages` itself when nothing changes.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from repeat_reminder_langchain import Reminder
        >>> stored = [HumanMessage("go"), reminder_message(Reminder("ls", 3, "gentle", "{}"))]
        >>> [m.type for m in prepare_messages(stored, model=None)]
        ['human', 'human']
    """
    listed = messages if isinstance(messages, list) else list(messages)
    if keeps_system_messages(model):
        return listed  # asked first: the model alone decides, the conversation is not read
    # Over the whole conversation, before every model call: the scans over message types run
    # in C, and Python only visits the system messages.
    kinds = list(map(type, listed))
    system_kinds = [kind for kind in set(kinds) if issubclass(kind, SystemMessage)]
    if not system_kinds:
        return listed
    prepared: list[BaseMessage] | None = None
    for index in sorted(_positions(kinds, system_kinds)):
        if is_reminder(listed[index]):
            prepared = prepared or list(listed)
            prepared[index] = as_user_turn(listed[index])
    return listed if prepared is None else prepared


def shown_once(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The conversation as the model's last call sees it: the loop it was asked to end, once.

    Asked for its answer (`exit_behavior="finish"`, the request the last message), the model is
    shown its loop as one call and its latest result, the repeated calls, their results and
    the reminders between them left out; the rest as it is. A small model given ten identical
    results answers about the repetition, or repeats the reminders' words. Only that request's
    messages: the conversation stored is unchanged. `messages` itself when the last message is
    no such request, the loop is not found since the user last spoke, or its calls have no ids
    (their results cannot be told from another call's without one: the loop is sent whole).

    The middleware's request alone: a node face's handler counts what the model is sent.
    """
    tag = (tag_of(messages[-1]) if messages else None) or {}
    behavior = tag.get("behavior")
    asked = EXITS.get(behavior) if type(behavior) is str else None
    if asked is None or not asked.asks_answer:  # a run's end is `end`'s
        return messages
    tool, start, shown = tag.get("tool"), len(messages) - 1, None
    while start > 0 and not is_user_message(messages[start - 1]):
        start -= 1
        message = messages[start]
        if shown is None and isinstance(message, AIMessage) and message.tool_calls:
            latest = message.tool_calls[-1]
            shown = (latest["name"], latest["args"]) if latest["name"] == tool else shown
    if shown is None:
        return messages
    kept: list[BaseMessage] = []
    looped: set[str] = set()
    first: list[str] = []  # the first looping turn's calls: each gets the latest result
    at, result = 0, None
    for message in messages[start:-1]:
        if (
            isinstance(message, AIMessage)
            and message.tool_calls
            and all((c["name"], c["args"]) == shown for c in message.tool_calls)
        ):
            ids = [c["id"] or "" for c in message.tool_calls]
            if "" in ids:
                return messages
            looped.update(ids)
            if not first:
                first = ids
                kept.append(message)  # whole: a provider's own blocks may name each call
                at = len(kept)
        elif isinstance(message, ToolMessage) and message.tool_call_id in looped:
            result = message  # the latest
        elif isinstance(message, ToolMessage) or not from_guard(message):
            kept.append(message)  # a refusal stays: it answers its call
    if result is None:
        return messages
    kept[at:at] = [result.model_copy(update={"tool_call_id": i}) for i in first]
    return [*messages[:start], *kept, messages[-1]]


def _positions(items: list[type], wanted: Sequence[type]) -> Iterator[int]:
    """Every index of `items` holding one of `wanted`, found with `list.index`."""
    for item in wanted:
        index = items.index(item)
        while True:
            yield index
            try:
                index = items.index(item, index + 1)
            except ValueError:
                break


def keeps_system_messages(model: object) -> bool:
    """Whether every chat model behind `model` takes a system message mid-conversation."""
    models = list(_chat_models(model))
    return bool(models) and all(
        (m.profile or {}).get("mid_conversation_system_messages") is True for m in models
    )


_NO_TOOL: dict[str, str | dict[str, str]] = {
    # ChatOpenAI's and AzureChatOpenAI's bind_tools pass "none" on, to Chat Completions and to
    # Responses alike; Gemini's maps it to function calling mode NONE.
    "openai-chat": "none",
    "azure-openai-chat": "none",
    "chat-google-generative-ai": "none",
    # ChatAnthropic's bind_tools reads any string but "any" and "auto" as the name of a tool
    # to force: "none" would force a tool named none. The dict is sent as it is.
    "anthropic-chat": {"type": "none"},
}
"""The `tool_choice` that tells a chat model to call no tool, by its `_llm_type`.

Only integrations whose `bind_tools` was read: another model (a subclass with its own type, a
local or scripted one) may refuse the choice, or ignore it.
"""


def no_tool_choice(model: object) -> str | dict[str, str] | None:
    """The `tool_choice` by which every chat model behind `model` is told to call no tool.

    None where one of them is not known to take one: an integration not in `_NO_TOOL`, or a
    model whose profile says it takes no `tool_choice`, or models that would need different
    forms. Unwrapped as `keeps_system_messages` unwraps them.
    """
    choices = [
        _NO_TOOL.get(m._llm_type) if (m.profile or {}).get("tool_choice") is not False else None
        for m in _chat_models(model)
    ]
    choice = choices[0] if choices and all(c == choices[0] for c in choices) else None
    return dict(choice) if isinstance(choice, dict) else choice


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


def stop_reason(result: Mapping[str, Any] | Sequence[BaseMessage]) -> Escalation | None:
    """The loop the guard stopped since the user last spoke, or None: it stopped none.

    Read from the conversation, so that a program running an agent can tell how its run ended
    and set an exit code: pass what the agent returned (or a checkpoint's state, or the
    messages). The guard writes the whole `Escalation` into the message it adds when it stops a
    loop: the final message of a run it ended (`"end"`), the request for the model's answer
    (`"finish"`: the model's answer follows it), the result of a call it refused (`"block"`:
    the model went on). Its `behavior` says which; `detector`, `count` and `limit` why. With
    `"error"` the run raises `RepeatToolLoopError` instead, and with `"interrupt"` it pauses
    with the question, and says `"end"` once a human answered that; `mode="observe"` stops
    nothing.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> stop_reason({"messages": [HumanMessage("hi"), AIMessage("Hello!")]}) is None
        True

    Raises:
        TypeError: `result` is none of those (None, a message, a string).
        KeyError: `result` is a mapping without `messages`: no run's result or state.
    """
    if isinstance(result, Mapping):
        if "messages" not in result:
            raise KeyError(
                f"stop_reason: no 'messages' in {sorted(result)!r}: pass what the agent "
                "returned, a state, or the messages"
            )
        messages = result["messages"]
    elif isinstance(result, Sequence) and not isinstance(result, (str, bytes)):
        messages = result
    else:
        raise TypeError(
            "stop_reason takes what the agent returned (a dict with messages), a state, or "
            f"the messages; got {type(result).__name__}"
        )
    for message in reversed(messages):
        if is_user_message(message):
            return None
        tag = tag_of(message)
        if tag is not None and tag.get("level") == "escalated":
            return Escalation.from_tag(tag)
    return None
