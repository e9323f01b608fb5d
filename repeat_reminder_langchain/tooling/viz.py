"""Pictures of a conversation: the transcript as an HTML table, and a timeline of its calls.

`transcript_html` needs nothing more than the package; `plot_timeline` needs matplotlib (the
`plot` extra), imported only when called. The audit's HTML report draws its timelines itself
(`_report.timeline_svg`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from .._config import ReminderConfig
from .._install import install_hint
from .._moved import moved as _moved
from .._policy import ToolPolicy
from ._tables import plural
from .transcript import Step, _transcript_rows, steps

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "plot_timeline",
    "transcript_html",
]

_ROW_STYLE = {
    "user": "background:#eef5ff",
    "assistant": "",
    "tool": "color:#555",
    "system": "color:#555;font-style:italic",
}
_REMINDER_STYLE = {
    "gentle": "background:#fff4d6",
    "detailed": "background:#ffe0dc",
    "escalated": "background:#ead7f3",
}
_LABELS = {
    "gentle": "gentle reminder",
    "detailed": "detailed reminder",
    "escalated": "loop stopped",
}
_REMINDER_COLOUR = {"gentle": "#e6a100", "detailed": "#d1342f", "escalated": "#6a1b9a"}


def transcript_html(messages: Sequence[BaseMessage]) -> str:
    """The conversation as an HTML table, one message a row, reminders highlighted.

    In a notebook: `IPython.display.HTML(transcript_html(messages))`.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> table = transcript_html([HumanMessage("hi <there>")])
        >>> ">hi &lt;there&gt;</td>" in table
        True
    """
    cell = "padding:2px 8px;vertical-align:top"
    lines = ['<table style="border-collapse:collapse;text-align:left">']
    lines.append("<tr>" + "".join(f'<th style="{cell}">{h}</th>' for h in ("#", "who", "what")))
    for row in _transcript_rows(messages):
        if row.level is not None:
            style = _REMINDER_STYLE[row.level]
            who = f"<b>reminder</b> ({row.level}, {html.escape(row.summary or '')})"
        else:
            style, who = _ROW_STYLE[row.role], row.role
        lines.append(
            f'<tr style="{style}"><td style="{cell}">{row.number}</td>'
            f'<td style="{cell}">{who}</td>'
            f'<td style="{cell};white-space:pre-wrap">{html.escape(row.text)}</td></tr>'
        )
    lines.append("</table>")
    return "\n".join(lines)


def plot_timeline(
    runs: Mapping[str, Sequence[BaseMessage]],
    config: ReminderConfig | None = None,
    path: str | Path | None = None,
    policies: Mapping[str, ToolPolicy] | None = None,
) -> Figure:
    """Plot each run's tool calls side by side: one row per call, its run length, its reminder.

    Args:
        runs: Conversations by title, e.g. `{"without the guard": a, "with the guard": b}`.
        config: Thresholds and tracked tools to recount the runs with (defaults when None).
        path: Where to save the figure as an image, if anywhere.
        policies: The policies tools declared (a guard's `tool_policies`), if any.

    Returns:
        The matplotlib figure.
    """
    config = config or ReminderConfig()
    timelines = {title: steps(messages, config, policies) for title, messages in runs.items()}
    return _plot_steps(timelines, config.thresholds, path)


def _plot_steps(
    timelines: Mapping[str, Sequence[Step]],
    thresholds: Sequence[int],
    path: str | Path | None = None,
) -> Figure:
    """Plot timelines of calls side by side (`plot_timeline` without the counting).

    Args:
        timelines: Each run's steps by title (see `transcript.steps`).
        thresholds: Where to draw the threshold lines.
        path: Where to save the figure as an image, if anywhere.

    Returns:
        The matplotlib figure.
    """
    try:
        from matplotlib import pyplot
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        raise ImportError(f"plotting a timeline needs matplotlib: {install_hint('plot')}") from None

    rows = max((len(found) for found in timelines.values()), default=0)
    figure, axes = pyplot.subplots(
        1, len(timelines), figsize=(5.2 * len(timelines), 1.2 + 0.32 * rows), squeeze=False
    )
    tools = sorted({step.tool for found in timelines.values() for step in found})
    palette = pyplot.get_cmap("tab10")
    colours = {tool: palette(index % 10) for index, tool in enumerate(tools)}
    counts = [step.count or 0 for found in timelines.values() for step in found]
    width = max([*thresholds, *counts]) + 3
    levels = {step.reminder for found in timelines.values() for step in found}
    for axis, (title, found) in zip(axes[0], timelines.items(), strict=True):
        for row, step in enumerate(found):
            length = step.count or 0
            axis.barh(row, length, color=colours[step.tool], height=0.7)
            label_at = length + (0.45 if step.reminder else 0.15)
            axis.text(label_at, row, step.tool, va="center", fontsize=8)
            if step.reminder is not None:
                colour = _REMINDER_COLOUR[step.reminder]
                axis.plot(length, row, marker="D", color=colour, markersize=8, zorder=3)
        for threshold in thresholds:
            axis.axvline(threshold, color="#999", linestyle=":", linewidth=1)
        axis.set_title(f"{title}: {plural(len(found), 'call')}", fontsize=10)
        axis.set_ylim(max(rows, 1) - 0.5, -0.5)
        axis.set_xlim(0, width)
        axis.set_yticks(range(len(found)), [str(step.number) for step in found], fontsize=7)
        axis.set_ylabel("call")
        axis.set_xlabel("identical calls in a row")
    handles: list[Any] = [Patch(color=colours[tool], label=tool) for tool in tools]
    handles += [
        Line2D([], [], color=colour, marker="D", linestyle="", label=_LABELS.get(level, level))
        for level, colour in _REMINDER_COLOUR.items()
        if level != "escalated" or level in levels
    ]
    # A narrow figure (one run) gets a legend of several rows rather than one cut off.
    columns = min(len(handles), 3 * len(timelines)) or 1
    lines = -(-len(handles) // columns)
    figure.legend(handles=handles, loc="lower center", ncol=columns, frameon=False)
    figure.tight_layout(rect=(0, min(0.06 * lines, 0.4), 1, 1))
    if path is not None:
        figure.savefig(path, dpi=120)
    return figure


# The names of 0.2.0's module that it no longer exports, each with its warning (`_moved`).
__getattr__ = _moved(__name__)
