"""The demo command: its scenarios, escalation, observe mode and the stats line."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import get_args

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from repeat_reminder_langchain import (
    RepeatToolLoopError,
    RepeatToolReminderCallbackHandler,
    canonicalize,
)
from repeat_reminder_langchain._canonical import digest
from repeat_reminder_langchain._exits import EXITS, ExitBehavior
from repeat_reminder_langchain.tooling._cli import main
from repeat_reminder_langchain.tooling.demo import (
    TOOLS,
    PollingModel,
    _RetestingModel,
    build_agent,
    run_demo,
)

from ..helpers import assert_adjacent, reminders


def calls_of(messages: list[object]) -> list[str]:
    return [c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


def test_the_polling_model_changes_course_after_the_detailed_reminder() -> None:
    messages = run_demo(RepeatToolReminderCallbackHandler())

    assert_adjacent(messages)
    assert reminders(messages) == [("gentle", "job_status", 3), ("detailed", "job_status", 5)]
    assert calls_of(messages) == ["job_status"] * 5 + ["read_log"]
    assert "already exists" in messages[-1].content


def test_without_the_guard_the_polling_model_polls_until_its_patience_runs_out() -> None:
    agent = build_agent(PollingModel(patience=4), None)
    messages = agent.invoke({"messages": [HumanMessage("why?")]})["messages"]

    assert calls_of(messages) == ["job_status"] * 4 + ["read_log"]


def test_the_stale_scenario_is_seen_only_by_the_stale_detector() -> None:
    only_repeat = run_demo(RepeatToolReminderCallbackHandler(), "stale")
    with_stale = run_demo(RepeatToolReminderCallbackHandler(detect=["repeat", "stale"]), "stale")

    assert reminders(only_repeat) == []
    assert calls_of(only_repeat).count("run_tests") == 6  # until its patience ran out
    assert reminders(with_stale) == [("gentle", "run_tests", 3)]
    assert calls_of(with_stale) == [
        "run_tests", "read_file", "run_tests", "edit_file", "run_tests", "read_file",
    ]  # fmt: skip
    assert "migration must skip" in with_stale[-1].content
    assert_adjacent(with_stale)


def test_the_demo_prints_the_transcript_every_reminder_line_and_both_summaries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out

    assert (
        "Guard: thresholds 3, 5, 8 · detect repeat, same_error, recurring_error; reminders sent "
        "as system messages." in out
    )
    assert "  1  user       Why did the CI job nightly-build-7 fail?" in out
    assert '→ job_status(job_id="nightly-build-7")' in out
    lines = out.splitlines()
    start = lines.index(" 13  REMINDER   [detailed · job_status × 5]")
    assert [line.strip() for line in lines[start + 1 : start + 6]] == [
        "Repeated tool call detected.",
        "- tool: job_status",
        "- consecutive_calls: 5",
        '- arguments: {"job_id":"nightly-build-7"}',
        "These identical calls are not making progress. Do not call this tool with these exact "
        "arguments again. Read the latest result, then choose a different action or different "
        "arguments, or finish if you have gathered enough to answer.",
    ]
    assert "With the guard:  6 tool calls · 2 reminders (1 gentle, 1 detailed) · longest" in out
    assert "Without it:      13 tool calls · 0 reminders (0 gentle, 0 detailed) · longest" in out
    assert (
        "Guard stats:     6 calls counted · delivered job_status: 1 detailed, 1 gentle · "
        "undelivered none · by detector repeat 2 · longest streak job_status × 5 · "
        "escalations none · followed 2, recovered 1 · recovery rate 50%"
    ) in out


def test_the_summary_of_a_finish_says_the_request_for_the_answer_apart(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--escalate-after", "10", "--exit-behavior", "finish"]) == 0
    out = capsys.readouterr().out

    # The request for the answer is a reminder message, and where the loop stopped: the
    # summary counts it there, with the escalations, as the stats line does.
    assert " 25  REMINDER   [escalated · job_status × 10]" in out.splitlines()
    assert "× 11" not in out  # the model answered, its tools withheld: no 11th call
    assert (
        "With the guard:  10 tool calls · 3 reminders (1 gentle, 2 detailed) · longest streak: "
        "job_status × 10 · stopped at job_status × 10 (repeat), the model asked for its answer"
    ) in out.splitlines()


_RUNNABLE = [name for name in get_args(ExitBehavior) if not EXITS[name].refuses]
_LOOPS = {
    "poll": ["--escalate-after", "10"],
    "stale": ["--scenario", "stale", "--detect", "stale", "--escalate-after", "4"],
}


@pytest.mark.parametrize("scenario", _LOOPS)
@pytest.mark.parametrize("exit_behavior", _RUNNABLE)
def test_the_summary_counts_the_reminders_the_stats_line_counts_for_every_exit(
    capsys: pytest.CaptureFixture[str], exit_behavior: str, scenario: str
) -> None:
    code = main(["demo", *_LOOPS[scenario], "--exit-behavior", exit_behavior])
    assert code == (1 if exit_behavior == "error" else 0)
    lines = capsys.readouterr().out.splitlines()

    summary = next(line for line in lines if line.startswith("With the guard:"))
    stats = next(line for line in lines if line.startswith("Guard stats:"))
    found = re.search(r"· (\d+) reminders? \((\d+) gentle, (\d+) detailed\) ·", summary)
    assert found is not None, summary
    delivered = stats.partition(" · delivered ")[2].partition(" · ")[0]  # tool: 2 detailed, ...
    levels = dict.fromkeys(["gentle", "detailed"], 0)
    for count, level in re.findall(r"(\d+) (\w+)", delivered):
        levels[level] += int(count)
    assert tuple(map(int, found.groups())) == (sum(levels.values()), *levels.values())
    # The stop, which the stats count apart (one escalation), is said apart.
    (escalation,) = re.findall(r"escalations (\w+): 1 (\w+) ·", stats)
    assert re.search(rf" · stopped at {escalation[0]} × \d+ \({escalation[1]}\)", summary)


def test_options_change_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--message-type", "human", "--thresholds", "2,4"]) == 0
    out = capsys.readouterr().out

    assert (
        "thresholds 2, 4 · detect repeat, same_error, recurring_error; reminders sent as human "
        "messages" in out
    )
    assert "[gentle · job_status × 2]" in out
    assert "With the guard:  5 tool calls · 2 reminders (1 gentle, 1 detailed)" in out


def test_the_stale_scenario_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--scenario", "stale", "--detect", "repeat,stale"]) == 0
    out = capsys.readouterr().out

    assert "Demo (stale): 'Make tests/test_users.py pass.'" in out
    assert "REMINDER   [gentle · run_tests × 3]" in out
    assert "has now returned exactly the same result 3 times for the same arguments" in out
    assert "by detector stale 1" in out


def test_observe_mode_says_what_the_guard_would_have_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--mode", "observe"]) == 0
    out = capsys.readouterr().out

    assert "(observe mode: it counts and reports, and adds nothing)" in out
    assert "REMINDER" not in out
    assert "Guard observing: 13 tool calls · would have sent 3 reminders · longest" in out
    assert "0 reminders" not in out.split("Without it:")[0]
    assert "delivered none · undelivered job_status: 2 detailed, 1 gentle" in out
    assert "recovery rate n/a" in out  # the model never read them


def test_escalation_ends_the_run_through_the_nodes_route(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--escalate-after", "9", "--exit-behavior", "end"]) == 0
    out = capsys.readouterr().out

    assert "The guard stops the loop at 9 (end); the model ignores reminders" in out
    assert "GUARD      [escalated · job_status × 9]" in out
    assert "Stopped: the agent was looping on `job_status`" in out
    assert "9 tool calls · 3 reminders (1 gentle, 2 detailed)" in out
    assert "stopped at job_status × 9 (repeat)" in out
    assert "escalations job_status: 1 repeat" in out
    numbered = [line for line in out.splitlines() if line[:3].strip().isdigit()]
    assert numbered[-1].startswith(" 23  GUARD")  # nothing ran after the guard's last word


def test_finish_ends_the_demo_on_the_models_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--escalate-after", "10", "--exit-behavior", "finish"]) == 0
    out = capsys.readouterr().out

    numbered = [line for line in out.splitlines() if line[:3].strip().isdigit()]
    # Asked for its answer, the model was called without its tools, and answered: no call
    # ran after the request, and the last word is the model's.
    assert numbered[-2].startswith(" 25  REMINDER   [escalated · job_status × 10]")
    assert numbered[-1].startswith(" 26  assistant  What I have: `job_status` says")
    assert "withheld" not in out  # the node faces withhold nothing themselves
    assert "10 tool calls" in out


def test_a_demo_model_called_without_its_tools_answers_with_what_it_has() -> None:
    model = PollingModel()
    assert model.invoke([HumanMessage("status?")]).content == "I have no results to go on yet."
    assert model.bind_tools(TOOLS["poll"]).invoke([HumanMessage("status?")]).tool_calls


def test_escalation_by_error_prints_it_on_one_line_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--escalate-after", "9", "--exit-behavior", "error"]) == 1
    captured = capsys.readouterr()

    assert "job_status(job_id=" in captured.out  # the conversation up to the stop
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    # The arguments by their digest only, as in every log line and error message.
    arguments = digest(canonicalize({"job_id": "nightly-build-7"}))
    assert errors == [
        "error: repeat tool loop stopped: job_status × 9 (repeat, escalate_after=9), arguments "
        f"{arguments}, thread demo"
    ]


def test_escalation_by_interrupt_is_answered_end_unattended(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--escalate-after", "9", "--exit-behavior", "interrupt"]) == 0
    out = capsys.readouterr().out

    assert "The guard paused the run and asked: The agent has been looping on `job_status`" in out
    assert "The demo answered: end." in out
    assert "GUARD      [escalated · job_status × 9]" in out


def test_the_stale_scenario_escalates_too(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["demo", "--scenario", "stale", "--detect", "stale", "--escalate-after", "4"]
    assert main(argv) == 0

    assert "stopped at run_tests × 4 (stale)" in capsys.readouterr().out


def test_a_resume_that_continues_lets_the_loop_go_on() -> None:
    guard = RepeatToolReminderCallbackHandler(escalate_after=9, exit_behavior="interrupt")
    messages = run_demo(guard, heeds=False, resume="continue")

    assert calls_of(messages) == ["job_status"] * 12 + ["read_log"]


def test_run_demo_keeps_the_conversation_on_the_error() -> None:
    guard = RepeatToolReminderCallbackHandler(escalate_after=9, exit_behavior="error")
    with pytest.raises(RepeatToolLoopError) as raised:
        run_demo(guard, heeds=False)

    assert calls_of(raised.value.messages) == ["job_status"] * 9  # type: ignore[attr-defined]


def test_block_is_refused_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--escalate-after", "9", "--exit-behavior", "block"]) == 2
    captured = capsys.readouterr()

    assert captured.out == ""
    assert captured.err == (
        "error: --exit-behavior block needs the middleware (create_agent), which sees a call "
        "before it runs; this demo's graph uses the handler and node: use end, finish, error or "
        "interrupt\n"
    )


def test_the_help_describes_every_exit_behavior_the_option_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    said = text.partition("as --exit-behavior says: ")[2].partition(". Exit codes")[0]
    described = [clause.split()[0] for clause in said.split("; ")]
    assert described == list(get_args(ExitBehavior))  # each, in the option's order
    assert "finish asks the model for its answer in one more call without its tools" in said


def test_the_retesting_model_gives_up_without_the_guard() -> None:
    agent = build_agent(
        _RetestingModel(patience=2), None, [*run_demo.__globals__["TOOLS"]["stale"]]
    )
    messages = agent.invoke({"messages": [HumanMessage("go")]})["messages"]

    assert calls_of(messages) == ["run_tests", "read_file", "run_tests", "read_file"]


def test_the_summaries_say_one_call_in_the_singular() -> None:
    from langchain_core.messages import ToolMessage

    from repeat_reminder_langchain import ReminderConfig
    from repeat_reminder_langchain._stats import Stats
    from repeat_reminder_langchain.tooling.demo import _format_stats, _summary

    call = {"name": "ls", "args": {}, "id": "c1"}
    messages = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("r", tool_call_id="c1"),
    ]
    assert _summary(messages, ReminderConfig(), None).startswith("1 tool call · 0 reminders")
    stats = Stats().snapshot()
    stats["calls"] = 1
    assert _format_stats(stats).startswith("1 call counted · ")


def test_the_demo_runs_on_the_plain_install() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        top = name.split('.')[0]\n"
        "        if top in {'matplotlib', 'numpy', 'ijson', 'IPython', 'pytest', 'deepagents',\n"
        "                   'langchain_openai', 'langchain_anthropic'}:\n"
        "            raise ImportError(f'{name} is not part of the plain install')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from repeat_reminder_langchain.tooling._cli import main\n"
        "sys.exit(main(['demo', '--scenario', 'stale', '--detect', 'repeat,stale']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "REMINDER   [gentle · run_tests × 3]" in done.stdout
