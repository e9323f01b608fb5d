"""Reading a LangChain conversation for the counter: what happened since the turn counted last.

One function, `read_turn`, reads the end of the conversation once, back to the latest model
turn with tool calls and on to the turn before it, so the cost does not grow with the history.
The guard's own messages are told apart here too (`tag_of`, `from_guard`, `is_reminder`): by
the tag it writes on each.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ._counter import NOTHING, Call, Turn

__all__ = [
    "SOURCE",
    "NotUser",
    "asked_to_answer",
    "from_guard",
    "is_reminder",
    "is_user_message",
    "read_messages",
    "read_state",
    "read_turn",
    "tag_of",
    "user_test",
]

SOURCE = "repeat_tool_reminder"
"""The `name`, `additional_kwargs["lc_source"]` and tag key of every message of the guard,
and the name of its custom events."""


def tag_of(message: object) -> Mapping[str, object] | None:
    """The guard's tag on `message`, or None when the guard did not write it."""
    tags = getattr(message, "additional_kwargs", None)
    if not isinstance(tags, Mapping) or tags.get("lc_source") != SOURCE:
        return None
    tag = tags.get(SOURCE)
    return tag if isinstance(tag, Mapping) else None


def from_guard(message: object) -> bool:
    """Whether the guard wrote `message`: a reminder, or what it wrote when it stopped a loop.

    That is its reminders (a tagged system or user message; the request for the model's
    answer of `exit_behavior="finish"` among them), the final `AIMessage` of a run it ended
    (`"end"`), which is not the model's answer, and the error result of a call it refused
    (`"block"`, or after `"finish"` withheld the tools). A program that reads a finished
    conversation for the model's last word skips these.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> from_guard(AIMessage("The answer is 4."))
        False

    """
    return tag_of(message) is not None


def is_reminder(message: object) -> bool:
    """Whether `message` is one of the guard's reminders (a tagged system or human message).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> is_reminder(HumanMessage("hello"))
        False

    """
    return getattr(message, "type", None) in ("system", "human") and tag_of(message) is not None


NotUser = Callable[[HumanMessage], bool]
"""A test of a user-role message: whether it is not the user speaking (`user_test`)."""


def is_user_message(message: object, not_user: NotUser | None = None) -> bool:
    """Whether `message` is the user speaking.

    That is a human message that no harness marked as its own (langchain-core's notification
    metadata, a string `additional_kwargs["lc_source"]`: the guard's own reminders, summaries,
    human-in-the-loop decisions, background updates) and that `not_user` does not rule out.
    """
    if type(message) is not HumanMessage and not isinstance(message, HumanMessage):
        return False
    if isinstance(message.additional_kwargs.get("lc_source"), str):
        return False
    return not_user is None or not not_user(message)


def user_test(not_user: str | Callable[[Any], bool] | None) -> NotUser | None:
    """`ReminderConfig.not_user` as a test of a user-role message; built once per guard.

    A pattern is searched in the message's text. A function is given the message when its
    first parameter is annotated as a message class (`def f(message: HumanMessage)`), the
    message's text otherwise.
    """
    if not_user is None:
        return None
    if isinstance(not_user, str):
        search = re.compile(not_user).search
        return lambda message: search(message.text) is not None
    if _takes_message(not_user):
        return not_user
    text_test = not_user
    return lambda message: bool(text_test(message.text))


def _takes_message(function: Callable[[Any], bool]) -> bool:
    """Whether `function`'s first parameter is annotated as a message class.

    It has one: the configuration refuses a function that cannot be called with an argument.
    """
    try:
        parameters = inspect.signature(function, eval_str=True).parameters.values()
    except Exception:  # no signature to read (a builtin), or annotations that do not resolve
        return False
    kind = next(iter(parameters)).annotation
    return isinstance(kind, type) and issubclass(kind, BaseMessage)


def read_turn(
    messages: Sequence[BaseMessage],
    counted: str,
    end: int | None = None,
    not_user: NotUser | None = None,
) -> Turn:
    """What happened in `messages[:end]` since the model turn `counted` was counted.

    The latest model turn with tool calls is read with the results that answer it (a call
    without an id has none; results still missing leave `waiting` set), unless it is
    `counted`. Between it and the turn before it, whether the user spoke and whether the model
    answered without a call; after it, whether the user spoke. `NOTHING` when nothing did.
    `not_user` picks out the user-role messages that are not the user (`is_user_message`).
    """
    # Back to the latest model turn, in this frame: a turn already counted ends here. (Each
    # walk is a `range`, which no slip of an index can make endless.)
    stop = len(messages) if end is None else end
    spoke_after = False
    for index in range(stop - 1, -1, -1):
        item = messages[index]
        kind = type(item)  # the exact classes first: message classes check subclasses slowly
        if kind is ToolMessage:
            continue
        if kind is AIMessage or isinstance(item, AIMessage):
            break
        spoke_after = spoke_after or is_user_message(item, not_user)
    else:
        return Turn(spoke_after=True) if spoke_after else NOTHING
    message: AIMessage = item  # type: ignore[assignment]
    if not message.tool_calls and not _named_invalid(message):
        answered = tag_of(message) is None  # the guard's own final word is not an answer
        return Turn(answered=answered, spoke_after=spoke_after)
    turn = message.id or _turn_id(message, index)
    if turn == counted:
        return Turn(spoke_after=True) if spoke_after else NOTHING
    calls, waiting = _calls(message, messages, index + 1, stop)
    # Back to the turn before: whether the user spoke, or the model answered, since.
    spoke_before = answered = False
    for before in range(index - 1, -1, -1):
        item = messages[before]
        kind = type(item)
        if kind is ToolMessage:
            continue  # the previous turn's results, mostly
        if kind is AIMessage or isinstance(item, AIMessage):
            if item.tool_calls or _named_invalid(item):  # type: ignore[attr-defined,arg-type]
                break
            answered = answered or tag_of(item) is None
        else:
            spoke_before = spoke_before or is_user_message(item, not_user)
        if spoke_before and answered:
            break  # all there is to know
    return Turn(turn, calls, answered, spoke_before, spoke_after, waiting)


