"""Reading a LangChain conversation for the counter: what happened since the turn counted last.

One function, `read_turn`, reads the end of the conversation once, back to the latest model
turn with tool calls and on to the turn before it, so the cost does not grow with the history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ._counter import NOTHING, Call, Turn
from .reminder import tag_of

__all__ = ["is_user_message", "read_messages", "read_state", "read_turn"]


def is_user_message(message: object) -> bool:
    """Whether `message` is the user speaking.

    That is a human message that is neither one of the guard's reminders nor a summary
    written by summarisation.
    """
    if type(message) is not HumanMessage and not isinstance(message, HumanMessage):
        return False
    source = message.additional_kwargs.get("lc_source")
    return source is None or (source != "summarization" and tag_of(message) is None)


def read_turn(messages: Sequence[BaseMessage], counted: str, end: int | None = None) -> Turn:
    """What happened in `messages[:end]` since the model turn `counted` was counted.

    The latest model turn with tool calls is read with the results that answer it (a call
    without an id has none; results still missing leave `waiting` set), unless it is
    `counted`. Between it and the turn before it, whether the user spoke and whether the model
    answered without a call; after it, whether the user spoke. `NOTHING` when nothing did.
    """
    index = (len(messages) if end is None else end) - 1
    stop = index + 1
    spoke_after = False
    while index >= 0:
        item = messages[index]
        kind = type(item)  # the exact classes first: message classes check subclasses slowly
        if kind is ToolMessage:
            index -= 1
            continue
        if kind is AIMessage or isinstance(item, AIMessage):
            break
        if not spoke_after:
            spoke_after = is_user_message(item)
        index -= 1
    else:
        return Turn(spoke_after=True) if spoke_after else NOTHING
    message: AIMessage = item  # type: ignore[assignment]
    if not message.tool_calls and not _named_invalid(message):
        answered = tag_of(message) is None  # the guard's own final word is not an answer
        return Turn(answered=answered, spoke_after=spoke_after)
    turn = message.id or _turn_id(message, index)
    if turn == counted:
        return Turn(spoke_after=True) if spoke_after else NOTHING
    calls, waiting = _calls(message, messages, index, stop)
    spoke_before, answered = _since_previous_turn(messages, index)
    return _make(Turn, (turn, calls, answered, spoke_before, spoke_after, waiting))


# Named tuples built without their Python-level constructor: this runs on every turn.
_make = tuple.__new__


def _since_previous_turn(messages: Sequence[BaseMessage], index: int) -> tuple[bool, bool]:
    """Whether the user spoke, and whether the model answered, since the turn before.

    Read back from `messages[index]` to the model turn with calls before it.
    """
    spoke = answered = False
    while index > 0:
        index -= 1
        item = messages[index]
        kind = type(item)
        if kind is ToolMessage:
            continue  # the previous turn's results, mostly
        if kind is AIMessage or isinstance(item, AIMessage):
            if item.tool_calls or _named_invalid(item):  # type: ignore[attr-defined,arg-type]
                break
            answered = answered or tag_of(item) is None
        elif not spoke:
            spoke = is_user_message(item)
        if spoke and answered:
            break  # all there is to know
    return spoke, answered


def _named_invalid(message: AIMessage) -> bool:
    """Whether the model made a call whose arguments could not be parsed (named, so counted)."""
    return any(isinstance(call.get("name"), str) for call in message.invalid_tool_calls)


def _turn_id(message: AIMessage, index: int) -> str:
    # Messages in graph state always have ids; a bare list may not, so fall back to the
    # message's position and its calls' ids.
    ids = [call.get("id") or "" for call in message.tool_calls]
    ids += [call.get("id") or "" for call in message.invalid_tool_calls]
    return f"#{index}:" + "\x1f".join(ids)


def _calls(
    message: AIMessage, messages: Sequence[BaseMessage], index: int, end: int
) -> tuple[tuple[Call, ...], bool]:
    """The calls of the turn at `index`, with the results in `messages[index + 1:end]`.

    Also returns whether some results are still missing (those calls have none).
    """
    results: dict[str, list[ToolMessage]] = {}  # by call id, in the order they came
    for position in range(index + 1, end):
        answer = messages[position]
        if type(answer) is ToolMessage or isinstance(answer, ToolMessage):
            found = results.get(answer.tool_call_id)
            if found is None:
                results[answer.tool_call_id] = [answer]
            else:
                found.append(answer)
    calls: list[Call] = []
    waiting = False
    # From the last call back, each takes the latest result left with its id: calls sharing
    # an id are answered in order, and a call answered twice keeps the answer read last.
    for tool_call in reversed(message.tool_calls):
        call_id = tool_call.get("id") or ""
        found = results.get(call_id) if call_id else None
        if found:
            outcome = _outcome(found.pop())
        else:
            outcome = _UNANSWERED
            waiting = waiting or bool(call_id)  # without an id no result can be matched
        calls.append(_make(Call, (call_id, tool_call["name"], tool_call["args"], *outcome)))
    calls.reverse()
    # Calls whose arguments could not be parsed never reach a tool: they count with their
    # turn, after the others, with the error result create_agent writes for them, if any.
    for invalid in message.invalid_tool_calls:
        name = invalid.get("name")
        if isinstance(name, str):
            call_id = invalid.get("id") or ""
            found = results.get(call_id)
            outcome = _outcome(found[-1]) if found else _UNANSWERED
            calls.append(Call(call_id, name, invalid.get("args"), *outcome))
    return tuple(calls), waiting


_UNANSWERED = (None, False)


def _outcome(answer: ToolMessage) -> tuple[object, bool]:
    """A result as the detectors read it; the guard's own refusal of a call tells nothing."""
    if answer.additional_kwargs and tag_of(answer) is not None:
        return None, True
    return answer.content, answer.status == "error"


def read_state(state: Any, key: str) -> Any:
    """`state[key]` of a dict state, `state.key` of an object state, None when absent."""
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def read_messages(state: Any, key: str) -> Sequence[BaseMessage]:
    """The message list under `key` of a graph state; empty when there is none."""
    messages = read_state(state, key)
    return messages if isinstance(messages, (list, tuple)) else ()
