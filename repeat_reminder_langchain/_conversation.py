"""Reading a LangChain conversation into the core: the latest model turn, and who spoke since.

Only the end of the conversation is read — back to the latest `AIMessage`, and, when a new
turn is counted, back to the turn before it — so the cost does not grow with the history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ._streaks import Call, CallTrace, Streaks, Tally, count_turn
from .config import ReminderConfig
from .policy import ToolPolicy
from .reminder import Escalation, tag_of

_make = tuple.__new__

__all__ = [
    "Turn",
    "continues",
    "is_user_message",
    "latest_turn",
    "predict_escalation",
    "read_messages",
    "read_state",
    "tally_conversation",
]


class Turn(NamedTuple):
    """The latest model turn with tool calls, as far as the conversation has answered it.

    Attributes:
        id: The turn's identity (the `AIMessage` id, or its position and calls without one).
        position: The position of its `AIMessage` in the conversation.
        calls: Its calls, in the order the model made them; empty until it is complete.
        complete: Whether every call with an id has its result, so a message may follow.
    """

    id: str
    position: int
    calls: tuple[Call, ...]
    complete: bool


def is_user_message(message: object) -> bool:
    """Whether `message` is the user speaking.

    That is a human message that is neither one of the guard's reminders nor a summary
    written by summarisation.
    """
    if type(message) is not HumanMessage and not isinstance(message, HumanMessage):
        return False
    source = message.additional_kwargs.get("lc_source")
    return source is None or (source != "summarization" and tag_of(message) is None)


def _scan(messages: Sequence[BaseMessage], end: int) -> tuple[int, AIMessage | None, bool]:
    """Read back from `end` to the latest `AIMessage`.

    Returns its index and the message, and whether the user spoke after it.
    """
    spoke = False
    for index in range(end - 1, -1, -1):
        item = messages[index]
        kind = type(item)  # the exact classes first: message classes check subclasses slowly
        if kind is ToolMessage:
            continue
        if kind is AIMessage or isinstance(item, AIMessage):
            return index, item, spoke  # type: ignore[return-value]
        if not spoke and is_user_message(item):
            spoke = True
    return -1, None, spoke


def _answers(messages: Sequence[BaseMessage], start: int, end: int) -> dict[str, list[ToolMessage]]:
    """The results in `messages[start:end]` by call id, latest first."""
    answers: dict[str, list[ToolMessage]] = {}
    for index in range(end - 1, start - 1, -1):
        item = messages[index]
        if type(item) is ToolMessage or isinstance(item, ToolMessage):
            found = answers.get(item.tool_call_id)
            if found is None:
                answers[item.tool_call_id] = [item]
            else:
                found.append(item)
    return answers


def _makes_calls(message: AIMessage) -> bool:
    return bool(message.tool_calls) or any(
        isinstance(call.get("name"), str) for call in message.invalid_tool_calls
    )


def _turn_id(message: AIMessage, index: int) -> str:
    # Messages in graph state always have ids; a bare list may not, so fall back to the
    # message's position and its calls' ids.
    if message.id:
        return message.id
    ids = [call.get("id") or "" for call in message.tool_calls]
    ids += [call.get("id") or "" for call in message.invalid_tool_calls]
    return f"#{index}:" + "\x1f".join(ids)


def _turn(
    message: AIMessage,
    index: int,
    messages: Sequence[BaseMessage],
    end: int,
    turn_id: str | None = None,
) -> Turn:
    """The turn of `message` (at `index`), as answered by the results up to `end`."""
    turn_id = turn_id or _turn_id(message, index)
    tool_calls = message.tool_calls
    if len(tool_calls) == 1 and not message.invalid_tool_calls:
        # Most turns make one call: answered by the latest result with its id, which is
        # nearly always the last message.
        tool_call = tool_calls[0]
        call_id = tool_call.get("id")
        if call_id:
            for position in range(end - 1, index, -1):
                answer = messages[position]
                if (
                    type(answer) is ToolMessage or isinstance(answer, ToolMessage)
                ) and answer.tool_call_id == call_id:
                    result, error = _outcome(answer)
                    # Built with tuple.__new__: a named tuple's own constructor is Python code.
                    call = (call_id, tool_call["name"], tool_call["args"], result, error)
                    return _make(Turn, (turn_id, index, (_make(Call, call),), True))
            return Turn(turn_id, index, (), False)
    answers = _answers(messages, index + 1, end)
    wanted: dict[str, int] = {}
    for tool_call in tool_calls:
        call_id = tool_call.get("id")
        if call_id:
            wanted[call_id] = wanted.get(call_id, 0) + 1
    for call_id, number in wanted.items():
        if len(answers.get(call_id, ())) < number:
            return Turn(turn_id, index, (), False)
    calls: list[Call] = []
    used: dict[str, int] = {}
    for tool_call in tool_calls:
        call_id = tool_call.get("id") or ""
        if not call_id:
            # Without an id no result can be matched to the call; it counts with its turn.
            calls.append(Call("", tool_call["name"], tool_call["args"]))
            continue
        # Calls sharing an id are answered in order by the latest results with that id; a
        # call answered twice keeps its latest answer, the one the model read last.
        taken = used.get(call_id, 0)
        used[call_id] = taken + 1
        answer = answers[call_id][wanted[call_id] - 1 - taken]
        calls.append(Call(call_id, tool_call["name"], tool_call["args"], *_outcome(answer)))
    # Calls whose arguments could not be parsed never reach a tool: they count with their
    # turn, after the others, with the error result create_agent writes for them, if any.
    for invalid in message.invalid_tool_calls:
        name = invalid.get("name")
        if isinstance(name, str):
            call_id = invalid.get("id") or ""
            found = answers.get(call_id)
            outcome = _outcome(found[0]) if found else (None, False)
            calls.append(Call(call_id, name, invalid.get("args"), *outcome))
    return Turn(turn_id, index, tuple(calls), True)


def _outcome(answer: ToolMessage) -> tuple[object, bool]:
    """A result as the detectors read it; the guard's own refusal of a call tells nothing."""
    if answer.additional_kwargs and tag_of(answer) is not None:
        return None, True
    return answer.content, answer.status == "error"


