"""The audit as one self-contained HTML page: no network, styles and images inline.

The page holds the audit's tables and, for each flagged conversation it kept (most wasted
calls first), its timeline — the plot the notebooks draw, as an inline PNG, which needs
matplotlib (the `notebooks` extra; without it the page says so and shows the tables) — and
its calls, the loop's highlighted.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Sequence

from .audit import Audit, ConversationAudit, TimelineCall, format_audit
from .transcript import Step

__all__ = ["SHOWN", "report_html"]

SHOWN = 50
"""How many flagged conversations the page draws, most wasted calls first."""

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px;margin:24px 0 6px}
table{border-collapse:collapse;margin:8px 0}
th,td{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.loop{background:#fff4d6}tr.gentle{background:#ffe9b0}tr.detailed{background:#ffd3cc}
tr.escalated{background:#e6d3f0}
code{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
pre{background:#f6f6f6;padding:8px;overflow:auto}
img{max-width:100%;border:1px solid #eee}
.note{color:#555}
"""


def _cell(value: object) -> str:
    if isinstance(value, int):
        return f'<td class="n">{value:,}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _table(
    header: Sequence[str], rows: Iterable[Sequence[object]], classes: Sequence[str] = ()
) -> str:
    lines = ["<table>", "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    for number, row in enumerate(rows):
        css = classes[number] if number < len(classes) else ""
        attribute = f' class="{css}"' if css else ""
        lines.append(f"<tr{attribute}>" + "".join(_cell(cell) for cell in row) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _timeline(audited: ConversationAudit, calls: Sequence[TimelineCall], result: Audit) -> str:
    """The conversation's timeline as an inline PNG, or a note saying why there is none."""
    try:
        from matplotlib import pyplot
    except ImportError:
        return (
            '<p class="note">(timelines need matplotlib: '
            'pip install "repeat-reminder-langchain[notebooks]")</p>'
        )
    from .viz import plot_steps

    level = {"gentle", "detailed", "escalated"}
    found = [
        Step(call.number, call.tool, call.streak, call.level if call.level in level else None)
        for call in calls
    ]
    title = f"conversation {audited.index}"
    figure = plot_steps({title: found}, result.config.thresholds)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    pyplot.close(figure)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="timeline of {html.escape(title)}" src="data:image/png;base64,{data}">'


def _conversation(audited: ConversationAudit, calls: Sequence[TimelineCall], result: Audit) -> str:
    name = f"conversation {audited.index}" + (f" · id {audited.id}" if audited.id else "")
    tokens = "not recorded" if audited.tokens is None else f"{audited.tokens:,}"
    parts = [
        f'<h3 id="c{audited.index}">{html.escape(name)}</h3>',
        f'<p class="note">{html.escape(audited.source)} · {audited.calls:,} calls · '
        f"{audited.reminders:,} reminders · {audited.wasted:,} wasted calls · "
        f"tokens on them: {tokens}</p>",
        _timeline(audited, calls, result),
    ]
    rows, classes = [], []
    for call in calls:
        rows.append(
            [call.number, call.position, call.tool, call.counts or "untracked",
             f"{call.level} ({call.detector})" if call.level else "", call.arguments, call.result]
        )  # fmt: skip
        looping = (
            call.wasted
            or (call.streak or 0) > 1
            or any(
                part.rsplit(" ", 1)[-1] not in ("0", "1")
                for part in call.counts.split(" · ")
                if part
            )
        )
        classes.append(call.level or ("loop" if looping else ""))
    header = ["call", "message", "tool", "counts", "finding", "arguments", "result"]
    parts.append(_table(header, rows, classes))
    return "\n".join(parts)


def report_html(result: Audit) -> str:
    """The audit as a self-contained HTML page."""
    text = format_audit(result, top=10)
    summary, _, _ = text.partition("\n")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>repeat-reminder audit</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Repeat-reminder audit</h1>",
        f"<p>{html.escape(summary)}</p>",
        "<h2>Summary</h2>",
        f"<pre>{html.escape(text)}</pre>",
    ]
    if result.timelines:
        parts.append("<h2>Flagged conversations</h2>")
        parts.append(
            '<p class="note">Highlighted: calls in a loop; the call that drew a finding is '
            "coloured by its level. counts: what each detector counted for the call.</p>"
        )
        for audited, calls in result.timelines:
            parts.append(_conversation(audited, calls, result))
        left = len(result.flagged) - len(result.timelines)
        if left > 0:
            parts.append(f'<p class="note">{left:,} more flagged conversations not drawn.</p>')
    parts.append("</body></html>")
    return "\n".join(parts)
