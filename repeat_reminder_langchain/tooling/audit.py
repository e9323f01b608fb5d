"""Auditing saved conversations: where the guard would have stepped in, and what it would save.

Each conversation is replayed through the guard's own counting (`transcript.replay`), with the
same configuration a guard would take, one conversation at a time; only compact findings are
kept. Reading the files is `logs.LogReader`'s job; the HTML report is `report.py`'s.

Definitions (the command line's `--help` and the README use the same words):

* a **finding** is a turn the guard would have reminded the model of (`gentle` or `detailed`),
  or, with `escalate_after`, a loop it would have stopped (`escalated`): one per model turn,
  with a **reason** for each call of it that drew a reminder (most turns have one), as the
  guard sends one message per turn;
* a call is **wasted** when a detector's count for it is past that detector's first threshold:
  the guard would already have reminded the model, so a model that heeds the first reminder
  does not make it. A streak of 6 identical calls with thresholds 3, 5, 8 wastes 3 calls;
* the **tokens** of wasted calls are the input and output tokens of the model turns that made
  them (each turn once), where the log records usage.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ..canonical import result_text
from ..config import BOOKKEEPING_TOOLS, ReminderConfig
from ..policy import ToolPolicy
from ..reminder import is_reminder, preview
from .logs import Conversation
from .transcript import replay

__all__ = [
    "NO_FINDINGS",
    "Audit",
    "Auditor",
    "ConversationAudit",
    "Finding",
    "Reason",
    "Revealed",
    "Rows",
    "TimelineCall",
    "ToolAudit",
    "audit",
    "detector_rows",
    "exceeds",
    "finding_rows",
    "findings_title",
    "format_audit",
    "headline",
    "notes",
    "plural",
    "settings",
    "tool_rows",
    "top_rows",
    "top_title",
    "wasted_line",
]

_SHOWN = 100  # characters of arguments or results a finding or a call row keeps
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
            "bookkeeping": [
                {"tool": r.tool, "findings": r.findings, "conversations": r.conversations}
                for r in self.revealed
            ],
            "top": [found.as_dict() for found in self.top(top)],
            "flagged": [found.as_dict() for found in self.flagged],
            "findings": [finding.as_dict() for finding in self.findings],
        }


def _plain(tool: ToolAudit) -> dict[str, int]:
    return {name: getattr(tool, name) for name in ToolAudit.__dataclass_fields__}


def settings(config: ReminderConfig) -> dict[str, Any]:
    """Every field of `config`, as plain JSON data."""
    found: dict[str, Any] = {}
    for name in ReminderConfig.model_fields:
        value = getattr(config, name)
        if isinstance(value, Mapping):
            value = {key: list(items) for key, items in value.items()}
        elif isinstance(value, tuple):
            value = list(value)
        found[name] = value
    return found


def exceeds(config: ReminderConfig, tool: str, counts: Mapping[str, int]) -> bool:
    """Whether a call is wasted: a detector's count past that detector's first threshold."""
    for detector, count in counts.items():
        if detector == "repeat":
            rules = config.rules(tool)
            first = rules.thresholds[0] if rules is not None else config.thresholds[0]
        elif detector == "stale":
            first = config.stale_thresholds[0]
        else:
            first = config.same_error_thresholds[0]
        if count > first:
            return True
    return False


def _without(config: ReminderConfig, tool: str) -> ReminderConfig:
    fields = {name: getattr(config, name) for name in config.model_fields_set}
    fields["exclude"] = (*config.exclude, tool)
    return ReminderConfig(**fields)


class Auditor:
    """Audits conversations one at a time and keeps only what the report needs.

    Args:
        config: The guard's settings to count with.
        policies: The policies tools declared (a guard's `tool_policies`), if any.
        timelines: How many flagged conversations (most wasted calls first) keep their calls
            for the HTML report; 0 keeps none.
    """

    def __init__(
        self,
        config: ReminderConfig,
        policies: Mapping[str, ToolPolicy] | None = None,
        *,
        timelines: int = 0,
    ) -> None:
        self.config = config
        self.policies = policies
        self.result = Audit(config, detectors={d: _detector() for d in config.detect})
        self._timelines = timelines
        self._kept: list[tuple[tuple[int, int, int], int, ConversationAudit, list[Any]]] = []
        self._excluded: dict[str, ReminderConfig] = {}
        self._revealed: dict[str, list[int]] = {}

    def add(self, conversation: Conversation) -> ConversationAudit | None:
        """Audit one conversation; what it found, or None when it found nothing."""
        result = self.result
        result.conversations += 1
        walk = _Walk([] if self._timelines else None)
        for number, item in enumerate(
            replay(conversation.messages, self.config, self.policies), start=1
        ):
            self._call(conversation, number, item, walk)
        result.calls += walk.calls
        result.wasted += walk.wasted
        tokens = self._tokens(conversation.messages, walk.wasted_turns)
        self._reveal(conversation, walk.present, walk.findings)
        if not walk.findings:
            return None
        for detector in {r.detector for finding in walk.findings for r in finding.reasons}:
            result.detectors[detector]["conversations"] += 1
        audited = ConversationAudit(
            conversation.index,
            conversation.id,
            conversation.source,
            walk.calls,
            walk.wasted,
            tokens,
            tuple(walk.findings),
            conversation.checkpoint,
        )
        result.flagged.append(audited)
        if walk.rows is not None:
            self._keep(audited, walk.rows)
        return audited

    def _call(self, conversation: Conversation, number: int, item: Any, walk: _Walk) -> None:
        """Count one replayed call into its tool's totals and the conversation's."""
        call, trace = item.call, item.trace
        position = conversation.positions[item.message]
        tool = self.result.tools.get(call.tool)
        if tool is None:
            tool = self.result.tools[call.tool] = ToolAudit()
        tool.calls += 1
        walk.calls += 1
        walk.present.add(call.tool)
        if trace is None:
            if walk.rows is not None:
                walk.rows.append(_row(number, position, call, None))
            return
        tool.longest = max(tool.longest, trace.streak)
        tool.streaks += trace.streak == 2
        wasted = exceeds(self.config, call.tool, trace.counts)
        if wasted:
            tool.wasted += 1
            walk.wasted += 1
            walk.wasted_turns.add(item.message)
        found = trace.reminder or trace.escalation
        if trace.escalation is not None:
            # Replayed, a stopped loop goes on past the stop, escalating at every call; at
            # run time it ended (or was blocked) at the first: one finding per loop.
            key = (call.tool, trace.escalation.detector, trace.escalation.count - 1)
            if key == walk.stopped:
                found = None
            walk.stopped = (*key[:2], trace.escalation.count)
        reason = None
        if found is not None:
            level = "escalated" if trace.reminder is None else trace.reminder.level
            setattr(tool, level, getattr(tool, level) + 1)
            slot = self.result.detectors[found.detector]
            slot["escalations" if level == "escalated" else "reminders"] += 1
            reason = Reason(
                trace.position,
                call.tool,
                found.detector,
                found.count,
                level,
                preview(found.arguments, _SHOWN),
            )
            last = walk.findings[-1] if walk.findings else None
            if last is not None and last.position == position:  # one message for the turn
                walk.findings[-1] = replace(last, reasons=(*last.reasons, reason))
            else:
                walk.findings.append(
                    Finding(
                        conversation.index,
                        conversation.id,
                        position,
                        (reason,),
                        conversation.checkpoint,
                        _sent(conversation.messages, item.message),
                    )
                )
        if walk.rows is not None:
            walk.rows.append(_row(number, position, call, trace, reason=reason, wasted=wasted))

    def _tokens(self, messages: Sequence[BaseMessage], wasted_turns: set[int]) -> int | None:
        recorded = False
        spent = 0
        for index, message in enumerate(messages):
            usage = message.usage_metadata if isinstance(message, AIMessage) else None
            if usage:
                recorded = True
                total = usage.get("total_tokens") or (
                    usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
                )
                self.result.tokens_recorded += total
                if index in wasted_turns:
                    spent += total
        if not recorded:
            return None
        self.result.tokens = (self.result.tokens or 0) + spent
        return spent

    def _reveal(
        self, conversation: Conversation, present: set[str], findings: list[Finding]
    ) -> None:
        """Replay once more per bookkeeping tool called, to see what excluding it reveals."""
        for tool in sorted(present.intersection(BOOKKEEPING_TOOLS)):
            if not self.config.tracks(tool, (self.policies or {}).get(tool)):
                continue
            config = self._excluded.get(tool)
            if config is None:
                config = self._excluded[tool] = _without(self.config, tool)
            known = {(f.position, r.detector, r.tool, r.count) for f in findings for r in f.reasons}
            new = 0
            for item in replay(conversation.messages, config, self.policies):
                trace = item.trace
                found = trace and (trace.reminder or trace.escalation)
                if found:
                    key = (conversation.positions[item.message], found.detector)
                    new += (*key, found.tool, found.count) not in known
            if new:
                slot = self._revealed.setdefault(tool, [0, 0])
                slot[0] += new
                slot[1] += 1

    def _keep(self, audited: ConversationAudit, rows: list[TimelineCall]) -> None:
        rank = (audited.wasted, len(audited.findings), -audited.index)
        entry = (rank, audited.index, audited, rows)
        if len(self._kept) < self._timelines:
            heapq.heappush(self._kept, entry)
        else:
            heapq.heappushpop(self._kept, entry)

    def finish(
        self,
        skipped: int = 0,
        problems: Iterable[str] = (),
        sources: Iterable[str] = (),
        *,
        threads: bool = False,
    ) -> Audit:
        """The audit so far, with what the reader skipped and what it read (files, or threads)."""
        result = self.result
        result.threads = threads
        result.skipped = skipped
        result.problems = list(problems)
        result.sources = list(sources)
        result.revealed = [
            Revealed(tool, found, conversations)
            for tool, (found, conversations) in sorted(self._revealed.items())
        ]
        kept = sorted(self._kept, reverse=True)
        result.timelines = [(audited, rows) for _, _, audited, rows in kept]
        return result


def _sent(messages: Sequence[BaseMessage], turn: int) -> bool:
    """Whether a reminder of the guard's follows the model turn at `turn`, before the next."""
    for message in messages[turn + 1 :]:
        if isinstance(message, AIMessage):
            return False
        if is_reminder(message):
            return True
    return False


@dataclass(slots=True)
class _Walk:
    """What one conversation's calls add up to, while they are counted."""

    rows: list[TimelineCall] | None
    findings: list[Finding] = field(default_factory=list)
    wasted_turns: set[int] = field(default_factory=set)
    present: set[str] = field(default_factory=set)
    calls: int = 0
    wasted: int = 0
    stopped: tuple[str, str, int] | None = None


def _detector() -> dict[str, int]:
    return {"reminders": 0, "escalations": 0, "conversations": 0}


def _row(
    number: int,
    position: int,
    call: Any,
    trace: Any,
    *,
    reason: Reason | None = None,
    wasted: bool = False,
) -> TimelineCall:
    from ..canonical import canonicalize

    counts = "" if trace is None else " · ".join(f"{d} {n}" for d, n in trace.counts.items())
    result = "" if call.result is None else result_text(call.result)
    return TimelineCall(
        number,
        position,
        call.tool,
        None if trace is None else trace.streak,
        counts,
        None if reason is None else reason.level,
        None if reason is None else reason.detector,
        preview(canonicalize(call.args), _SHOWN),
        preview(" ".join(result.split()), _SHOWN),
        wasted,
    )


def audit(
    conversations: Iterable[Sequence[BaseMessage]],
    config: ReminderConfig,
    policies: Mapping[str, ToolPolicy] | None = None,
) -> Audit:
    """Count message lists as the guard would; the audit of them all."""
    auditor = Auditor(config, policies)
    for index, messages in enumerate(conversations):
        listed = list(messages)
        auditor.add(Conversation(index, None, "", listed, tuple(range(len(listed))), "langchain"))
    return auditor.finish()


def _rules(config: ReminderConfig) -> str:
    """The counting rules in force: the thresholds, and every other rule not at its default."""
    rules = [f"thresholds {', '.join(map(str, config.thresholds))}"]
    shown = (
        "detect",
        "include",
        "exclude",
        "repeat_every",
        "progress",
        "ignore_arguments",
        "stale_thresholds",
        "same_error_thresholds",
        "error_pattern",
        "escalate_after",
        "exit_behavior",
    )
    dumped = settings(config)
    defaults = settings(ReminderConfig())
    for name in shown:
        value = dumped[name]
        if value == defaults[name]:
            continue
        if isinstance(value, dict):
            text = "; ".join(f"{tool}: {', '.join(keys)}" for tool, keys in value.items())
        else:
            text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        rules.append(f"{name.replace('_', ' ')} {text}")
    return " · ".join(rules)


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """Columns two spaces apart: numbers to the right, text to the left, the last unpadded."""
    cells = [[f"{cell:,}" if isinstance(cell, int) else str(cell) for cell in row] for row in rows]
    width = [max([len(name), *(len(row[i]) for row in cells)]) for i, name in enumerate(header)]
    right = [bool(cells) and all(_number(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in (list(header), *cells):
        parts = []
        for i, cell in enumerate(row):
            last = i == len(row) - 1
            if right[i]:
                parts.append(cell.rjust(width[i]))
            else:
                parts.append(cell if last else cell.ljust(width[i]))
        lines.append("  ".join(parts).rstrip())
    return lines


def _number(text: str) -> bool:
    return text.replace(",", "").isdigit() or text == "—"


def plural(number: int, word: str) -> str:
    """`number` and `word`, in the plural unless the number is 1.

    Example:
        >>> plural(1, "call"), plural(1200, "call")
        ('1 call', '1,200 calls')
    """
    return f"{number:,} {word}{'' if number == 1 else 's'}"


Rows = tuple[list[str], list[list[object]]]
"""A table: its header, then its rows (numbers as `int`, the rest as text)."""


def headline(result: Audit) -> str:
    """The audit's first line: what was read, and the counting rules in force."""
    unit = "thread" if result.threads else "conversation"
    head = [plural(result.conversations, unit), plural(result.calls, "tool call")]
    if len(result.sources) > 1:
        head.append(plural(len(result.sources), "file"))
    if result.skipped:
        head.append(f"{result.skipped:,} unreadable skipped")
    return " · ".join([*head, _rules(result.config)])


def tool_rows(result: Audit) -> Rows:
    """Per tool, most called first, what its calls looked like."""
    columns = ["calls", "longest", "streaks", "gentle", "detailed"]
    if result.config.escalate_after is not None:
        columns.append("escalated")
    columns.append("wasted")
    tools = sorted(result.tools.items(), key=lambda item: (-item[1].calls, item[0]))
    return ["tool", *columns], [[name, *(getattr(t, c) for c in columns)] for name, t in tools]


def detector_rows(result: Audit) -> Rows:
    """Per detector in use, its reminders, escalations and conversations."""
    header = ["detector", "reminders", "escalations", "conversations"]
    return header, [
        [name, slot["reminders"], slot["escalations"], slot["conversations"]]
        for name, slot in result.detectors.items()
    ]


def wasted_line(result: Audit) -> str:
    """The wasted calls, the conversations they were in, and the tokens spent on them."""
    wasted_in = sum(found.wasted > 0 for found in result.flagged)
    return (
        f"wasted calls: {result.wasted:,} in {plural(wasted_in, 'conversation')} · "
        f"tokens spent on them: {_tokens(result)}"
    )


def _names(result: Audit) -> list[str]:
    """The columns naming a conversation besides its index: its id, or a thread's checkpoint."""
    return ["thread", "checkpoint"] if result.threads else ["id"]


def _named(result: Audit, found: Finding | ConversationAudit) -> list[object]:
    if result.threads:
        return [found.id or "—", found.checkpoint or "—"]
    return [found.id or "—"]


def top_rows(result: Audit, top: int) -> Rows:
    """The `top` conversations with the most wasted calls."""
    header = ["conversation", *_names(result), "calls", "reminders", "wasted", "tokens"]
    return header, [
        [c.index, *_named(result, c), c.calls, c.reminders, c.wasted, _count(c.tokens)]
        for c in result.top(top)
    ]


def finding_rows(result: Audit) -> Rows:
    """Every finding, in input order: one row a turn, its reasons' values side by side.

    When the conversations hold reminders the guard sent, a `sent` column marks their turns.
    """
    sent = any(f.sent for f in result.findings)
    header = ["conversation", *_names(result), "message", "tool", "detector", "count"]
    header += ["level", *(["sent"] if sent else []), "arguments"]
    rows: list[list[object]] = []
    for f in result.findings:
        said = [(r.tool, r.detector, r.count, r.level, r.arguments) for r in f.reasons]
        *columns, arguments = [" · ".join(map(str, column)) for column in zip(*said, strict=True)]
        marked = ["yes" if f.sent else "—"] if sent else []
        rows.append([f.conversation, *_named(result, f), f.position, *columns, *marked, arguments])
    return header, rows


def notes(result: Audit) -> list[str]:
    """What excluding each bookkeeping tool would reveal, one line each."""
    return [
        f"note: excluding {r.tool} would reveal {plural(r.findings, 'reminder')} in "
        f"{plural(r.conversations, 'conversation')} (--exclude {r.tool})"
        for r in result.revealed
    ]


NO_FINDINGS = "no findings: the guard would not have stepped in."
_FINDINGS = "findings: the reminders the guard would have sent"
_SENT = "findings: the reminders the guard sent (sent: yes) or would have sent"


def findings_title(result: Audit) -> str:
    """The heading of the findings: it says sent when the conversations hold some."""
    return _SENT if any(f.sent for f in result.findings) else _FINDINGS


def top_title(count: int) -> str:
    """The heading of the list of the `count` costliest conversations."""
    return f"top {plural(count, 'conversation')} by wasted calls"


def format_audit(result: Audit, top: int = 10) -> str:
    """The audit as text: per tool, per detector, the costliest conversations, every finding.

    Example:
        >>> print(format_audit(Audit(ReminderConfig(), conversations=1)))
        1 conversation · 0 tool calls · thresholds 3, 5, 8
        tool  calls  longest  streaks  gentle  detailed  wasted
        <BLANKLINE>
        no findings: the guard would not have stepped in.
    """
    lines = [headline(result), *_table(*tool_rows(result))]
    if result.skipped:
        lines += ["", *(f"skipped: {problem}" for problem in result.problems)]
    if not result.flagged:
        lines += ["", NO_FINDINGS, *notes(result)]
        return "\n".join(lines)
    lines += ["", *_table(*detector_rows(result)), "", wasted_line(result), *notes(result)]
    header, rows = top_rows(result, top)
    lines += ["", top_title(len(rows)), *_table(header, rows)]
    lines += ["", findings_title(result), *_table(*finding_rows(result))]
    return "\n".join(lines)


def _count(number: int | None) -> str:
    return "—" if number is None else f"{number:,}"


def _tokens(result: Audit) -> str:
    if result.tokens is None:
        return "not recorded in these logs"
    return f"{result.tokens:,} of {result.tokens_recorded:,} recorded"