def latest_turn(messages: Sequence[BaseMessage], end: int | None = None) -> Turn | None:
    """The last `AIMessage` of `messages[:end]` as a turn, or None if it made no calls."""
    end = len(messages) if end is None else end
    index, message, _ = _scan(messages, end)
    if message is None or not _makes_calls(message):
        return None
    return _turn(message, index, messages, end)


def continues(messages: Sequence[BaseMessage], turn: str) -> bool:
    """Whether `messages` carry on from the model turn `turn`: its latest model turn is that one.

    A model called on anything else (a side question inside a node, a summary) is not the
    agent answering.
    """
    index, message, _ = _scan(messages, len(messages))
    return message is not None and _turn_id(message, index) == turn


def _since_previous_turn(
    messages: Sequence[BaseMessage], index: int, reminded: bool
) -> tuple[bool, bool]:
    """Whether the user spoke, and whether the model stopped, since the previous turn.

    Read between the previous model turn with calls and `messages[index]`; the model stopped
    when it answered without calling a tool.
    """
    spoke = stopped = False
    for position in range(index - 1, -1, -1):
        item = messages[position]
        kind = type(item)
        if kind is ToolMessage:
            continue  # the previous turn's results, mostly
        if kind is AIMessage or isinstance(item, AIMessage):
            if _makes_calls(item):  # type: ignore[arg-type]
                break
            stopped = stopped or tag_of(item) is None
        elif not spoke and is_user_message(item):
            spoke = True
            if not reminded:
                break  # only a model that stopped after a reminder is worth looking for
    return spoke, stopped


def _follows_previous_turn(messages: Sequence[BaseMessage], end: int) -> bool:
    """Whether the newest message answers a model turn that came right after the previous one.

    That is `[…, model turn with calls, its result, model turn, result]` at the end of
    `messages[:end]`, the shape of most steps: since the previous turn the user did not speak
    and the model did not stop. Read from the last four messages, it tells what the two
    backward reads of the conversation (`_scan`, `_since_previous_turn`) would find.
    """
    if end < 4:
        return False
    before = messages[end - 4]
    return (
        type(messages[end - 1]) is ToolMessage
        and type(messages[end - 2]) is AIMessage
        and type(messages[end - 3]) is ToolMessage
        and type(before) is AIMessage
        and bool(before.tool_calls)
    )


