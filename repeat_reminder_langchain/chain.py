"""Counting: one agent's chain of consecutive identical calls, advanced one model turn at a time.

The chain is a small immutable value: the last tracked call's tool and argument digest, how many
times in a row it was made, and which calls of the latest model turn are already counted (so a
call seen again after an interrupt or a retry never counts twice). Nothing here knows LangChain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .canonical import canonicalize, digest
from .config import ReminderConfig
from .reminder import Level, Reminder, preview

__all__ = ["Call", "Chain", "count_calls", "level_at"]


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call a model made.

    Attributes:
        id: The call's id (`tool_call_id`), unique within its model turn.
        tool: The tool's name, as the model wrote it (it may name no real tool).
        args: The arguments as the model sent them.

    """

    id: str
    tool: str
    args: object


@dataclass(frozen=True, slots=True)
class Chain:
    """What the guard remembers about one agent.

    Attributes:
        tool: The last tracked call's tool, or None before any.
        digest: The fingerprint of that call's canonical arguments.
        count: How many times in a row that call was made.
        turn: The model turn whose calls were counted last.
        counted: The ids of that turn's calls already counted.

    """

    tool: str | None = None
    digest: str = ""
    count: int = 0
    turn: str = ""
    counted: tuple[str, ...] = ()

    def reset(self) -> Chain:
        """The chain after a new user message: no streak, but the turn stays counted."""
        return replace(self, tool=None, digest="", count=0)

    def to_dict(self) -> dict[str, Any]:
        """The chain as plain data, for a checkpoint."""
        return {
            "tool": self.tool,
            "digest": self.digest,
            "count": self.count,
            "turn": self.turn,
            "counted": list(self.counted),
        }

    @classmethod
    def from_dict(cls, data: object) -> Chain:
        """The chain `to_dict` wrote; anything else (nothing stored yet, or garbage) is empty."""
        if not isinstance(data, Mapping):
            return cls()
        tool, count, counted = data.get("tool"), data.get("count"), data.get("counted")
        digest, turn = data.get("digest"), data.get("turn")
        if (
            (tool is None or isinstance(tool, str))
            and isinstance(digest, str)
            and isinstance(count, int)
            and not isinstance(count, bool)
            and count >= 0
            and isinstance(turn, str)
            and isinstance(counted, (list, tuple))
            and all(isinstance(call_id, str) for call_id in counted)
        ):
            return cls(tool, digest, count, turn, tuple(counted))
        return cls()


def level_at(count: int, thresholds: Sequence[int]) -> Level | None:
    """Which reminder a run of `count` calls draws, if any."""
    if count == thresholds[0]:
        return "gentle"
    if count in thresholds:
        return "detailed"
    return None


def count_calls(
    chain: Chain, turn: str, calls: Iterable[Call], config: ReminderConfig
) -> tuple[Chain, list[Reminder]]:
    """Count a model turn's calls, in order, and return the reminders they draw.

    Calls already counted for `turn` are skipped. Calls to untracked tools are transparent:
    they neither count nor break a run.

    Args:
        chain: The agent's chain before these calls.
        turn: An identity of the model turn the calls belong to.
        calls: Calls of that turn, in the order the model made them.
        config: Thresholds, tracked tools and preview cap.

    Returns:
        The new chain and the reminders due, in order.

    Example:
        >>> config = ReminderConfig(thresholds=[2])
        >>> calls = [Call("a", "grep", {"q": 1}), Call("b", "grep", {"q": 1.0})]
        >>> chain, reminders = count_calls(Chain(), "turn-1", calls, config)
        >>> chain.count, reminders[0].summary
        (2, 'grep × 2')

    """
    counted = list(chain.counted) if chain.turn == turn else []
    seen = set(counted)
    tool, fingerprint, count = chain.tool, chain.digest, chain.count
    reminders: list[Reminder] = []
    for call in calls:
        if call.id in seen:
            continue
        seen.add(call.id)
        counted.append(call.id)
        if not config.tracks(call.tool):
            continue
        text = canonicalize(call.args)
        key = digest(text)
        count = count + 1 if call.tool == tool and key == fingerprint else 1
        tool, fingerprint = call.tool, key
        level = level_at(count, config.thresholds)
        if level is not None:
            arguments = preview(text, config.arguments_preview_chars)
            reminders.append(Reminder(call.tool, count, level, arguments))
    return Chain(tool, fingerprint, count, turn, tuple(counted)), reminders
