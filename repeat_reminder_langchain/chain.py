"""Counting: one agent's chain of consecutive identical calls, advanced one model turn at a time.

The chain is a small immutable value: the last tracked call's tool and argument digest, how many
times in a row it was made, and which calls of the latest model turn are already counted (so a
call seen again after an interrupt or a retry never counts twice). Nothing here knows LangChain.

Calls and tallies are named tuples: they are built on every step of every agent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from .canonical import canonicalize, digest
from .config import ReminderConfig
from .policy import ToolSpec
from .reminder import Reminder, preview

__all__ = ["Call", "Chain", "Tally", "count_calls"]


class Call(NamedTuple):
    """One tool call a model made.

    Attributes:
        id: The call's id (`tool_call_id`), unique within its model turn.
        tool: The tool's name, as the model wrote it (it may name no real tool).
        args: The arguments as the model sent them.
        result: What the call returned (a tool message's content), when known.
    """

    id: str
    tool: str
    args: object
    result: object = None


@dataclass(frozen=True, slots=True)
class Chain:
    """What the guard remembers about one agent.

    Attributes:
        tool: The last tracked call's tool, or None before any.
        digest: The fingerprint of that call's canonical arguments.
        count: How many times in a row that call was made.
        turn: The model turn whose calls were counted last.
        counted: The ids of that turn's calls already counted.
        result: The fingerprint of the last tracked call's result, where results are compared.
        reminded: Whether the last tracked call drew a reminder (so the next one tells whether
            the model changed course).
    """

    tool: str | None = None
    digest: str = ""
    count: int = 0
    turn: str = ""
    counted: tuple[str, ...] = ()
    result: str = ""
    reminded: bool = False

    def reset(self) -> Chain:
        """The chain after a new user message: no streak, but the turn stays counted."""
        return replace(self, tool=None, digest="", count=0, result="", reminded=False)

    def to_dict(self) -> dict[str, Any]:
        """The chain as plain data, for a checkpoint."""
        return {
            "tool": self.tool,
            "digest": self.digest,
            "count": self.count,
            "turn": self.turn,
            "counted": list(self.counted),
            "result": self.result,
            "reminded": self.reminded,
        }

    @classmethod
    def from_dict(cls, data: object) -> Chain:
        """The chain `to_dict` wrote; anything else (nothing stored yet, or garbage) is empty."""
        if not isinstance(data, Mapping):
            return cls()
        tool, count, counted = data.get("tool"), data.get("count"), data.get("counted")
        digest, turn = data.get("digest"), data.get("turn")
        result, reminded = data.get("result", ""), data.get("reminded", False)
        if (
            (tool is None or isinstance(tool, str))
            and isinstance(digest, str)
            and isinstance(count, int)
            and not isinstance(count, bool)
            and count >= 0
            and isinstance(turn, str)
            and isinstance(counted, (list, tuple))
            and all(isinstance(call_id, str) for call_id in counted)
            and isinstance(result, str)
            and isinstance(reminded, bool)
        ):
            return cls(tool, digest, count, turn, tuple(counted), result, reminded)
        return cls()


class Tally(NamedTuple):
    """What counting a turn found.

    Attributes:
        chain: The chain after the calls.
        reminders: The reminders due, in order.
        calls: How many tracked calls were counted.
        longest: The longest run these calls reached, as `(tool, length)`, if any.
        followups: For each counted call that followed a reminder, whether it was a different
            call (the model changed course) — the raw material of a recovery rate.
    """

    chain: Chain
    reminders: Sequence[Reminder] = ()
    calls: int = 0
    longest: tuple[str, int] | None = None
    followups: Sequence[bool] = ()


def count_calls(
    chain: Chain,
    turn: str,
    calls: Iterable[Call],
    config: ReminderConfig,
    specs: Mapping[str, ToolSpec] | None = None,
) -> Tally:
    """Count a model turn's calls, in order, and return the reminders they draw.

    Calls already counted for `turn` are skipped. Calls to untracked tools are transparent:
    they neither count nor break a run.

    Args:
        chain: The agent's chain before these calls.
        turn: An identity of the model turn the calls belong to.
        calls: Calls of that turn, in the order the model made them.
        config: Thresholds, tracked tools, preview cap and the other rules.
        specs: The policies tools declare about themselves, by tool name.

    Returns:
        The new chain, the reminders due, and what was counted.

    Example:
        >>> config = ReminderConfig(thresholds=[2])
        >>> calls = [Call("a", "grep", {"q": 1}), Call("b", "grep", {"q": 1.0})]
        >>> tally = count_calls(Chain(), "turn-1", calls, config)
        >>> tally.chain.count, tally.reminders[0].summary
        (2, 'grep × 2')
    """
    counted = list(chain.counted) if chain.turn == turn else []
    seen = set(counted)
    tool, fingerprint, count = chain.tool, chain.digest, chain.count
    result, reminded = chain.result, chain.reminded
    reminders: list[Reminder] = []
    followups: list[bool] = []
    tracked = 0
    longest: tuple[str, int] | None = None
    for call in calls:
        if call.id in seen:
            continue
        seen.add(call.id)
        counted.append(call.id)
        policy = config.policy(call.tool, specs.get(call.tool) if specs else None)
        if policy is None:
            continue
        text = canonicalize(policy.keyed(call.args))
        key = digest(text)
        known = policy.result_aware and call.result is not None
        outcome = digest(canonicalize(call.result)) if known else ""
        same = call.tool == tool and key == fingerprint
        if reminded:
            followups.append(not same)
        progressed = bool(result) and bool(outcome) and outcome != result
        count = count + 1 if same and not progressed else 1
        tool, fingerprint, result = call.tool, key, outcome
        tracked += 1
        if longest is None or count > longest[1]:
            longest = (call.tool, count)
        level = policy.level(count)
        reminded = level is not None
        if level is not None:
            arguments = preview(text, config.arguments_preview_chars)
            reminders.append(Reminder(call.tool, count, level, arguments, key))
    new = Chain(tool, fingerprint, count, turn, tuple(counted), result, reminded)
    return Tally(new, reminders, tracked, longest, followups)
