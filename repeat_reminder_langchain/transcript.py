"""Reading a finished conversation: a readable transcript, and what the guard counted in it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .canonical import canonicalize
from .chain import Call, Chain, count_calls
from .config import ReminderConfig
from .messages import latest_turn, user_spoke
from .policy import ToolSpec
from .reminder import SOURCE, Level, is_reminder

__all__ = [
    "Row",
    "Step",
    "Summary",
    "format_transcript",
    "replay",
    "steps",
    "summarize",
    "transcript_rows",
]

Role = Literal["user", "assistant", "tool", "system", "reminder"]


@dataclass(frozen=True, slots=True)
class Row:
    """One message of a transcript, as one line of text.

    Attributes:
        number: The message's position, from 1.
        role: Who speaks; `"reminder"` for the guard's messages.
        text: What was said: content, tool calls with their arguments, or a tool result.
        level: For a reminder, `"gentle"` or `"detailed"`.
        summary: For a reminder, what it counted, such as `grep × 3`.

    """

    number: int
    role: Role
    text: str
    level: str | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """What the guard counted in a conversation.

    Attributes:
        calls: Tool calls the model made.
        reminders: Reminders in the conversation.
        gentle: Of those, how many were gentle.
        detailed: Of those, how many were detailed.
        longest: The longest run of identical tracked calls, as `(tool, length)`, if any.

    """

    calls: int
    reminders: int
    gentle: int
    detailed: int
    longest: tuple[str, int] | None

    def __str__(self) -> str:
        longest = f"{self.longest[0]} \u00d7 {self.longest[1]}" if self.longest else "none"
        return (
            f"{self.calls} tool calls · {self.reminders} reminders "
            f"({self.gentle} gentle, {self.detailed} detailed) · longest streak: {longest}"
        )


def replay(
    messages: Sequence[BaseMessage],
    config: ReminderConfig,
    specs: Mapping[str, ToolSpec] | None = None,
) -> Iterator[tuple[Call, int | None, Level | None]]:
    """Count a conversation as the guard does: each call, the run it reached, its reminder.

    Untracked calls come with no run. A turn is counted where the model would next have read
    it (before its next turn or a user message, or at the end) once all its results are in,
    and a user message resets the chain, exactly as at run time. The reminder is the one the
    guard would send under `config`, whatever the conversation holds.
    """
    chain = Chain()
    for end in range(1, len(messages) + 1):
        if end < len(messages) and not isinstance(messages[end], (AIMessage, HumanMessage)):
            continue
        turn = latest_turn(messages, end)
        if turn is not None and turn.complete:
            for call in turn.calls:
                before = (chain.turn, chain.counted)
                tally = count_calls(chain, turn.id, [call], config, specs)
                chain = tally.chain
                if (chain.turn, chain.counted) != before:
                    level = tally.reminders[0].level if tally.reminders else None
                    yield call, chain.count if tally.calls else None, level
        if user_spoke(messages, end):
            chain = chain.reset()


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
    specs: Mapping[str, ToolSpec] | None = None,
) -> list[Step]:
    """Every tool call with the run it reached and the reminder it drew, in order.

    The runs are recounted with `config` and the tools' own policies `specs` (pass the guard's
    `config` and `tool_specs`; the defaults when None); the reminders are the ones in the
    conversation, each matched to the latest call before it with its tool and count.
    """
    found = [
        Step(number, call.tool, count)
        for number, (call, count, _) in enumerate(
            replay(messages, config or ReminderConfig(), specs), 1
        )
    ]
    made = 0  # calls made before the message at hand
    for message in messages:
        if isinstance(message, AIMessage):
            made += len(message.tool_calls) + len(message.invalid_tool_calls)
        elif is_reminder(message):
            tag = message.additional_kwargs[SOURCE]
            for index in range(min(made, len(found)) - 1, -1, -1):
                step = found[index]
                if (step.tool, step.count) == (tag["tool"], tag["count"]):
                    found[index] = Step(step.number, step.tool, step.count, tag["level"])
                    break
    return found


def summarize(
    messages: Sequence[BaseMessage],
    config: ReminderConfig | None = None,
    specs: Mapping[str, ToolSpec] | None = None,
) -> Summary:
    """Calls, reminders and the longest streak of a conversation.

    Streaks are recounted with `config` and the tools' own policies `specs`: pass the guard's
    (`guard.config`, `guard.tool_specs`) when it excludes tools or changes the rules; the
    defaults are used when None.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> turn = AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "1"}])
        >>> print(summarize([HumanMessage("hi"), turn]))
        1 tool calls · 0 reminders (0 gentle, 0 detailed) · longest streak: none

    """
    config = config or ReminderConfig()
    levels = [m.additional_kwargs[SOURCE]["level"] for m in messages if is_reminder(m)]
    longest: tuple[str, int] | None = None
    for call, count, _ in replay(messages, config, specs):
        if count is not None and (longest is None or count > longest[1]):
            longest = (call.tool, count)
    calls = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
    return Summary(
        calls=calls,
        reminders=len(levels),
        gentle=levels.count("gentle"),
        detailed=levels.count("detailed"),
        longest=longest if longest and longest[1] > 1 else None,
    )


def transcript_rows(messages: Sequence[BaseMessage]) -> list[Row]:
    """One row per message: who spoke and what, tool calls shown with their arguments."""
    rows = []
    for number, message in enumerate(messages, start=1):
        if is_reminder(message):
            tag = message.additional_kwargs[SOURCE]
            text = _text(message.content).strip().removeprefix("<system-reminder>")
            text = text.removesuffix("</system-reminder>").strip()
            rows.append(Row(number, "reminder", text, tag["level"], tag["summary"]))
        elif isinstance(message, AIMessage):
            calls = [_call_text(c["name"], c["args"]) for c in message.tool_calls]
            said = _text(message.content)
            rows.append(Row(number, "assistant", " ".join(filter(None, [said, *calls]))))
        elif isinstance(message, ToolMessage):
            rows.append(Row(number, "tool", f"{message.name or 'tool'} → {_text(message.content)}"))
        elif isinstance(message, HumanMessage):
            rows.append(Row(number, "user", _text(message.content)))
        else:
            rows.append(Row(number, "system", _text(message.content)))
    return rows


def format_transcript(messages: Sequence[BaseMessage], width: int = 110) -> str:
    """The conversation as text, one message per line, reminders marked.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> turn = AIMessage("", tool_calls=[{"name": "ls", "args": {"dir": "."}, "id": "1"}])
        >>> print(format_transcript([HumanMessage("hi"), turn]))
          1  user       hi
          2  assistant  → ls(dir=".")

    """
    lines = []
    for row in transcript_rows(messages):
        text = " ".join(row.text.split())
        text = f"[{row.level} · {row.summary}] {text}" if row.role == "reminder" else text
        role = "REMINDER" if row.role == "reminder" else row.role
        line = f"{row.number:>3}  {role:<10} {text}"
        lines.append(line if len(line) <= width else line[: width - 1] + "…")
    return "\n".join(lines)


def _call_text(name: str, args: dict[str, object]) -> str:
    inner = ", ".join(f"{key}={canonicalize(value)}" for key, value in args.items())
    return f"→ {name}({inner})"


def _text(content: str | list[str | dict[str, object]]) -> str:
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text", "") for p in content]
        content = " ".join(str(part) for part in parts if part)
    return content
