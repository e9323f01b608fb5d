"""What an audit finds: its findings, each conversation's and each tool's totals, the whole.

Plain records, filled by `audit.Auditor` and read by the text (`tables`), the HTML report and
`--json` (each has `as_dict`); the words they use are defined in `audit`'s docstring.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .._config import ReminderConfig
from .._detectors import DETECTORS

__all__ = [
    "Audit",
    "ConversationAudit",
    "Finding",
    "Reason",
    "Revealed",
    "TimelineCall",
    "ToolAudit",
    "failing",
    "settings",
]


_LEVELS = ("gentle", "detailed", "escalated")  # the firmest last


@dataclass(frozen=True, slots=True)
class Reason:
    """What one call of a finding's turn drew.

    Attributes:
        call: The call's position among its turn's calls, from 0.
        tool: The tool called.
        detector: `repeat`, `stale` or `same_error`.
        count: What the detector counted.
        level: `gentle`, `detailed`, or `escalated` (the loop reached `escalate_after`).
        arguments: The call's canonical arguments, cut to 100 characters.
    """

    call: int
    tool: str
    detector: str
    count: int
    level: str
    arguments: str

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for `--json`."""
        return {
            "call": self.call,
            "tool": self.tool,
            "detector": self.detector,
            "count": self.count,
            "level": self.level,
            "arguments": self.arguments,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """One model turn the guard would have reminded of (one message), or a loop it would stop.

    Like the message's tag, it is named by its first reason and takes the firmest `level`.

    Attributes:
        conversation: The conversation's index in the input, from 0 across all files read.
        id: The conversation's id, when its record has one; a thread's id.
        position: The index, in the conversation's message list, of the model message whose
            calls drew it.
        reasons: What each of those calls drew, in the order of the calls (at least one).
        checkpoint: For a thread of a checkpointer, the checkpoint its messages were read
            from (`--json` has it for threads only).
        sent: Whether the conversation holds a reminder of the guard's after the turn's
            results (it ran with the guard, which reminded the model there).
    """

    conversation: int
    id: str | None
    position: int
    reasons: tuple[Reason, ...]
    checkpoint: str | None = None
    sent: bool = False

    @property
    def level(self) -> str:
        """The firmest level of the reasons."""
        return max((reason.level for reason in self.reasons), key=_LEVELS.index)

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for `--json`: the first reason's fields, and every reason when several."""
        data = {
            "conversation": self.conversation,
            "id": self.id,
            **_checkpoint(self.checkpoint),
            "position": self.position,
            **self.reasons[0].as_dict(),
            "level": self.level,
            "sent": self.sent,
        }
        if len(self.reasons) > 1:
            data["reasons"] = [reason.as_dict() for reason in self.reasons]
        return data


def _checkpoint(checkpoint: str | None) -> dict[str, str]:
    """A thread's checkpoint as a field of its `--json` data; no field for a file's."""
    return {} if checkpoint is None else {"checkpoint": checkpoint}


@dataclass(slots=True)
class ToolAudit:
    """What one tool's calls looked like across the conversations.

    Attributes:
        calls: Calls made to it (untracked calls included).
        longest: The longest run of identical calls (0 for an untracked tool).
        streaks: Runs of two or more identical calls.
        gentle: Gentle reminders the guard would have sent.
        detailed: Detailed reminders the guard would have sent.
        escalated: Loops the guard would have stopped (with `escalate_after`).
        wasted: Wasted calls (see the module's definitions).
    """

    calls: int = 0
    longest: int = 0
    streaks: int = 0
    gentle: int = 0
    detailed: int = 0
    escalated: int = 0
    wasted: int = 0


@dataclass(slots=True)
class ConversationAudit:
    """One conversation with findings.

    Attributes:
        index: The conversation's index in the input, from 0.
        id: Its id, when its record has one; a thread's id.
        source: The file it came from, or the checkpointer's URL.
        calls: The calls it made.
        wasted: Its wasted calls.
        tokens: The tokens of the model turns that made them; None when it records no usage.
        findings: Its findings, in order.
        checkpoint: For a thread, the checkpoint its messages were read from.
    """

    index: int
    id: str | None
    source: str
    calls: int
    wasted: int
    tokens: int | None
    findings: tuple[Finding, ...]
    checkpoint: str | None = None

    @property
    def reminders(self) -> int:
        """Reminders among the findings' reasons (escalations left out)."""
        return sum(r.level != "escalated" for f in self.findings for r in f.reasons)

    @property
    def escalations(self) -> int:
        """Loops stopped among the findings' reasons."""
        return sum(r.level == "escalated" for f in self.findings for r in f.reasons)

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for `--json`."""
        return {
            "conversation": self.index,
            "id": self.id,
            **_checkpoint(self.checkpoint),
            "source": self.source,
            "calls": self.calls,
            "reminders": self.reminders,
            "escalations": self.escalations,
            "wasted": self.wasted,
            "tokens": self.tokens,
        }


@dataclass(frozen=True, slots=True)
class TimelineCall:
    """One call of a flagged conversation, as the HTML report shows it.

    Attributes:
        number: The call's position among the conversation's calls, from 1.
        position: The index of the model message that made it.
        tool: The tool called.
        streak: The run of identical calls it reached; None for an untracked call.
        counts: What each detector counted, as text (`repeat 4 · stale 2`).
        level: The level of the finding it drew, if any.
        detector: The detector of that finding, if any.
        arguments: Its arguments, cut short.
        result: Its result, cut short.
        wasted: Whether it was a wasted call.
    """

    number: int
    position: int
    tool: str
    streak: int | None
    counts: str
    level: str | None
    detector: str | None
    arguments: str
    result: str
    wasted: bool


@dataclass(frozen=True, slots=True)
class Revealed:
    """What excluding one bookkeeping tool would reveal: findings hidden by its calls.

    Attributes:
        tool: The bookkeeping tool.
        findings: Findings the audit makes only with the tool excluded.
        conversations: Conversations with at least one of them.
    """

    tool: str
    findings: int
    conversations: int


@dataclass
class Audit:
    """The audit of a set of conversations.

    Attributes:
        config: The settings the conversations were counted with.
        conversations: Conversations read.
        calls: Tool calls made in them.
        tools: Per tool, what its calls looked like.
        detectors: Per detector in use, `{"reminders": n, "escalations": n,
            "conversations": n}`.
        flagged: The conversations with findings, in input order.
        wasted: Wasted calls in all.
        tokens: Tokens of the turns that made wasted calls; None when no log records usage.
        tokens_recorded: Tokens of every model turn whose usage is recorded.
        revealed: Per bookkeeping tool whose exclusion would reveal findings, what it would.
        timelines: Flagged conversations with their calls, most wasted calls first (only when
            asked for, for the HTML report).
        skipped: Unreadable parts skipped (with `skip_bad`).
        problems: The first few of those.
        sources: The files read, or the checkpointer.
        threads: Whether the conversations are a checkpointer's threads: findings then name
            the thread and its checkpoint.
        failures_seen: Whether a tracked call was seen to fail (`status="error"` or
            `error_pattern`); looked for only while a detector of failures is in use.
    """

    config: ReminderConfig
    conversations: int = 0
    calls: int = 0
    tools: dict[str, ToolAudit] = field(default_factory=dict)
    detectors: dict[str, dict[str, int]] = field(default_factory=dict)
    flagged: list[ConversationAudit] = field(default_factory=list)
    wasted: int = 0
    tokens: int | None = None
    tokens_recorded: int = 0
    revealed: list[Revealed] = field(default_factory=list)
    timelines: list[tuple[ConversationAudit, list[TimelineCall]]] = field(default_factory=list)
    skipped: int = 0
    problems: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    threads: bool = False
    failures_seen: bool = False

    @property
    def findings(self) -> list[Finding]:
        """Every finding, in input order."""
        return [finding for found in self.flagged for finding in found.findings]

    def count(self, level: str | None = None) -> int:
        """Reminders found (escalations left out), or those of one level."""
        if level is None:
            return sum(found.reminders for found in self.flagged)
        return sum(
            r.level == level for found in self.flagged for f in found.findings for r in f.reasons
        )

    def top(self, number: int) -> list[ConversationAudit]:
        """The `number` flagged conversations with the most wasted calls (then findings)."""
        return heapq.nsmallest(
            number, self.flagged, key=lambda c: (-c.wasted, -len(c.findings), c.index)
        )

    def as_dict(self, top: int = 10) -> dict[str, Any]:
        """Plain data, for `--json`: the settings used, the totals and every finding."""
        wasted_in = sum(found.wasted > 0 for found in self.flagged)
        return {
            "settings": settings(self.config),
            "sources": self.sources,
            "conversations": self.conversations,
            "skipped": self.skipped,
            "calls": self.calls,
            "reminders": {level: self.count(level) for level in _LEVELS},
            "wasted": {
                "calls": self.wasted,
                "conversations": wasted_in,
                "tokens": self.tokens,
                "tokens_recorded": self.tokens_recorded,
            },
            "tools": {name: _plain(tool) for name, tool in sorted(self.tools.items())},
            "detectors": self.detectors,
            "failures_seen": self.failures_seen,
            "bookkeeping": [
                {"tool": r.tool, "findings": r.findings, "conversations": r.conversations}
                for r in self.revealed
            ],
            "top": [found.as_dict() for found in self.top(top)],
            "flagged": [found.as_dict() for found in self.flagged],
            "findings": [finding.as_dict() for finding in self.findings],
        }


def failing(detectors: Iterable[str]) -> list[str]:
    """Of `detectors`, the ones that count failures only: blind where none can be seen."""
    return [name for name in detectors if DETECTORS[name].reads == "failures"]


def _plain(tool: ToolAudit) -> dict[str, int]:
    return {name: getattr(tool, name) for name in ToolAudit.__dataclass_fields__}


def settings(config: ReminderConfig) -> dict[str, Any]:
    """Every field of `config`, as plain JSON data."""
    return config.model_dump(mode="json")
