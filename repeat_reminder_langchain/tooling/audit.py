"""Auditing saved conversations: where the guard would have stepped in, and what it would save.

Each conversation is replayed through the guard's own counting (`replay`), with the same
configuration a guard would take, one conversation at a time; only compact findings are kept
(`_findings`). Reading the files is `_logs.LogReader`'s job (`read_logs` here), deriving
settings from them `_suggest`'s (`suggest_settings` here); the words of the text are `_tables`',
the HTML report is `_report`'s.

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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from langchain_core.messages import AIMessage, BaseMessage

from .._canonical import canonicalize, result_text
from .._config import BOOKKEEPING_TOOLS, ReminderConfig
from .._conversation import is_reminder
from .._detectors import DETECTORS
from .._policy import ToolPolicy
from .._reminder import preview
from ..replay import Call, CallTrace, Replayed, replay
from ._findings import (
    Audit,
    ConversationAudit,
    Finding,
    Reason,
    Revealed,
    TimelineCall,
    ToolAudit,
    failing,
    settings,
)
from ._logs import Conversation, LogReader
from ._suggest import Suggester, Sweeper
from ._tables import format_audit

__all__ = [
    "Audit",
    "Auditor",
    "Conversation",
    "ConversationAudit",
    "Finding",
    "Reason",
    "Revealed",
    "TimelineCall",
    "ToolAudit",
    "audit",
    "detectors",
    "exceeds",
    "format_audit",
    "read_logs",
    "settings",
    "suggest_settings",
]

_SHOWN = 100  # characters of arguments or results a finding or a call row keeps
_Kept = tuple[tuple[int, int, int], int, ConversationAudit, list[TimelineCall]]  # rank first


def exceeds(config: ReminderConfig, tool: str, counts: Mapping[str, int]) -> bool:
    """Whether a call is wasted: a detector's count past that detector's first threshold."""
    for detector, count in counts.items():
        if detector == "repeat":
            rules = config.rules(tool)
            first = rules.thresholds[0] if rules is not None else config.thresholds[0]
        else:
            first = config.detector_thresholds(detector)[0]
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
        self._kept: list[_Kept] = []
        self._excluded: dict[str, ReminderConfig] = {}
        self._revealed: dict[str, list[int]] = {}
        # Whether the detectors of failures see any: looked for until one is found.
        self._look = bool(failing(config.detect))

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

    def _call(self, conversation: Conversation, number: int, item: Replayed, walk: _Walk) -> None:
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
        if self._look and trace.failed:
            self.result.failures_seen, self._look = True, False
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
    call: Call,
    trace: CallTrace | None,
    *,
    reason: Reason | None = None,
    wasted: bool = False,
) -> TimelineCall:
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


def read_logs(
    sources: Sequence[str], *, messages_key: str | None = None, id_key: str | None = None
) -> Iterator[Conversation]:
    """The conversations of saved logs, one at a time, read as `repeat-reminder audit` reads them.

    Each is numbered from 0 across every source, in order: what `Auditor.add` and
    `suggest_settings` take.

    Args:
        sources: Files, globs (matched in sorted order), or `-` for standard input, in any
            format the command reads (the guide 'Auditing saved conversations' lists them).
        messages_key: The record field holding the messages (a dotted path for a nested one),
            when a record has several fields that could be it.
        id_key: The record field holding a conversation's id; by default the first of `id`,
            `conversation_id`, `thread_id`, `session_id`, `task_id`, `instance_id` and
            `trajectory_id` that a record has.

    Raises:
        ValueError: A source is missing or cannot be read; the message names the file, the line
            and the column, and why.
    """
    return LogReader(messages_key=messages_key, id_key=id_key).read(sources)


def detectors() -> tuple[str, ...]:
    """Every detector's name, in the order they take precedence (what `--detect all` runs).

    Each is a name `detect=` and `detectors=` take; `ReminderConfig.detector_settings` gives
    its settings.
    """
    return tuple(DETECTORS)


def suggest_settings(
    conversations: Sequence[Conversation], config: ReminderConfig | None = None
) -> ReminderConfig:
    """The settings `repeat-reminder audit --suggest` proposes for these conversations.

    The settings in `config`, with what the conversations call for added, as the command
    writes them with `--write-config`: the bookkeeping tools to exclude, the `error_pattern`,
    the `not_user` pattern, and the detectors that find loops in them (`detect`); a setting
    given in `config` is not proposed again. The guide 'Settings from your own logs'
    explains each suggestion. The conversations are read twice: once to derive the
    settings, once to count what each detector finds with them.
    """
    suggester = Suggester(config)
    for conversation in conversations:
        suggester.add(conversation)
    sweeper = Sweeper(suggester.finish())
    for conversation in conversations:
        sweeper.add(conversation)
    return sweeper.finish().config
