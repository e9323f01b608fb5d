"""The audit as one self-contained HTML page: no network, no plotting library, styles inline.

The page holds the audit's tables and, for each flagged conversation it kept (most wasted
calls first), its timeline — each call's run of identical calls in call order, the thresholds,
the reminders and stopped loops, drawn here as inline SVG — and its calls, the loop's
highlighted.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence

from ._findings import Audit, ConversationAudit, TimelineCall
from ._tables import (
    NO_FINDINGS,
    Rows,
    detector_rows,
    finding_rows,
    findings_title,
    headline,
    notes,
    plural,
    tool_rows,
    top_rows,
    top_title,
    wasted_line,
)

__all__ = ["SHOWN", "report_html", "timeline_svg"]

SHOWN = 50
"""How many flagged conversations the page draws, most wasted calls first."""

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px;margin:24px 0 6px}
table{border-collapse:collapse;margin:8px 0 16px}
th,td{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #eee}
th{border-bottom:1px solid #bbb}th.n,td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.loop{background:#fff4d6}tr.gentle{background:#ffe9b0}tr.detailed{background:#ffd3cc}
tr.escalated{background:#e6d3f0}
caption{text-align:left;font-weight:600;padding:4px 0}
code{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.note{color:#555}
figure{margin:8px 0 12px}
.timeline{overflow-x:auto}
.timeline svg{display:block}
svg text{font:11px system-ui,sans-serif;fill:#444}
figcaption{font-size:12px;color:#444;display:flex;flex-wrap:wrap;gap:4px 14px;margin-top:4px}
figcaption span{white-space:nowrap}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
"""

# matplotlib's tab10, so that the report's timelines and the notebooks' look alike.
_TOOL_COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
_LEVEL_COLOURS = {"gentle": "#e6a100", "detailed": "#d1342f", "escalated": "#6a1b9a"}
_LEVEL_LABELS = {
    "gentle": "gentle reminder",
    "detailed": "detailed reminder",
    "escalated": "loop stopped",
}

# The timeline's geometry, in pixels: each call gets a slot between these widths, as wide as
# fits a 960-pixel plot (a long conversation scrolls sideways rather than losing its calls).
_SLOT_WIDEST, _SLOT_NARROWEST, _PLOT_WIDTH = 30, 4, 960
_PLOT_HEIGHT, _LEFT, _RIGHT, _TOP, _BOTTOM = 150, 52, 24, 14, 36


_RIGHT_ALIGNED = ' class="n"'


def _cell(value: object, link: str | None = None) -> str:
    if isinstance(value, int):
        text = html.escape(f"{value:,}")
        if link is not None:
            text = f'<a href="#{link}">{text}</a>'
        return f"<td{_RIGHT_ALIGNED}>{text}</td>"
    text = str(value)
    return f"<td{_RIGHT_ALIGNED if _number(text) else ''}>{html.escape(text)}</td>"


