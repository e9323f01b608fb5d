"""The demo command and the transcript helpers it prints with."""

from __future__ import annotations

import runpy
import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from repeat_reminder_langchain import ReminderConfig, RepeatToolReminderCallbackHandler
from repeat_reminder_langchain.__main__ import main
from repeat_reminder_langchain.demo import PollingModel, build_agent, run_demo
from repeat_reminder_langchain.transcript import (
    format_transcript,
    replay,
    summarize,
    transcript_rows,
)

from .helpers import assert_adjacent, reminders


def test_the_demo_model_changes_course_after_the_detailed_reminder() -> None:
    messages = run_demo(RepeatToolReminderCallbackHandler())

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "job_status", 3), ("detailed", "job_status", 5)]
    calls = [c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls == ["job_status"] * 5 + ["read_log"]
    assert "already exists" in messages[-1].content


def test_without_the_guard_the_demo_model_polls_until_its_patience_runs_out() -> None:
    messages = build_agent(PollingModel(patience=4), None).invoke(
        {"messages": [HumanMessage("why?")]}
    )["messages"]

    calls = [c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls == ["job_status"] * 4 + ["read_log"]


def test_demo_prints_the_transcript_and_both_summaries(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out

    assert "Guard: thresholds 3, 5, 8; reminders sent as system messages." in out
    assert "  1  user       Why did the CI job nightly-build-7 fail?" in out
    assert '→ job_status(job_id="nightly-build-7")' in out
    assert "REMINDER   [detailed · job_status × 5] Repeated tool call detected." in out
    assert "With the guard:  6 tool calls · 2 reminders (1 gentle, 1 detailed) · longest" in out
    assert "Without it:      13 tool calls · 0 reminders (0 gentle, 0 detailed) · longest" in out
    assert "Guard stats:     6 calls counted" in out
    assert "recovery rate 50%" in out
    assert out.count("longest streak: job_status × ") == 2


def test_demo_options_change_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--thresholds", "2,4", "--message-type", "human"]) == 0
    out = capsys.readouterr().out

    assert "thresholds 2, 4; reminders sent as human messages" in out
    assert "[gentle · job_status × 2] You have called" in out
    assert "With the guard:  5 tool calls · 2 reminders (1 gentle, 1 detailed)" in out


def test_bad_demo_options_say_what_is_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--thresholds", "1,3"]) == 2
    assert capsys.readouterr().err == (
        "error: thresholds: invalid threshold 1 — every threshold must be an integer >= 2\n"
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--thresholds", "three"])
    assert exit_info.value.code == 2
    assert "expected whole numbers separated by commas" in capsys.readouterr().err


def test_python_m_runs_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["repeat_reminder_langchain", "demo", "--thresholds", "2"])
    monkeypatch.delitem(sys.modules, "repeat_reminder_langchain.__main__", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("repeat_reminder_langchain", run_name="__main__")
    assert exit_info.value.code == 0
    assert "[gentle · job_status × 2]" in capsys.readouterr().out


def test_rows_cover_every_kind_of_message() -> None:
    call = {"name": "ls", "args": {"dir": "."}, "id": "1"}
    odd = {"name": "raw", "args": {"args": [1]}, "id": "2"}
    messages = [
        SystemMessage("be brief"),
        HumanMessage([{"type": "text", "text": "list"}, "files"]),
        AIMessage("sure", tool_calls=[call, odd]),
        ToolMessage("a b", tool_call_id="1"),
        ToolMessage({"k": 1}, tool_call_id="2", name="raw"),  # type: ignore[arg-type]
        AIMessage(""),
    ]
    rows = transcript_rows(messages)

    assert [(r.role, r.text) for r in rows] == [
        ("system", "be brief"),
        ("user", "list files"),
        ("assistant", 'sure → ls(dir=".") → raw(args=[1])'),
        ("tool", "tool → a b"),
        ("tool", "raw → {'k': 1}"),
        ("assistant", ""),
    ]
    assert format_transcript(messages, width=20).splitlines()[2] == "  3  assistant  sur…"


def test_summary_counts_streaks_as_the_guard_does() -> None:
    def turn(n: int, name: str = "grep", args: object = None) -> list[object]:
        call = {"name": name, "args": args or {"q": 1}, "id": f"c{n}"}
        return [
            AIMessage("", tool_calls=[call], id=f"m{n}"),
            ToolMessage("r", tool_call_id=f"c{n}"),
        ]

    messages = [HumanMessage("go"), *turn(1), *turn(2), *turn(3, "todo"), *turn(4)]
    messages += [HumanMessage("again"), *turn(5), *turn(6, args={"q": 2})]
    config = ReminderConfig(exclude=["todo"])

    assert [(c.tool, n) for c, n, _ in replay(messages, config)] == [
        ("grep", 1), ("grep", 2), ("todo", None), ("grep", 3), ("grep", 1), ("grep", 1),
    ]  # fmt: skip
    summary = summarize(messages, config)
    assert (summary.calls, summary.reminders, summary.longest) == (6, 0, ("grep", 3))
    assert summarize([HumanMessage("hi")]).longest is None


def test_replay_counts_a_turn_with_reused_call_ids_again() -> None:
    def turn(n: int) -> list[object]:
        call = {"name": "grep", "args": {}, "id": "call_0"}
        return [
            AIMessage("", tool_calls=[call], id=f"m{n}"),
            ToolMessage("r", tool_call_id="call_0"),
        ]

    messages = [HumanMessage("go"), *turn(1), *turn(2), *turn(3)]
    assert [n for _, n, _ in replay(messages, ReminderConfig())] == [1, 2, 3]


def test_demo_in_observe_mode_reports_what_it_would_have_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--mode", "observe"]) == 0
    out = capsys.readouterr().out

    assert "(observe mode: none are sent)" in out
    assert "REMINDER" not in out
    assert "Guard observing: 13 tool calls · 0 reminders" in out
    assert "Guard stats:     13 calls counted · reminders {'job_status': {'detailed': 2," in out
    assert "recovery rate 0%" in out  # the model never read them

    assert main(["demo", "--mode", "observe", "--repeat-every", "2"]) == 0
    assert "{'job_status': {'detailed': 4, 'gentle': 1}}" in capsys.readouterr().out