def tally_conversation(
    streaks: Streaks,
    messages: Sequence[BaseMessage],
    config: ReminderConfig,
    policies: Mapping[str, ToolPolicy] | None = None,
    *,
    seen_by_model: bool = True,
    end: int | None = None,
    trace: list[CallTrace] | None = None,
) -> Tally:
    """Bring an agent's streaks up to date with its conversation; tally what is new.

    The latest model turn is counted once every call has its result, and only once. A user
    message that came in since the turn before it resets the streaks first; one that came in
    after it resets them after, and then nothing is due: the user has spoken since. A model
    that answered without a call after a reminder it saw has recovered.

    `end` reads the conversation as it stood before `messages[end]`; `trace` collects what
    each counted call reached (see `count_turn`).
    """
    end = len(messages) if end is None else end
    adjacent = _follows_previous_turn(messages, end)  # most steps: then what both reads find
    index, message, spoke_after = (
        (end - 2, cast("AIMessage", messages[end - 2]), False) if adjacent else _scan(messages, end)
    )
    if message is None or not _makes_calls(message):
        followups: tuple[bool, ...] = ()
        if message is not None and streaks.reminded and tag_of(message) is None:
            followups, streaks = (True,), streaks._replace(reminded=False)
        return Tally(streaks.reset() if spoke_after else streaks, followups=followups)
    turn_id = message.id or _turn_id(message, index)
    if turn_id == streaks.turn:
        return Tally(streaks.reset() if spoke_after else streaks)
    turn = _turn(message, index, messages, end, turn_id)
    if not turn.complete:
        return Tally(streaks.reset() if spoke_after else streaks, waiting=True)
    spoke_before, stopped = (
        (False, False) if adjacent else _since_previous_turn(messages, index, streaks.reminded)
    )
    stops: tuple[bool, ...] = ()
    if stopped and streaks.reminded:
        stops, streaks = (True,), streaks._replace(reminded=False)
    if spoke_before:
        streaks = streaks.reset()
    tally = count_turn(
        streaks, turn.id, turn.calls, config, policies, seen_by_model=seen_by_model, trace=trace
    )
    if stops:
        tally = tally._replace(followups=(*stops, *tally.followups))
    if spoke_after:
        # The user spoke after the calls: what they drew is moot, and counting starts over.
        kept = tally.streaks.reset()._replace(escalations=streaks.escalations)
        tally = tally._replace(streaks=kept, reminders=(), escalation=None)
        if trace:
            trace[:] = [entry._replace(reminder=None, escalation=None) for entry in trace]
    return tally


def predict_escalation(
    streaks: Streaks,
    messages: Sequence[BaseMessage],
    call_id: str,
    config: ReminderConfig,
    policies: Mapping[str, ToolPolicy] | None = None,
) -> Escalation | None:
    """The escalation the call `call_id` of the latest turn would cause once counted, if any.

    Used before the call runs, so results are unknown: only the `repeat` count is predicted.
    """
    index, message, _ = _scan(messages, len(messages))
    if message is None:
        return None
    tool_calls = message.tool_calls
    position = next((i for i, c in enumerate(tool_calls) if c.get("id") == call_id), None)
    if position is None:
        return None
    if _since_previous_turn(messages, index, False)[0]:
        streaks = streaks.reset()
    calls = [Call(c.get("id") or "", c["name"], c["args"]) for c in tool_calls[: position + 1]]
    trace: list[CallTrace] = []
    count_turn(streaks, f"#predict:{call_id}", calls, config, policies, trace=trace)
    last = trace[-1] if trace else None
    return last.escalation if last is not None and last.position == position else None


def read_state(state: Any, key: str) -> Any:
    """`state[key]` of a dict state, `state.key` of an object state, None when absent."""
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def read_messages(state: Any, key: str) -> Sequence[BaseMessage]:
    """The message list under `key` of a graph state; empty when there is none."""
    messages = read_state(state, key)
    return messages if isinstance(messages, (list, tuple)) else ()