def _table(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    classes: Sequence[str] = (),
    caption: str = "",
    links: frozenset[int] = frozenset(),
) -> str:
    """An HTML table; a whole number in the first column is a link when its anchor is drawn."""
    rows = [list(row) for row in rows]
    numeric = [bool(rows) and all(_number(row[i]) for row in rows) for i in range(len(header))]
    lines = ["<table>"]
    if caption:
        lines.append(f"<caption>{html.escape(caption)}</caption>")
    heads = (
        f"<th{_RIGHT_ALIGNED if right else ''}>{html.escape(name)}</th>"
        for name, right in zip(header, numeric, strict=True)
    )
    lines.append("<tr>" + "".join(heads) + "</tr>")
    for number, row in enumerate(rows):
        css = classes[number] if number < len(classes) else ""
        attribute = f' class="{css}"' if css else ""
        first = row[0] if isinstance(row[0], int) and row[0] in links else None
        cells = [_cell(row[0], None if first is None else f"c{first}")]
        cells += [_cell(cell) for cell in row[1:]]
        lines.append(f"<tr{attribute}>" + "".join(cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _number(value: object) -> bool:
    return isinstance(value, int) or str(value) == "—" or str(value).replace(",", "").isdigit()


def _summary(result: Audit, top: int) -> list[str]:
    """The audit's tables and lines, as `format_audit` has them in text."""
    drawn = frozenset(audited.index for audited, _ in result.timelines)
    parts = ["<h2>Summary</h2>", _rows(tool_rows(result), "Per tool")]
    if result.skipped:
        parts.append("<p>Skipped:</p><ul>")
        parts += [f"<li><code>{html.escape(problem)}</code></li>" for problem in result.problems]
        parts.append("</ul>")
    lines = notes(result)
    if not result.flagged:
        parts += [f"<p>{html.escape(line)}</p>" for line in [NO_FINDINGS, *lines]]
        return parts
    parts.append(_rows(detector_rows(result), "Per detector"))
    parts += [f"<p>{html.escape(line)}</p>" for line in [wasted_line(result), *lines]]
    costliest = top_rows(result, top)
    parts.append(_rows(costliest, top_title(len(costliest[1])).capitalize(), drawn))
    parts.append(_rows(finding_rows(result), findings_title(result).capitalize(), drawn))
    return parts


def _rows(table: Rows, caption: str, links: frozenset[int] = frozenset()) -> str:
    header, rows = table
    return _table(header, rows, caption=caption, links=links)


def timeline_svg(
    calls: Sequence[TimelineCall],
    thresholds: Sequence[int],
    title: str = "timeline",
    key: str = "timeline",
) -> str:
    """A conversation's calls as an SVG chart: each call's run length, in call order.

    One bar a call, as tall as the run of identical calls it reached and coloured by its tool
    (an untracked call is a short pale mark); the thresholds are dotted lines; a diamond on a
    bar is a reminder (by its level's colour), a square a stopped loop. Each bar has a tooltip.

    Args:
        calls: The conversation's calls (`Audit.timelines`).
        thresholds: Where to draw the threshold lines.
        title: What the chart is called, for screen readers.
        key: What makes the ids of the chart's title and description unique in the page.

    Returns:
        The `<figure>`: the chart and its legend.
    """
    count = len(calls)
    slot = max(_SLOT_NARROWEST, min(_SLOT_WIDEST, _PLOT_WIDTH // max(count, 1)))
    width = _LEFT + slot * max(count, 1) + _RIGHT
    height = _TOP + _PLOT_HEIGHT + _BOTTOM
    ceiling = max([*thresholds, *(call.streak or 0 for call in calls)]) + 1
    tools = sorted({call.tool for call in calls})
    colours = {tool: _TOOL_COLOURS[index % len(_TOOL_COLOURS)] for index, tool in enumerate(tools)}

    def y(value: float) -> float:
        return _TOP + _PLOT_HEIGHT - value * _PLOT_HEIGHT / ceiling

    right = _LEFT + slot * max(count, 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-labelledby="{key}-title {key}-desc">',
        f'<title id="{key}-title">{html.escape(title)}</title>',
        f'<desc id="{key}-desc">{html.escape(_describe(calls, thresholds))}</desc>',
        *_axes(count, slot, ceiling, thresholds, y),
    ]
    bar = max(1, slot - max(1, slot // 4))
    for index, call in enumerate(calls):
        left = _LEFT + index * slot + (slot - bar) / 2
        parts.append(_bar(call, left, bar, colours[call.tool], y))
    for index, call in enumerate(calls):
        if call.level is not None:
            centre = _LEFT + index * slot + slot / 2
            parts.append(_marker(call, centre, y(call.streak or 0)))
    parts.append(f'<line x1="{_LEFT}" x2="{right}" y1="{y(0):g}" y2="{y(0):g}" stroke="#444"/>')
    parts.append("</svg>")
    return "\n".join(
        [
            "<figure>",
            '<div class="timeline">',
            *parts,
            "</div>",
            _legend(calls, colours, thresholds),
            "</figure>",
        ]
    )


def _axes(
    count: int, slot: int, ceiling: int, thresholds: Sequence[int], y: Callable[[float], float]
) -> list[str]:
    """The axes, their labels and the threshold lines."""
    right = _LEFT + slot * max(count, 1)
    bottom = y(0)
    parts = [f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{bottom:g}" stroke="#444"/>']
    for value in thresholds:
        parts.append(
            f'<line x1="{_LEFT}" x2="{right}" y1="{y(value):g}" y2="{y(value):g}" '
            'stroke="#888" stroke-dasharray="2 3"/>'
        )
    # Labelled: 0, the top of the scale (the longest run, when longer than every threshold)
    # and each threshold, leaving out a label that would overlap one already there.
    placed: list[float] = []
    for value in dict.fromkeys([0, ceiling - 1, *thresholds]):
        if all(abs(y(value) - at) >= 11 for at in placed):
            placed.append(y(value))
            parts.append(
                f'<text x="{_LEFT - 6}" y="{y(value) + 4:g}" text-anchor="end">{value}</text>'
            )
    step = next(s for s in _steps() if s * slot >= 28)
    # Call 1 is labelled too; a multiple of the spacing that would crowd it is not.
    numbers = [1] if count else []
    numbers += [n for n in range(step, count + 1, step) if n > 1 and (n - 1) * slot >= 24]
    for number in numbers:
        centre = _LEFT + (number - 0.5) * slot
        parts.append(
            f'<line x1="{centre:g}" x2="{centre:g}" y1="{bottom:g}" y2="{bottom + 4:g}" '
            'stroke="#444"/>'
        )
        parts.append(
            f'<text x="{centre:g}" y="{bottom + 16:g}" text-anchor="middle">{number}</text>'
        )
    middle = _TOP + _PLOT_HEIGHT / 2
    parts += [
        f'<text x="{right}" y="{bottom + 32:g}" text-anchor="end">call →</text>',
        f'<text x="14" y="{middle:g}" text-anchor="middle" '
        f'transform="rotate(-90 14 {middle:g})">identical calls in a row</text>',
    ]
    return parts


def _steps() -> Iterable[int]:
    """1, 2, 5, 10, 20, 50, ...: the spacings the call axis may label at."""
    scale = 1
    while True:
        yield from (scale, 2 * scale, 5 * scale)
        scale *= 10


def _bar(
    call: TimelineCall, left: float, width: int, colour: str, y: Callable[[float], float]
) -> str:
    tip = html.escape(_tip(call))
    if call.streak is None:  # untracked: in the order, with no run to show
        top, opacity = y(0) - 4, ' opacity="0.5"'
    else:
        top, opacity = y(call.streak), ""
    return (
        f'<rect x="{left:g}" y="{top:g}" width="{width}" height="{y(0) - top:g}" '
        f'fill="{colour}"{opacity}><title>{tip}</title></rect>'
    )


def _marker(call: TimelineCall, x: float, y: float) -> str:
    paint = f'fill="{_LEVEL_COLOURS[call.level or "gentle"]}" stroke="#fff" stroke-width="1.5"'
    tip = f"<title>{html.escape(_tip(call))}</title>"
    if call.level == "escalated":
        return f'<rect x="{x - 5:g}" y="{y - 5:g}" width="10" height="10" {paint}>{tip}</rect>'
    points = f"{x:g},{y - 6:g} {x + 6:g},{y:g} {x:g},{y + 6:g} {x - 6:g},{y:g}"
    return f'<polygon points="{points}" {paint}>{tip}</polygon>'


def _tip(call: TimelineCall) -> str:
    run = "untracked" if call.streak is None else f"{call.streak} in a row"
    finding = ""
    if call.level is not None:
        finding = f" · {_LEVEL_LABELS[call.level]} ({call.detector})"
    return f"call {call.number} · {call.tool} · {run}{finding}"


def _describe(calls: Sequence[TimelineCall], thresholds: Sequence[int]) -> str:
    """The chart in words, for screen readers."""
    tracked = [call for call in calls if call.streak is not None]
    longest = max(tracked, key=lambda call: call.streak or 0, default=None)
    parts = [plural(len(calls), "call")]
    if longest is not None:
        parts.append(f"longest run {longest.streak} ({longest.tool}, call {longest.number})")
    parts.append(f"thresholds {', '.join(map(str, thresholds))}")
    found = [f"{call.level} at call {call.number}" for call in calls if call.level]
    parts.append("; ".join(found) if found else "no findings")
    return "Each call's run of identical calls, in call order: " + " · ".join(parts) + "."


def _legend(
    calls: Sequence[TimelineCall], colours: dict[str, str], thresholds: Sequence[int]
) -> str:
    entries = [
        f'<span><i class="swatch" style="background:{colour}"></i>{html.escape(tool)}</span>'
        for tool, colour in colours.items()
    ]
    levels = {call.level for call in calls}
    for level, colour in _LEVEL_COLOURS.items():
        if level in levels:
            shape = "▪" if level == "escalated" else "◆"
            entries.append(
                f'<span><b style="color:{colour}">{shape}</b> {_LEVEL_LABELS[level]}</span>'
            )
    if any(call.streak is None for call in calls):
        entries.append("<span>pale mark: untracked call</span>")
    entries.append(f"<span>┄ thresholds {', '.join(map(str, thresholds))}</span>")
    return "<figcaption>" + "".join(entries) + "</figcaption>"


def _conversation(audited: ConversationAudit, calls: Sequence[TimelineCall], result: Audit) -> str:
    name = f"conversation {audited.index}"
    if audited.checkpoint is not None:
        name += f" · thread {audited.id} · checkpoint {audited.checkpoint}"
    elif audited.id:
        name += f" · id {audited.id}"
    tokens = "not recorded" if audited.tokens is None else f"{audited.tokens:,}"
    parts = [
        f'<h3 id="c{audited.index}">{html.escape(name)}</h3>',
        f'<p class="note">{html.escape(audited.source)} · {plural(audited.calls, "call")} · '
        f"{plural(audited.reminders, 'reminder')} · {plural(audited.wasted, 'wasted call')} · "
        f"tokens on them: {tokens}</p>",
        timeline_svg(
            calls, result.config.thresholds, f"Timeline of {name}", f"timeline-{audited.index}"
        ),
    ]
    rows, classes = [], []
    for call in calls:
        rows.append(
            [call.number, call.position, call.tool, _unbroken(call.counts) or "untracked",
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


def _unbroken(counts: str) -> str:
    """`repeat 4 · stale 2`, wrapped in a narrow column only between two detectors' counts."""
    return " · ".join(part.replace(" ", "\u00a0") for part in counts.split(" · ") if part)


def report_html(result: Audit, top: int = 10) -> str:
    """The audit as a self-contained HTML page, listing the `top` costliest conversations."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>repeat-reminder audit</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Repeat-reminder audit</h1>",
        f"<p>{html.escape(headline(result))}</p>",
        *_summary(result, top),
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
            parts.append(
                f'<p class="note">{plural(left, "more flagged conversation")} not drawn.</p>'
            )
    parts.append("</body></html>")
    return "\n".join(parts)
