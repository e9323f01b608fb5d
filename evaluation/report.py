"""The evaluation's output: a plain-text report, the same figures as JSON, firings in context."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from repeat_reminder_langchain import canonicalize

from .evaluate import ALONE, FileReport
from .reruns import KINDS, Rerun
from .run import Firing, Replay

__all__ = ["as_json", "context", "text"]


def _tools(counts: Counter[str]) -> str:
    return ", ".join(f"{tool} {n}" for tool, n in counts.most_common()) or "-"


def _series(reruns: Sequence[Rerun]) -> int:
    """How many distinct calls (conversation, tool, arguments) the re-runs are of."""
    return len({(r.conversation, r.tool, canonicalize(r.args)) for r in reruns})


def text(report: FileReport) -> str:
    """The report of one file, as the evaluation prints it."""
    settings = report.settings
    lines = [
        f"== {os.path.basename(report.path)}: {len(report.conversations)} conversations, "
        f"{report.calls:,} tool calls ({report.tracked:,} tracked)",
        f"   stale_thresholds={settings.stale_thresholds} "
        f"same_error_thresholds={settings.same_error_thresholds} "
        f"error_pattern={settings.error_pattern!r} exclude={settings.exclude}"
        + (f" not_user={settings.not_user!r}" if settings.not_user else ""),
        "",
        f"   {'detector':<16}{'firings':>8}{'convs':>7}  tools",
    ]
    for name, outcome in report.outcomes.items():
        label = f"{name} (3,5,8)" if name == "repeat" else name
        tools = _tools(outcome.tools)
        if name == "all":
            by = outcome.detectors
            tools += "  [" + ", ".join(f"{d} {by[d]}" for d in ALONE) + "]"
        lines.append(f"   {label:<16}{len(outcome.firings):>8}{outcome.conversations:>7}  {tools}")
    lines += ["", "   sweep (one detector alone; firings/conversations at each threshold)"]
    for name, rows in report.sweeps.items():
        cells = "".join(f"{f'{row.firings}/{row.conversations}':>10}" for row in rows)
        heads = "".join(f"{'at ' + str(row.threshold):>10}" for row in rows)
        if name == next(iter(report.sweeps)):
            lines.append(f"   {'':<16}{heads}")
        lines.append(f"   {name:<16}{cells}")
    lines += [
        "",
        "   re-runs (the same call again; stale counts identical results in a row)",
        f"   {'kind':<50}{'re-runs':>8}{'series':>8}{'stale fired':>12}",
    ]
    for kind, label in KINDS.items():
        found = [r for r in report.reruns if r.kind == kind]
        fired = sum(r.fired for r in found)
        lines.append(f"   {label:<50}{len(found):>8}{_series(found):>8}{fired:>12}")
    changed = [r for r in report.reruns if r.changed]
    wrong = sum(r.stale != 1 or r.fired for r in changed)
    lines.append(
        f"   check: {len(changed)} re-runs with a changed output, {wrong} with a stale count "
        "other than 1 or a stale reminder (must be 0)"
    )
    return "\n".join(lines)


def as_json(report: FileReport) -> dict[str, Any]:
    """The figures of one file as plain data (for `--json`)."""
    settings = report.settings
    by_kind: dict[str, Any] = {}
    for kind in KINDS:
        found = [r for r in report.reruns if r.kind == kind]
        by_kind[kind] = {
            "reruns": len(found),
            "series": _series(found),
            "stale_fired": sum(r.fired for r in found),
            "stale_counts": dict(sorted(Counter(r.stale for r in found).items())),
        }
    return {
        "file": report.path,
        "settings": {
            "stale_thresholds": list(settings.stale_thresholds),
            "same_error_thresholds": list(settings.same_error_thresholds),
            "error_pattern": settings.error_pattern,
            "exclude": list(settings.exclude),
            "not_user": settings.not_user,
        },
        "conversations": len(report.conversations),
        "calls": report.calls,
        "tracked": report.tracked,
        "detectors": {
            name: {
                "firings": len(outcome.firings),
                "conversations": outcome.conversations,
                "tools": dict(outcome.tools.most_common()),
                "by_detector": dict(outcome.detectors),
                "at": [
                    {"conversation": f.conversation, "call": f.call, "count": f.count}
                    for f in outcome.firings
                ],
            }
            for name, outcome in report.outcomes.items()
        },
        "sweeps": {
            name: {str(row.threshold): [row.firings, row.conversations] for row in rows}
            for name, rows in report.sweeps.items()
        },
        "reruns": by_kind,
    }


def _short(value: object, width: int) -> str:
    flat = " ".join(str(value).split()) if isinstance(value, str) else canonicalize(value)
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def context(firing: Firing, replayed: Replay, width: int = 160) -> str:
    """A firing with what led to it, for reading by hand.

    For `stale`, every earlier run of the same call back to the start of its run of identical
    results, with the calls between them; for `same_error`, the run of failures; for `repeat`,
    the run of identical calls. Lines marked `>>` are the counted calls, with their result.
    """
    calls = replayed.calls
    target = calls[firing.call].call
    key = (target.tool, canonicalize(target.args))
    if firing.detector == "stale":
        same = [
            i
            for i in range(firing.call + 1)
            if (calls[i].call.tool, canonicalize(calls[i].call.args)) == key
        ]
        counted = set(same[-firing.count :])
    else:
        tracked = [i for i in range(firing.call + 1) if calls[i].trace is not None]
        counted = set(tracked[-firing.count :])
    start = min(counted)
    where = f"conversation {firing.conversation}" + (f" ({firing.id})" if firing.id else "")
    lines = [f"-- {where}, call {firing.call}: {firing.detector} × {firing.count}"]
    for i in range(max(0, start - 1), min(len(calls), firing.call + 2)):
        item = calls[i]
        mark = ">>" if i in counted else "  "
        lines.append(f"{mark} {i:>4} {item.call.tool} {_short(item.call.args, width)}")
        if i in counted or i == firing.call + 1:
            lines.append(f"{'':>8}→ {_short(item.call.result, width)}")
    return "\n".join(lines)