def _calls(
    message: AIMessage, messages: Sequence[BaseMessage], start: int, stop: int
) -> tuple[list[Call], bool]:
    """The calls of `message`, with their results, and whether a result is still missing.

    The results are the tool messages of `messages[start:stop]`, matched to the calls by id.
    """
    # The results after the turn, by call id, in the order they came.
    results: dict[str, list[ToolMessage]] = {}
    for position in range(start, stop):
        answer = messages[position]
        if type(answer) is ToolMessage or isinstance(answer, ToolMessage):
            call_id = answer.tool_call_id
            found = results.get(call_id)
            if found is None:
                results[call_id] = [answer]
            else:
                found.append(answer)
    # From the last call back, each takes the latest result left with its id: calls sharing
    # an id are answered in order, and a call answered twice keeps the answer read last.
    calls: list[Call] = []
    waiting = False
    for tool_call in reversed(message.tool_calls):
        call_id = tool_call.get("id") or ""
        found = results.get(call_id) if call_id else None
        if found:
            answer = found.pop()  # `_outcome`, in line: once for every call of every turn
            if answer.additional_kwargs and tag_of(answer) is not None:
                result, error = None, True
            else:
                result, error = answer.content, answer.status == "error"
        else:
            result, error = None, False
            waiting = waiting or call_id != ""  # without an id no result can be matched
        calls.append(Call(call_id, tool_call["name"], tool_call["args"], result, error))
    calls.reverse()
    if message.invalid_tool_calls:
        calls += _invalid_calls(message, results)
    return calls, waiting


def _invalid_calls(message: AIMessage, results: Mapping[str, list[ToolMessage]]) -> list[Call]:
    """The calls whose arguments could not be parsed, with their results if any.

    They never reach a tool: they count with their turn, after the others, with the error
    result create_agent writes for them.
    """
    calls = []
    for invalid in message.invalid_tool_calls:
        name = invalid.get("name")
        if isinstance(name, str):
            call_id = invalid.get("id") or ""
            found = results.get(call_id)
            result, error = _outcome(found[-1]) if found else (None, False)
            calls.append(Call(call_id, name, invalid.get("args"), result, error))
    return calls


def _named_invalid(message: AIMessage) -> bool:
    """Whether the model made a call whose arguments could not be parsed (named, so counted)."""
    invalid = message.invalid_tool_calls
    if not invalid:  # most turns: no generator to start
        return False
    return any(isinstance(call.get("name"), str) for call in invalid)


def _turn_id(message: AIMessage, index: int) -> str:
    # Messages in graph state always have ids; a bare list may not, so fall back to the
    # message's position and its calls' ids.
    ids = [call.get("id") or "" for call in message.tool_calls]
    ids += [call.get("id") or "" for call in message.invalid_tool_calls]
    return f"#{index}:" + "\x1f".join(ids)


def _outcome(answer: ToolMessage) -> tuple[object, bool]:
    """A result as the detectors read it: its content, and whether it is an error.

    The guard's own refusal of a call is an error without content: no tool ran.
    """
    if answer.additional_kwargs and tag_of(answer) is not None:
        return None, True
    return answer.content, answer.status == "error"


def asked_to_answer(
    messages: Sequence[BaseMessage], end: int | None = None, not_user: NotUser | None = None
) -> Mapping[str, Any] | None:
    """The tag of the guard's request for an answer that the model turn at `end` answers.

    That request (`exit_behavior="finish"`) is what the guard added after the results of the
    turn before; it is read back to that turn, so the cost is that of the tail. None when the
    turn at `end` (the next one, by default) was not asked for an answer, or the user spoke
    since the request (a run stopped before the answer, and a new question): the request holds
    until the user speaks again, as the middleware's record says. `not_user` as
    `is_user_message` takes it.
    """
    for index in range((len(messages) if end is None else end) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) or is_user_message(message, not_user):
            return None
        tag = tag_of(message)
        if tag is not None and tag.get("level") == "escalated" and type(message) is not ToolMessage:
            return tag
    return None


def read_state(state: Any, key: str) -> Any:
    """`state[key]` of a dict state, `state.key` of an object state, None when absent."""
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def read_messages(state: Any, key: str) -> Sequence[BaseMessage]:
    """The message list under `key` of a graph state; empty when there is none."""
    messages = read_state(state, key)
    return messages if isinstance(messages, (list, tuple)) else ()
