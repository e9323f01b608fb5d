"""The audit as text: the rows and lines that `format_audit` prints and the HTML report shows.

Everything the command line and the report say about an audit is worded here, once.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._config import ReminderConfig
from ._findings import Audit, ConversationAudit, Finding, failing, settings
from ._suggest import AT, SWEEP, Proposal, Suggestion
from .lab import LabRun

__all__ = [
    "NO_FINDINGS",
    "Rows",
    "detector_rows",
    "finding_rows",
    "findings_title",
    "format_audit",
    "format_lab",
    "format_suggestion",
    "headline",
    "notes",
    "plural",
    "tool_rows",
    "top_rows",
    "top_title",
    "wasted_line",
]


def _rules(config: ReminderConfig) -> str:
    """The counting rules in force: the thresholds, and every other rule not at its default."""
    rules = [f"thresholds {', '.join(map(str, config.thresholds))}"]
    if config.profile != "default":
        rules.append(f"profile {config.profile}")
    shown = (
        "detect",
        "include",
        "exclude",
        "repeat_every",
        "progress",
        "ignore_arguments",
        "detectors",
        "error_pattern",
        "escalate_after",
        "exit_behavior",
    )
    dumped = settings(config)
    defaults = settings(ReminderConfig(profile=config.profile))  # what the profile sets, unsaid
    for name in shown:
        value = dumped[name]
        if value == defaults[name]:
            continue
        if name == "detectors":  # each setting given, as its own rule: "stale thresholds 4"
            rules += [
                f"{detector} {setting.replace('_', ' ')} {_listed(given)}"
                for detector, own in value.items()
                for setting, given in own.items()
            ]
            continue
        if isinstance(value, dict):
            text = "; ".join(f"{tool}: {', '.join(keys)}" for tool, keys in value.items())
        else:
            text = _listed(value)
        rules.append(f"{name.replace('_', ' ')} {text}")
    return " · ".join(rules)


def _listed(value: object) -> str:
    """A setting's value as a rule says it: a list's items comma-separated."""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


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
    """The audit's notes, one line each.

    What excluding each bookkeeping tool would reveal; and, once, that the detectors of
    failures in use had none to count.
    """
    lines = [
        f"note: excluding {r.tool} would reveal {plural(r.findings, 'reminder')} in "
        f"{plural(r.conversations, 'conversation')} (--exclude {r.tool})"
        for r in result.revealed
    ]
    blind = failing(result.config.detect)
    if blind and result.calls and not result.failures_seen:
        lines.append(
            f"note: {' and '.join(blind)} counted nothing: no failure can be recognised in these "
            'logs (no result is marked status="error" and none matches --error-pattern)'
        )
    return lines


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
        tool  calls  longest  streaks  gentle  detailed  escalated  wasted
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


def format_suggestion(suggestion: Suggestion) -> str:
    """The settings the logs call for, each with its evidence, as Python and as options.

    Example:
        >>> print(format_suggestion(Suggestion(4, [], ReminderConfig())))
        4 conversations: no setting to suggest; the settings given stand.
    """
    head = plural(suggestion.conversations, "conversation")
    if not suggestion.proposals:
        lines = [f"{head}: no setting to suggest; the settings given stand."]
    else:
        lines = [f"{head}: the settings they call for, and why"]
        for proposal in suggestion.proposals:
            lines += [f"  {_option(proposal.setting, proposal.value)}", *proposal_lines(proposal)]
        lines += ["", *_given(suggestion.config)]
    if suggestion.sweep:
        # With no failure to see, the detectors of failures count nothing: said once, not as 0s.
        blind = [] if suggestion.failures else failing(suggestion.sweep)
        header = ["detector", *(f"at {at}" for at in SWEEP)]
        rows = [
            [name, *(f"{flags:,} in {found:,}" for flags, found in row.values())]
            for name, row in suggestion.sweep.items()
            if name not in blind
        ]
        lines += [
            "",
            "with them, the flags each detector alone would raise at each threshold "
            "(in how many conversations):",
            *_table(header, rows),
        ]
        if blind:
            lines.append(
                f"{' and '.join(blind)}: not counted, no failure can be recognised in these logs "
                '(no result is marked status="error" and no error_pattern fits)'
            )
    return "\n".join(lines)


def _given(config: ReminderConfig) -> list[str]:
    """The settings, as Python and as options."""
    fields = {
        n: getattr(config, n) for n in type(config).model_fields if n in config.model_fields_set
    }
    python = ", ".join(f"{name}={_python(value)}" for name, value in fields.items())
    # Words have no option: a settings file holds them (--write-config).
    options = " ".join(_option(name, value) for name, value in fields.items() if name != "words")
    return ["as Python:", f"  ReminderConfig({python})", "as options:", f"  {options}"]


def proposal_lines(proposal: Proposal) -> list[str]:
    """What the logs show for one proposal: a line for each reason, and where to see it."""
    said = []
    for reason in proposal.reasons:
        if "detector" in reason:
            flagged = (
                f"{reason['detector']} would remind {plural(reason['flags'], 'time')} at "
                f"{AT} in {plural(reason['conversations'], 'conversation')}"
            )
            left = ": left out, it reports without reminding unless asked (remind)"
            said.append(flagged + left if reason.get("reports only") else flagged)
        elif "tool" in reason:
            kind = "all empty" if reason["empty"] else "all the same"
            said.append(
                f"{reason['tool']} stands between two identical calls in "
                f"{plural(reason['hides'], 'conversation')}; its "
                f"{plural(reason['results'], 'result')} are {kind}"
            )
        elif "envelope" in reason:
            tag = reason["envelope"]
            said.append(
                f"{plural(reason['results'], 'result')} start with <{tag}>N</{tag}>, "
                f"{reason['nonzero']:,} with a code other than 0 ({reason['empty']:,} of "
                "those with no output: not counted as failures)"
            )
        elif "prefix" in reason:
            marked = (
                f" ({reason['failed']:,} of them among the {reason['marked']:,} marked "
                "status=error)"
                if reason["marked"]
                else ""
            )
            said.append(
                f"{plural(reason['results'], 'result')} of {plural(reason['tools'], 'tool')} "
                f"start with {reason['prefix']}:{marked}"
            )
        else:
            said.append(
                f"{plural(reason['messages'], 'user-role message')} in "
                f"{plural(reason['conversations'], 'conversation')} start with "
                f"{reason['head']!r}: {reason['fixed']:,} word for word (numbers aside), "
                f"{reason['answered']:,} answered by the model"
            )
    return [*(f"      {line}" for line in said), f"      e.g. {proposal.example}"]


def _python(value: Any) -> str:
    if isinstance(value, Mapping):
        return repr({key: list(items) for key, items in value.items()})
    return repr(list(value) if isinstance(value, tuple) else value)


def _option(name: str, value: Any) -> str:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, Mapping):
        return " ".join(f"{flag} {shlex.quote(k + '=' + ','.join(v))}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        value = ",".join(map(str, value))
    return f"{flag} {shlex.quote(str(value))}"


def format_lab(runs: Sequence[LabRun]) -> str:
    """The lab's runs, per task and condition and in total: what a reminder did to a loop.

    Example:
        >>> print(format_lab([]))
        no runs
    """
    if not runs:
        return "no runs"
    groups: dict[tuple[str, str], list[LabRun]] = {}
    for run in runs:
        groups.setdefault((run.task, run.condition), []).append(run)
    for run in runs:
        groups.setdefault(("total", run.condition), []).append(run)
    header = ["task", "condition", "runs", "model calls", "longest", "broken by", "acceptable"]
    header += ["tokens", "seconds"]
    rows = [
        [
            task,
            condition,
            len(group),
            _mean(r.model_calls for r in group),
            _mean(r.longest for r in group),
            _broken(group),
            f"{sum(r.acceptable for r in group)}/{len(group)}",
            _mean((r.tokens for r in group), 0),
            _mean(r.seconds for r in group),
        ]
        for (task, condition), group in groups.items()
    ]
    return "\n".join(_table(header, rows))


def _mean(values: Iterable[float], digits: int = 1) -> str:
    found = list(values)
    return f"{sum(found) / len(found):,.{digits}f}"


def _broken(group: Sequence[LabRun]) -> str:
    counts: dict[str, int] = {}
    for run in group:
        counts[run.broke or "-"] = counts.get(run.broke or "-", 0) + 1
    return " · ".join(f"{what} {n}" for what, n in counts.items())
