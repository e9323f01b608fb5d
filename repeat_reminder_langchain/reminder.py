"""A reminder: what the guard tells the model, how it is worded, and how it is tagged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SOURCE", "Level", "Reminder", "is_reminder", "preview", "wrap"]

SOURCE = "repeat_tool_reminder"
"""The `name` and `additional_kwargs["lc_source"]` of every reminder message."""

Level = Literal["gentle", "detailed"]

_GENTLE = (
    "You have called `{tool}` {count} times in a row with exactly the same arguments. "
    "Before calling it again, look closely at the result you already have: the same call will "
    "most likely return the same thing. If the task is not finished, try a different approach "
    "or different arguments; if you already have what you need, finish."
)

_DETAILED = (
    "Repeated tool call detected.\n"
    "- tool: {tool}\n"
    "- consecutive_calls: {count}\n"
    "- arguments: {arguments}\n"
    "These identical calls are not making progress. Do not call this tool with these exact "
    "arguments again. Read the latest result, then choose a different action or different "
    "arguments, or finish if you have gathered enough to answer."
)


@dataclass(frozen=True, slots=True)
class Reminder:
    """One reminder, due because `tool` was called `count` times in a row with one argument set.

    Attributes:
        tool: The tool's name.
        count: How many consecutive identical calls led to this reminder.
        level: `"gentle"` at the first threshold, `"detailed"` at every later one.
        arguments: The canonical arguments, cut to the preview cap.
        digest: A fingerprint of the full canonical arguments (for logs, in their place).

    Example:
        >>> reminder = Reminder("grep", 5, "detailed", '{"pattern":"retry_limit"}')
        >>> print(reminder.text.splitlines()[1:4])
        ['- tool: grep', '- consecutive_calls: 5', '- arguments: {"pattern":"retry_limit"}']

    """

    tool: str
    count: int
    level: Level
    arguments: str
    digest: str = ""

    @property
    def text(self) -> str:
        """The words the model reads."""
        template = _GENTLE if self.level == "gentle" else _DETAILED
        return template.format(tool=self.tool, count=self.count, arguments=self.arguments)

    @property
    def summary(self) -> str:
        """A one-line label such as `grep × 5`."""
        return f"{self.tool} \u00d7 {self.count}"

    def tag(self) -> dict[str, Any]:
        """The `additional_kwargs` that mark a message as this reminder."""
        return {
            "lc_source": SOURCE,
            SOURCE: {
                "kind": "plugin",
                "plugin": "repeat-tool-reminder",
                "form": "notice",
                "summary": self.summary,
                "tool": self.tool,
                "count": self.count,
                "level": self.level,
            },
        }


def preview(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how many were left out.

    Example:
        >>> preview("abcdefgh", 3)
        'abc… (+5 more chars)'

    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\u2026 (+{len(text) - limit} more chars)"


def wrap(text: str) -> str:
    """The text inside `<system-reminder>` tags, for reminders sent as a user turn."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def is_reminder(message: object) -> bool:
    """Whether `message` is one of the guard's reminders (a tagged system or human message).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> is_reminder(HumanMessage("hello"))
        False

    """
    if getattr(message, "type", None) not in ("system", "human"):
        return False
    tags = getattr(message, "additional_kwargs", None)
    return (
        isinstance(tags, Mapping)
        and tags.get("lc_source") == SOURCE
        and isinstance(tags.get(SOURCE), Mapping)
    )
