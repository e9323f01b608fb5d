"""Pictures: the HTML transcript and the timeline plot, from real demo runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from repeat_reminder_langchain._install import install_hint

# The timeline is drawn with an optional peer (the plot extra): `make test-lowest` runs
# without it and skips this module.
pytest.importorskip("matplotlib")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from repeat_reminder_langchain import ReminderConfig, RepeatToolReminderCallbackHandler
from repeat_reminder_langchain.tooling.demo import run_demo
from repeat_reminder_langchain.tooling.transcript import Step, steps
from repeat_reminder_langchain.tooling.viz import _plot_steps, plot_timeline, transcript_html


@pytest.fixture(scope="module")
def guarded() -> list[object]:
    return run_demo(RepeatToolReminderCallbackHandler())


def test_steps_give_each_call_its_run_and_its_reminder(guarded: list[object]) -> None:
    assert steps(guarded) == [  # type: ignore[arg-type]
        Step(1, "job_status", 1),
        Step(2, "job_status", 2),
        Step(3, "job_status", 3, "gentle"),
        Step(4, "job_status", 4),
        Step(5, "job_status", 5, "detailed"),
        Step(6, "read_log", 1),
    ]


def test_steps_match_each_reminder_to_the_streak_before_it() -> None:
    def turn(n: int, tool: str) -> list[object]:
        call = {"name": tool, "args": {}, "id": f"c{n}"}
        return [
            AIMessage("", tool_calls=[call], id=f"m{n}"),
            ToolMessage("r", tool_call_id=f"c{n}"),
        ]

    def reminder(count: int) -> SystemMessage:
        from repeat_reminder_langchain import Reminder
        from repeat_reminder_langchain._messages import reminder_message

        return reminder_message(Reminder("ls", count, "gentle", "{}"))

    messages = [HumanMessage("go"), *turn(1, "ls"), *turn(2, "ls"), reminder(2), reminder(9)]
    messages += [
        *turn(3, "todo"),
        HumanMessage("again"),
        *turn(4, "ls"),
        *turn(5, "ls"),
        *turn(6, "todo"),
        reminder(2),  # the reminder of the streak before the todo call
    ]
    found = steps(messages, ReminderConfig(thresholds=[2], exclude=["todo"]))  # type: ignore[arg-type]

    assert [(s.tool, s.count, s.reminder) for s in found] == [
        ("ls", 1, None), ("ls", 2, "gentle"), ("todo", None, None),
        ("ls", 1, None), ("ls", 2, "gentle"), ("todo", None, None),
    ]  # fmt: skip


def test_the_html_transcript_marks_reminders_and_escapes_text(guarded: list[object]) -> None:
    table = transcript_html(guarded)  # type: ignore[arg-type]

    assert table.startswith("<table") and table.endswith("</table>")
    assert table.count("<tr") == len(guarded) + 1
    assert "<b>reminder</b> (gentle, job_status × 3)" in table
    assert 'background:#ffe0dc"><td style="padding:2px 8px;vertical-align:top">13</td>' in table
    assert "- tool: job_status\n- consecutive_calls: 5" in table
    assert "&quot;nightly-build-7&quot;" in table
    assert ">system</td>" in transcript_html([SystemMessage("rules")])


def test_the_timeline_plots_runs_side_by_side(guarded: list[object], tmp_path: Path) -> None:
    path = tmp_path / "timeline.png"
    figure = plot_timeline({"without": run_demo(None), "with": guarded}, path=path)  # type: ignore[dict-item]

    assert path.read_bytes().startswith(b"\x89PNG")
    titles = [axis.get_title() for axis in figure.axes]
    assert titles == ["without: 13 calls", "with: 6 calls"]
    markers = [line for line in figure.axes[1].lines if line.get_marker() == "D"]
    assert len(markers) == 2
    assert plot_timeline({"empty": []}).axes[0].get_title() == "empty: 0 calls"
    assert plot_timeline({"one": guarded[:3]}).axes[0].get_title() == "one: 1 call"  # type: ignore[dict-item]


def test_a_timeline_can_show_a_stopped_loop(tmp_path: Path) -> None:
    found = [Step(1, "ls", 1), Step(2, "ls", 2, "gentle"), Step(3, "ls", 3, "escalated")]
    figure = _plot_steps({"stopped": found}, [2], tmp_path / "stopped.png")

    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == ["ls", "gentle reminder", "detailed reminder", "loop stopped"]
    assert "loop stopped" not in [
        t.get_text() for t in _plot_steps({"x": found[:2]}, [2]).legends[0].get_texts()
    ]


def test_the_html_transcript_shows_the_guards_last_word() -> None:
    from repeat_reminder_langchain import RepeatToolReminderCallbackHandler as Handler

    messages = run_demo(Handler(escalate_after=9), heeds=False)
    assert "background:#ead7f3" in transcript_html(messages)


def test_plotting_without_matplotlib_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError) as raised:
        plot_timeline({"run": []})
    assert str(raised.value) == f"plotting a timeline needs matplotlib: {install_hint('plot')}"
