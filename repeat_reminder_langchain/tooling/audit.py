"""Auditing saved conversations: the streaks in them and the reminders the guard would send.

A file holds one conversation or many: a JSON list of LangChain message dicts (as
`messages_to_dict` writes them), a JSON list of such lists, or JSON Lines of either (one message
dict per line for one conversation, or one list per line for one conversation each).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict

from ..config import ReminderConfig
from .transcript import replay

__all__ = ["AuditError", "ToolAudit", "audit", "format_audit", "load_conversations"]


class AuditError(ValueError):
    """A file that holds no conversations the audit can read."""


@dataclass(slots=True)
class ToolAudit:
    """What one tool's calls looked like across the conversations.

    Attributes:
        calls: Calls made to it (untracked calls included).
        longest: The longest run of identical calls (0 for an untracked tool).
        streaks: Runs of two or more identical calls.
        gentle: Gentle reminders the guard would have sent.
        detailed: Detailed reminders the guard would have sent.
    """

    calls: int = 0
    longest: int = 0
    streaks: int = 0
    gentle: int = 0
    detailed: int = 0


@dataclass(slots=True)
class Audit:
    """The audit of a set of conversations."""

    conversations: int
    calls: int = 0
    tools: dict[str, ToolAudit] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for `--json`."""
        return {
            "conversations": self.conversations,
            "calls": self.calls,
            "tools": {name: asdict(tool) for name, tool in sorted(self.tools.items())},
        }


def load_conversations(path: str | Path) -> list[list[BaseMessage]]:
    """The conversations a file holds.

    Raises:
        AuditError: The file cannot be read, or holds something else.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise AuditError(f"cannot read it ({error.__class__.__name__}: {error})") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = _json_lines(text)
    if not isinstance(data, list) or not data:
        raise AuditError("expected a JSON list of message dicts, a list of such lists, or JSONL")
    if all(isinstance(item, dict) for item in data):
        data = [data]
    if not all(isinstance(item, list) for item in data):
        raise AuditError("mixes message dicts and conversations; expected one or the other")
    conversations = []
    for number, conversation in enumerate(data, start=1):
        try:
            conversations.append(messages_from_dict(conversation))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise AuditError(
                f"conversation {number} holds something that is not a LangChain message dict "
                f"(as messages_to_dict writes them): {error!r}"
            ) from None
    return conversations


def _json_lines(text: str) -> list[Any]:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise AuditError(f"line {number} is not JSON ({error.msg})") from None
    return items


def audit(conversations: Sequence[Sequence[BaseMessage]], config: ReminderConfig) -> Audit:
    """Count each conversation as the guard would, per tool."""
    result = Audit(conversations=len(conversations))
    for messages in conversations:
        for item in replay(messages, config):
            tool = result.tools.setdefault(item.call.tool, ToolAudit())
            tool.calls += 1
            result.calls += 1
            if item.trace is not None:
                tool.longest = max(tool.longest, item.trace.streak)
                tool.streaks += item.trace.streak == 2
                reminder = item.trace.reminder
                if reminder is not None and reminder.level == "gentle":
                    tool.gentle += 1
                elif reminder is not None:
                    tool.detailed += 1
    return result


def _rules(config: ReminderConfig) -> str:
    """The counting rules in force: the thresholds, and every other rule not at its default."""
    rules = [f"thresholds {', '.join(map(str, config.thresholds))}"]
    shown = {"include", "exclude", "repeat_every", "progress", "ignore_arguments"}
    for name, value in config.model_dump(include=shown, exclude_defaults=True).items():
        if isinstance(value, dict):
            text = "; ".join(f"{tool}: {', '.join(keys)}" for tool, keys in value.items())
        else:
            text = ", ".join(value) if isinstance(value, (list, tuple)) else str(value)
        rules.append(f"{name.replace('_', ' ')} {text}")
    return " · ".join(rules)


def format_audit(result: Audit, config: ReminderConfig) -> str:
    """The audit as a table, one row per tool, most called first.

    Example:
        >>> print(format_audit(Audit(conversations=1), ReminderConfig()))
        1 conversations · 0 tool calls · thresholds 3, 5, 8
        tool  calls  longest  streaks  gentle  detailed
    """
    lines = [f"{result.conversations} conversations · {result.calls} tool calls · {_rules(config)}"]
    rows = sorted(result.tools.items(), key=lambda item: (-item[1].calls, item[0]))
    width = max([4, *(len(name) for name, _ in rows)])
    columns = ("calls", "longest", "streaks", "gentle", "detailed")
    lines.append(f"{'tool':<{width}}  " + "  ".join(columns))
    for name, tool in rows:
        cells = [getattr(tool, column) for column in columns]
        lines.append(
            f"{name:<{width}}  "
            + "  ".join(
                f"{cell:>{len(column)}}" for cell, column in zip(cells, columns, strict=True)
            )
        )
    return "\n".join(lines)
