"""Reading a finished conversation: a readable transcript, and what the guard counted in it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .._canonical import canonicalize
from .._config import ReminderConfig
from .._conversation import SOURCE, is_reminder, tag_of
from .._messages import keeps_system_messages
from .._moved import moved as _moved
from .._policy import ToolPolicy
from ..replay import replay as _replay

__all__ = [
    "Step",
    "Summary",
    "format_transcript",
    "steps",
    "summarize",
]

_Role = Literal["user", "assistant", "tool", "system", "reminder"]


@dataclass(frozen=True, slots=True)
class _Row:
    """One message of a transcript, as one line of text.

    Attributes:
        number: The message's position, from 1.
        role: Who speaks; `"reminder"` for the guard's messages.
        text: What was said: content, tool calls with their arguments, or a tool result.
        level: For a reminder, `"gentle"` or `"detailed"`.
        summary: For a reminder, what it counted, such as `grep × 3`.

    """

    number: int
    role: _Role
    text: str
    level: str | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """One tool call of a conversation, as a row of a timeline.

    Attributes:
        number: The call's position among all calls, from 1.
        tool: The tool called.
        count: The run of identical calls it reached, or None for an untracked tool.
        reminder: The level of the reminder it drew (`"gentle"`, `"detailed"`), if any.
    """

    number: int
    tool: str
    count: int | None
    reminder: str | None = None


def steps(
    messages: Sequence[BaseMessage],
    config: ReminderConfig | None = None,
    policies: Mapping[str, ToolPolicy] | None = None,
) -> list[Step]:
    """Every tool call with the run it reached and the reminder it drew, in order.

    The runs are recounted with `config` and the tools' own policies (pass the guard's
    `config` and `tool_policies`; the defaults when None); the reminders are the ones in the
    conversation, each matched to the latest call before it with its tool and count.
    """
    found = [
        Step(number, item.call.tool, None if item.trace is None else item.trace.streak)
        for number, item in enumerate(_replay(messages, config or ReminderConfig(), policies), 1)
    ]
    made = 0  # calls made before the message at hand
    for message in messages:
        if isinstance(message, AIMessage):
            made += _calls_made(message)
        elif is_reminder(message):
            tag = message.additional_kwargs[SOURCE]
            for index in range(min(made, len(found)) - 1, -1, -1):
                step = found[index]
                if step.tool == tag["tool"] and step.count is not None:
                    found[index] = Step(step.number, step.tool, step.count, tag["level"])
                    break
    return found


def _calls_made(message: AIMessage) -> int:
    named = sum(isinstance(call.get("name"), str) for call in message.invalid_tool_calls)
    return len(message.tool_calls) + named


@dataclass(frozen=True, slots=True)
class Summary:
    """What the guard counted in a conversation.

    Attributes:
        calls: Tool calls the model made (calls whose arguments could not be parsed included).
        reminders: Reminders in the conversation.
        gentle: Of those, how many were gentle.
        detailed: Of those, how many were detailed.
        longest: The longest run of identical tracked calls, as `(tool, length)`, if any.
        escalated: Of the reminders, how many were escalated: the guard's request for the
            model's answer (`exit_behavior="finish"`).

    """

    calls: int
    reminders: int
    gentle: int
    detailed: int
    longest: tuple[str, int] | None
    escalated: int = 0

    @property
    def levels(self) -> str:
        """The reminders by level, adding up to them: `1 gentle, 2 detailed, 1 escalated`."""
        escalated = f", {self.escalated} escalated" if self.escalated else ""
        return f"{self.gentle} gentle, {self.detailed} detailed{escalated}"

    def __str__(self) -> str:
        longest = f"{self.longest[0]} \u00d7 {self.longest[1]}" if self.longest else "none"
        return (
            f"{self.calls} tool calls · {self.reminders} reminders ({self.levels}) · "
            f"longest streak: {longest}"
        )


def summarize(
    messages: Sequence[BaseMessage],
    config: ReminderConfig | None = None,
    policies: Mapping[str, ToolPolicy] | None = None,
) -> Summary:
    """Calls, reminders and the longest streak of a conversation.

    Streaks are recounted with `config` and the tools' own policies: pass the guard's
    (`guard.config`, `guard.tool_policies`) when it excludes tools or changes the rules; the
    defaults are used when None.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> turn = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "1"}])
        >>> print(summarize([HumanMessage("hi"), turn]))
        1 tool calls · 0 reminders (0 gentle, 0 detailed) · longest streak: none

    """
    levels = [m.additional_kwargs[SOURCE]["level"] for m in messages if is_reminder(m)]
    longest: tuple[str, int] | None = None
    for item in _replay(messages, config or ReminderConfig(), policies):
        if item.trace is not None and (longest is None or item.trace.streak > longest[1]):
            longest = (item.call.tool, item.trace.streak)
    return Summary(
        calls=sum(_calls_made(m) for m in messages if isinstance(m, AIMessage)),
        reminders=len(levels),
        gentle=levels.count("gentle"),
        detailed=levels.count("detailed"),
        longest=longest if longest and longest[1] > 1 else None,
        escalated=levels.count("escalated"),
    )


def _transcript_rows(messages: Sequence[BaseMessage]) -> list[_Row]:
    """One row per message: who spoke and what, tool calls shown with their arguments."""
    rows = []
    for number, message in enumerate(messages, start=1):
        tag = tag_of(message)
        if is_reminder(message) and tag is not None:
            text = _text(message.content).strip().removeprefix("<system-reminder>")
            text = text.removesuffix("</system-reminder>").strip()
            rows.append(_Row(number, "reminder", text, str(tag["level"]), str(tag["summary"])))
        elif isinstance(message, AIMessage):
            calls = [_call_text(c["name"], c["args"]) for c in message.tool_calls]
            said = _text(message.content)
            level = str(tag["level"]) if tag is not None else None
            summary = str(tag["summary"]) if tag is not None else None
            rows.append(
                _Row(number, "assistant", " ".join(filter(None, [said, *calls])), level, summary)
            )
        elif isinstance(message, ToolMessage):
            rows.append(
                _Row(number, "tool", f"{message.name or 'tool'} → {_text(message.content)}")
            )
        elif isinstance(message, HumanMessage):
            rows.append(_Row(number, "user", _text(message.content)))
        else:
            rows.append(_Row(number, "system", _text(message.content)))
    return rows


def format_transcript(
    messages: Sequence[BaseMessage], width: int | None = 110, *, sent_to: object = None
) -> str:
    """The conversation as text, one message per line, cut to `width` (None: whole).

    The guard's messages are shown in full, line by line; with `sent_to`, the chat model the
    conversation went to, each reminder is marked with how it reached that model: as a system
    message, or as a user turn (how a model that takes no system message mid-conversation is
    sent one stored as a system message).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> turn = AIMessage("", tool_calls=[{"name": "ls", "args": {"dir": "."}, "id": "1"}])
        >>> print(format_transcript([HumanMessage("hi"), turn]))
          1  user       hi
          2  assistant  → ls(dir=".")

    """
    lines = []
    keeps = sent_to is not None and keeps_system_messages(sent_to)
    for row in _transcript_rows(messages):
        if row.level is not None:
            role = "REMINDER" if row.role == "reminder" else "GUARD"
            how = ""
            if sent_to is not None and row.role == "reminder":
                system = keeps and messages[row.number - 1].type == "system"
                how = " · sent as a system message" if system else " · sent as a user turn"
            lines.append(f"{row.number:>3}  {role:<10} [{row.level} · {row.summary}{how}]")
            lines.extend(f"{'':>16}{line}" for line in row.text.splitlines())
            continue
        line = f"{row.number:>3}  {row.role:<10} {' '.join(row.text.split())}"
        lines.append(line if width is None or len(line) <= width else line[: width - 1] + "…")
    return "\n".join(lines)


def _call_text(name: str, args: dict[str, object]) -> str:
    inner = ", ".join(f"{key}={canonicalize(value)}" for key, value in args.items())
    return f"→ {name}({inner})"


def _text(content: str | list[str | dict[str, object]]) -> str:
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text", "") for p in content]
        content = " ".join(str(part) for part in parts if part)
    return content


# The names of 0.2.0's module that it no longer exports, each with its warning (`_moved`).
__getattr__ = _moved(__name__)
