"""Counting a finished conversation as the guard does: each call with what it reached.

The audit, the transcripts and the evaluation read a conversation after the fact through this
one function, so that what they report is what the guard counts at run time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from langchain_core.messages import AIMessage, BaseMessage

from ._config import ReminderConfig
from ._conversation import read_turn, user_test
from ._counter import Call, CallTrace, LoopCounter
from ._policy import ToolPolicy
from ._record import Record

__all__ = ["Call", "CallTrace", "Replayed", "replay"]


class Replayed(NamedTuple):
    """One call of a replayed conversation.

    Attributes:
        call: The call.
        message: The position of the `AIMessage` that made it.
        trace: What the guard counted for it, or None for an untracked call.
    """

    call: Call
    message: int
    trace: CallTrace | None


def replay(
    messages: Sequence[BaseMessage],
    config: ReminderConfig,
    policies: Mapping[str, ToolPolicy] | None = None,
) -> Iterator[Replayed]:
    """Count a conversation as the guard does, and yield each call with what it reached.

    A turn is counted where the guard would count it — before the model's next turn, or at
    the end — once all its results are in; a user message resets the record, exactly as at
    run time. The reminders are the ones the guard would send under `config`, whatever the
    conversation holds.
    """
    counter, not_user = LoopCounter(config), user_test(config.not_user)
    record: Record = {}
    looks = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
    for number, end in enumerate((*looks[1:], len(messages))):
        turn = read_turn(messages, record.get("turn", ""), end, not_user)
        trace: list[CallTrace] = []
        counted = counter.count(record, turn, policies, observe=trace.append)
        if turn.id and not turn.waiting:
            # The turn counted is the latest model turn before `end`: the one at looks[number].
            found = {entry.position: entry for entry in trace}
            for index, call in enumerate(turn.calls):
                yield Replayed(call, looks[number], found.get(index))
        if counted.record is not None:
            record = counted.record
