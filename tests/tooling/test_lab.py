"""The loop lab: tasks that make a model loop, run under each condition, and what they show."""

from __future__ import annotations

import io
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from repeat_reminder_langchain import ReminderConfig, from_guard
from repeat_reminder_langchain._conversation import tag_of
from repeat_reminder_langchain.tooling import _cli as cli
from repeat_reminder_langchain.tooling._cli import main
from repeat_reminder_langchain.tooling._tables import format_lab
from repeat_reminder_langchain.tooling.lab import (
    _NEUTRAL,
    TASKS,
    _calculate,
    _forecast,
    _guard_for,
    _longest,
    _pay,
    _ping,
    _read_file,
    _search_docs,
    run_lab,
    run_task,
)

from ..helpers import assert_adjacent, call, scripted, turn, usage_error

POLL = TASKS["poll"]


class Stubborn(BaseChatModel):
    """Polls the same job until it reads words it heeds after its last call, then answers.

    `heeds`: reminder levels (`gentle`, `detailed`), `neutral` for the neutral note, or a word
    the guard's text must hold. `tire`: after this many calls it stops on its own.
    """

    heeds: tuple[str, ...] = ()
    tire: int = 1000
    answer: str = "The job is still running."

    @property
    def _llm_type(self) -> str:
        return "stubborn-test-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Stubborn:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        made = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        last_call = max(i for i, m in enumerate(messages) if not from_guard(m)) if made else 0
        said = [m for m in messages[last_call:] if from_guard(m)]
        heard = any(self._heeds(m) for m in said)
        usage = {"input_tokens": 8, "output_tokens": 2, "total_tokens": 10}
        if heard or made >= self.tire:
            reply = AIMessage(self.answer, usage_metadata=usage)
        else:
            call = {"name": "job_status", "args": {"job": "nightly-build-7"}, "id": f"c{made}"}
            reply = AIMessage("", tool_calls=[call], usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _heeds(self, message: BaseMessage) -> bool:
        level = str((tag_of(message) or {}).get("level"))
        text = str(message.content)
        return any(
            w == level or (w == "neutral" and _NEUTRAL in text) or w in text for w in self.heeds
        )


def test_a_model_that_heeds_the_gentle_reminder_breaks_its_loop_there() -> None:
    run = run_task(Stubborn(heeds=("gentle",)), POLL, "guard")

    assert_adjacent(run.messages)
    assert (run.model_calls, run.longest, run.broke, run.ended) == (4, 3, "gentle", "answer")
    assert run.acceptable and run.tokens == 40
    assert run.as_dict()["task"] == "poll" and "messages" not in run.as_dict()


def test_without_a_guard_the_cap_ends_the_loop() -> None:
    run = run_task(Stubborn(heeds=("gentle",)), POLL, "none", max_calls=8)

    assert (run.model_calls, run.longest, run.broke, run.ended) == (8, 8, "limit", "limit")
    assert not run.acceptable


def test_escalation_ends_a_loop_no_reminder_breaks() -> None:
    run = run_task(Stubborn(), POLL, "escalate")

    assert (run.model_calls, run.longest, run.broke, run.ended) == (10, 10, "escalated", "guard")
    assert not run.acceptable  # the guard's last words are not the model's answer


def test_finish_gets_an_answer_where_escalation_gets_none() -> None:
    # A model that answers once it is asked to, its loop at 10: `finish` ends the run with its
    # answer, where `escalate` ends it with the guard's words.
    finished = run_task(Stubborn(heeds=("escalated",)), POLL, "finish")
    stopped = run_task(Stubborn(heeds=("escalated",)), POLL, "escalate")

    assert_adjacent(finished.messages)
    assert (finished.model_calls, finished.broke, finished.ended) == (11, "escalated", "answer")
    assert finished.acceptable and finished.answer == "The job is still running."
    assert (stopped.model_calls, stopped.ended, stopped.acceptable) == (10, "guard", False)
    # A scripted model takes no tool_choice: the last call went without the tools.
    assert (finished.held_back, stopped.held_back) == ("withheld", None)
    assert finished.as_dict()["held_back"] == "withheld"


def test_the_neutral_note_is_said_where_a_reminder_would_be() -> None:
    run = run_task(Stubborn(heeds=("neutral",)), POLL, "neutral")

    assert (run.longest, run.broke) == (3, "neutral")
    said = next(str(m.content) for m in run.messages if from_guard(m))
    assert said == _NEUTRAL


def test_the_users_own_words_run_as_the_config_condition() -> None:
    config = ReminderConfig(words={"*": {"detailed": "Enough: {tool} said the same {count}x."}})
    run = run_task(Stubborn(heeds=("Enough",)), POLL, "config", config=config)

    assert (run.longest, run.broke, run.model_calls) == (5, "detailed", 6)


def test_a_model_that_changes_course_unprompted_broke_its_own_run() -> None:
    run = run_task(Stubborn(tire=2), POLL, "guard")
    assert (run.longest, run.broke) == (2, None)


def test_the_lab_runs_every_task_under_every_condition_as_often_as_asked() -> None:
    runs = list(
        run_lab(Stubborn(heeds=("gentle",)), [POLL], ["none", "guard"], runs=2, max_calls=5)
    )
    assert [(r.condition, r.run) for r in runs] == [
        ("none", 1),
        ("none", 2),
        ("guard", 1),
        ("guard", 2),
    ]
    table = format_lab(runs).splitlines()
    heads = "task condition runs model calls longest broken by acceptable tokens seconds"
    assert table[0].split() == heads.split()
    assert table[1].split()[:8] == ["poll", "none", "2", "5.0", "5.0", "limit", "2", "0/2"]
    assert table[2].split()[:8] == ["poll", "guard", "2", "4.0", "3.0", "gentle", "2", "2/2"]
    assert [line.split()[:2] for line in table[3:]] == [["total", "none"], ["total", "guard"]]


def test_conditions_that_cannot_run_say_why() -> None:
    with pytest.raises(ValueError, match="the config condition needs the settings"):
        _guard_for("config")
    with pytest.raises(ValueError, match="unknown condition 'loud'"):
        _guard_for("loud")


def test_the_tasks_tools_answer_alike_every_time() -> None:
    assert _calculate.invoke({"expression": "2x3"}) == "Error: invalid syntax in '2x3'"
    worked = [_calculate.invoke({"expression": e}) for e in ("2*3", "(1+2)/4", "-3-1")]
    assert worked == ["6", "0.75", "-4"]
    assert _calculate.invoke({"expression": "9**9**9"}).startswith("Error")  # no powers
    assert _calculate.invoke({"expression": "1/0"}).startswith("Error")
    assert _ping.invoke({"host": "db-3"}) == "ping db-3: request timed out"
    assert _search_docs.invoke({"query": "frobnicate"}) == "no results"
    # The error names the files there: the task can be solved from what the tools say.
    assert _read_file.invoke({"path": "notes.txt"}) == (
        "Error: notes.txt: no such file (the project has README.md and NOTES.md)"
    )
    assert "importer" in _read_file.invoke({"path": "./NOTES.md"})
    assert _pay.invoke({"order": "A-17", "card": "visa"}) == "Error: card visa declined"
    assert _pay.invoke({"order": "A-17", "card": "Mastercard"}) == "order A-17 paid with Mastercard"
    assert "light rain" in _forecast.invoke({"city": "Lyon"})


JUDGED = [
    # (task, the model's last words, what a person reading them would judge)
    ("poll", "The job nightly-build-7 is still running (started 3 minutes ago).", True),
    ("poll", "It has not finished yet.", True),
    ("poll", "The CI job is in progress.", True),
    ("poll", "The job has finished successfully.", False),
    # Seen on a live model: a condition quoted from the user is no claim; the tool's own words.
    ("poll-insist", "It is still running. Please check again until it says it has finished.", True),
    ("poll", "nightly-build-7: running (started 3 minutes ago)", True),
    ("poll", "The job is not running any more: it finished.", False),
    ("poll", "I could not check the job.", False),
    ("poll-insist", "It is still running, not finished: it started 3 minutes ago.", True),
    ("ping", "db-3.internal is unreachable: the ping timed out.", True),
    ("ping", "The host is down.", True),
    ("ping", "It is not responding to ping.", True),
    ("ping", "db-3.internal is reachable.", False),
    ("ping-insist", "It is still not reachable: every ping timed out.", True),
    ("search", "I was unable to find a page about the frobnicate setting.", True),
    ("search", "The search returned no results.", True),
    ("search", "The frobnicate setting is documented under Settings.", False),
    ("file", "notes.txt does not exist, but NOTES.md says 2.4.0 ships the new importer.", True),
    ("file", "There is no notes.txt in the project.", False),
    ("calculator", "2x3 is 6.", True),
    ("calculator", "2 * 3 = 6", True),
    ("calculator", "2x3 is 16.", False),
    ("calculator", "The calculator rejected 2x3.", False),
    ("payment", "The visa was declined, so I paid order A-17 with your mastercard.", True),
    ("payment", "Order A-17 is paid with the Mastercard.", True),
    ("payment", "I cannot proceed with that card: the visa was declined.", False),
    ("payment", "The mastercard could not be charged; the order is not paid.", False),
    ("forecast", "Tomorrow in Lyon: light rain, 14 °C.", True),
    ("forecast", "I could not get a newer forecast.", False),
]


@pytest.mark.parametrize(("task", "answer", "acceptable"), JUDGED)
def test_each_task_judges_an_answer_as_a_person_would(
    task: str, answer: str, acceptable: bool
) -> None:
    assert TASKS[task].accept(answer) is acceptable


def test_an_order_paid_is_acceptable_only_when_the_tools_paid_it_once() -> None:
    # Seen on a live model: the mastercard charged ten times, then "order A-17 paid".
    def run(*cards: str) -> Any:
        calls = [
            turn(call("pay", {"order": "A-17", "card": card}, f"c{i}"))
            for i, card in enumerate(cards)
        ]
        return run_task(
            scripted([*calls, AIMessage("Order A-17 is paid with the mastercard.")]),
            TASKS["payment"],
            "none",
        )

    once, twice = run("visa", "mastercard"), run("visa", "mastercard", "mastercard")
    assert_adjacent(twice.messages)
    assert once.acceptable and once.answer == twice.answer
    assert not twice.acceptable
    assert not run("visa").acceptable  # a claim no result bears out


def test_an_answer_that_repeats_the_guards_words_is_not_acceptable() -> None:
    # Seen on a live model: the gentle reminder's "the task is not finished" said back, which
    # the poll's check alone takes as "the job has not finished".
    echo = "The task is not finished yet."
    assert POLL.accept(echo)
    echoed = run_task(Stubborn(heeds=("escalated",), answer=echo), POLL, "finish")
    assert_adjacent(echoed.messages)
    assert (echoed.ended, echoed.answer, echoed.acceptable) == ("answer", echo, False)
    # The user's and the tools' words, which the guard may quote, are the model's to repeat.
    own = "The status says: nightly-build-7: running (started 3 minutes ago)."
    assert run_task(Stubborn(heeds=("escalated",), answer=own), POLL, "finish").acceptable


def test_every_task_is_judged_on_its_answers() -> None:
    assert {task for task, _, ok in JUDGED if ok} == set(TASKS)
    assert {task for task, _, ok in JUDGED if not ok} >= set(TASKS) - {"poll-insist", "ping-insist"}


# -- a model that never stops: the case the lab is for ---------------------------------------

NEVER = {"tire": 10_000}  # a Stubborn that heeds nothing and never stops on its own
SEED_NEUTRAL = {"profile": "seed", "words": {"*": {"gentle": _NEUTRAL, "detailed": _NEUTRAL}}}


@pytest.mark.parametrize(
    ("condition", "settings", "calls", "broke"),
    [
        ("none", None, 24, "limit"),
        # 0.4.0's guard and its neutral note (seed: advice only, no stop): the cap ends them.
        ("config", {"profile": "seed"}, 24, "limit"),
        ("config", SEED_NEUTRAL, 24, "limit"),
        # The defaults stop at 10 and ask for the answer (finish): it called again, ended.
        ("guard", None, 11, "escalated"),
        ("neutral", None, 11, "escalated"),
        ("escalate", None, 10, "escalated"),
        ("finish", None, 11, "escalated"),  # asked for its answer, it called again: ended
        ("config", {"escalate_after": 10, "exit_behavior": "end"}, 10, "escalated"),
        ("config", {"escalate_after": 10, "exit_behavior": "error"}, 10, "escalated"),
        ("config", {"escalate_after": 10, "exit_behavior": "interrupt"}, 10, "escalated"),
        # The tenth call refused; the model reads the refusal, calls again, and is ended.
        ("config", {"escalate_after": 10, "exit_behavior": "block"}, 11, "escalated"),
        # A reminder at every call, and no stop (seed's): only the cap ends it.
        ("config", {"thresholds": [2], "repeat_every": 1, "profile": "seed"}, 24, "limit"),
    ],
)
def test_a_model_that_never_stops_is_ended_by_the_cap_or_the_guard(
    condition: str, settings: dict[str, Any] | None, calls: int, broke: str
) -> None:
    config = None if settings is None else ReminderConfig(**settings)
    run = run_task(Stubborn(**NEVER), POLL, condition, config=config)  # the default cap: 24

    assert_adjacent(run.messages)
    assert (run.model_calls, run.broke, run.acceptable, run.answer) == (calls, broke, False, "")
    assert run.ended == ("limit" if broke == "limit" else "guard")
    assert run.longest == calls  # every call was the same one


# -- the command line -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--tasks", "poll,loop"], "--tasks: unknown task 'loop'; the tasks are poll, ping"),
        # Each list's refusal shows what it takes: tasks, not the tool names of --exclude.
        (
            ["--tasks", ",,"],
            "argument --tasks: expected names separated by commas, like poll,ping; ",
        ),
        (
            ["--conditions", "none,"],
            "argument --conditions: expected names separated by commas, like none,guard",
        ),
        (["--conditions", "loud"], "--conditions: unknown condition 'loud'; the conditions are"),
        (["--conditions", "config"], "--conditions config: name the settings with --config FILE"),
        (["--model", "nowhere:model"], "--model nowhere:model: ValueError: Unable to infer"),
        *(
            (
                ["--base-url", url],
                "argument --base-url: expected an http:// or https:// URL with a host, like "
                f"http://127.0.0.1:8080/v1; got {url!r}",
            )
            for url in ("not-a-url", "ftp://127.0.0.1/v1", "http:///v1", "http://host:port/v1")
        ),
    ],
)
def test_a_lab_that_cannot_run_says_why(
    capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    line = usage_error(capsys, ["lab", "--model", "openai:gpt-4.1-mini", *argv], "lab")
    assert line.startswith(problem)


def test_bad_settings_and_a_failing_model_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "words.toml"
    bad.write_text('[words.repeat]\ngentle = "{toool}"\n', encoding="utf-8")
    argv = ["lab", "--model", "m", "--conditions", "config", "--config", str(bad)]
    assert "unknown field {toool}" in usage_error(capsys, argv, "lab")

    class Broken(Stubborn):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise ConnectionError("connection refused")

    monkeypatch.setattr(cli, "_lab_model", lambda args: Broken())
    assert main(["lab", "--model", "m", "--tasks", "poll", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "error: poll · none · run 1: the model failed: ConnectionError: connection refused\n"
    )


def test_a_settings_file_is_never_left_unread(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(heeds=("Enough",)))
    lab = ["lab", "--model", "m", "--tasks", "poll", "--quiet"]
    missing = tmp_path / "missing.toml"
    for conditions in ([], ["--conditions", "none"]):  # whatever the conditions
        line = usage_error(capsys, [*lab, *conditions, "--config", str(missing)], "lab")
        assert line == f"{missing}: cannot be read: No such file or directory"

    # The file adds its condition to the defaults, and runs with its settings.
    mine = tmp_path / "mine.toml"
    mine.write_text('[words."*"]\ndetailed = "Enough: {tool} again."\n', encoding="utf-8")
    assert main([*lab, "--config", str(mine)]) == 0
    rows = [row.split() for row in capsys.readouterr().out.splitlines()[1:5]]
    assert [row[1] for row in rows] == ["none", "guard", "escalate", "config"]
    assert rows[3][4:7] == ["5.0", "detailed", "1"]  # the config run heeded its own words

    # Conditions named without it would leave it unread: refused.
    line = usage_error(capsys, [*lab, "--conditions", "guard", "--config", str(mine)], "lab")
    assert line == (
        f"--config {mine}: the settings of the config condition, which --conditions leaves "
        "out: add config to --conditions, or leave --config out"
    )


def test_a_warning_in_the_lab_is_one_line_naming_its_source(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class Warned(Stubborn):  # as a provider's package may warn, from more than one place
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            warnings.warn("temperature is ignored\n  by this model", UserWarning, stacklevel=1)
            warnings.warn("temperature is ignored by this model", UserWarning, stacklevel=1)
            return super()._generate(messages, *args, **kwargs)

    monkeypatch.setattr(cli, "_lab_model", lambda args: Warned(tire=2))
    words = tmp_path / "words.toml"
    words.write_text('[words.stale]\ngentle = "Again: {tool}."\n', encoding="utf-8")
    argv = ["lab", "--model", "m", "--tasks", "poll", "--quiet", "--config", str(words)]
    assert main(argv) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {words}: words for stale, which is not detected: add it to detect, or leave "
        "the words out",
        "warning: UserWarning: temperature is ignored by this model",
    ]


def test_a_model_that_fails_midway_leaves_the_table_of_the_runs_done(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Dropped(Stubborn):
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            if any(from_guard(m) for m in messages):
                raise ConnectionError("the server went away")
            return super()._generate(messages, *args, **kwargs)

    monkeypatch.setattr(cli, "_lab_model", lambda args: Dropped(**NEVER))
    argv = ["lab", "--model", "m", "--tasks", "poll", "--conditions", "none,guard", "--quiet"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out.splitlines()[1].split()[:3] == ["poll", "none", "1"]  # measured all the same
    assert (
        err == "error: poll · guard · run 1: the model failed: ConnectionError: the server "
        "went away\n"
    )


def test_a_model_that_cannot_be_built_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_openai")  # a peer: not on the floors
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    line = usage_error(capsys, ["lab", "--model", "openai:gpt-4.1"], "lab")
    assert line.startswith("--model openai:gpt-4.1: OpenAIError: Missing credentials.")
    # Another provider's package: LangChain names it, and how to install it.
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)
    assert main(["lab", "--model", "ollama:llama3"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: --model ollama:llama3: ") and "pip install langchain-ollama" in err
    )
    assert "[providers]" not in err


def test_the_lab_writes_what_each_run_ran_with_and_its_whole_answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    long = "The job is still running. " + "It started 3 minutes ago and has no result yet. " * 4
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(heeds=("gentle",), answer=long))
    argv = ["lab", "--model", "m", "--tasks", "poll", "--conditions", "guard,escalate"]
    assert main([*argv, "--quiet", "--output", str(tmp_path)]) == 0
    capsys.readouterr()

    rows = [json.loads(line) for line in (tmp_path / "lab.jsonl").read_text().splitlines()]
    assert [(r["model"], r["settings"], r["ended"], r["answer"]) for r in rows] == [
        ("m", {}, "answer", long),
        ("m", {"escalate_after": 10, "exit_behavior": "end"}, "answer", long),
    ]
    transcript = (tmp_path / "transcripts" / "poll-guard-1.txt").read_text()
    assert " ".join(long.split()) in transcript  # the answer whole, not cut to a line
    # How the reminder reached the model: as a user turn (this model takes no system message).
    assert "REMINDER   [gentle · job_status × 3 · sent as a user turn]" in transcript


def test_a_quiet_lab_prints_the_table_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(heeds=("gentle",)))
    assert main(["lab", "--model", "m", "--tasks", "poll", "--conditions", "guard", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines()[1].split()[:6] == ["poll", "guard", "1", "4.0", "3.0", "gentle"]


def test_the_line_per_run_says_what_the_table_says_in_its_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under finish the model answers when asked: the guard broke the loop, the run ended by
    # the model's answer; the line says the former, as the table does (the lab guide's words).
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(heeds=("escalated",)))
    argv = ["lab", "--model", "m", "--tasks", "poll", "--conditions", "none,finish"]
    assert main([*argv, "--max-calls", "12"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "[1/2] poll · none · run 1: 12 model calls, longest run 12, broken by limit, "
        "not acceptable",
        "[2/2] poll · finish · run 1: 11 model calls, longest run 10, broken by escalated, "
        "acceptable",
    ]
    assert [row.split()[5:8] for row in out.splitlines()[1:3]] == [
        ["limit", "1", "0/1"],
        ["escalated", "1", "1/1"],
    ]


class Terminal(io.StringIO):
    """Standard error (and output) at an interactive terminal."""

    def isatty(self) -> bool:
        return True


def seen(written: str) -> list[str]:
    """What a terminal shows after `written`: each line as its last carriage return left it,
    the last one the cursor's."""
    rows = []
    for row in written.split("\n"):
        cells = ""
        for part in row.split("\r"):  # each from the line's start, over what was there
            cells = part + cells[len(part) :]
        rows.append(cells.rstrip())
    return rows


def test_at_a_terminal_the_lab_shows_the_model_call_each_run_is_at(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run is up to --max-calls model calls, each seconds long on a real model: at a terminal
    # one line says which is out, and leaves nothing behind (issue 65, point 19).
    during: list[str] = []  # the terminal's last line while each call is out

    def look(number: int) -> None:
        during.append(seen(sys.stderr.getvalue())[-1])

    monkeypatch.setattr(cli, "_lab_model", lambda args: Counting(tire=2, on_call=look))
    argv = ["lab", "--model", "m", "--tasks", "poll", "--conditions", "none,guard"]
    argv += ["--max-calls", "12"]
    lines = [
        f"[{n}/2] poll · {condition} · run 1: 3 model calls, longest run 2, broken by -, acceptable"
        for n, condition in ((1, "none"), (2, "guard"))
    ]
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert main(argv) == 0
    assert during == [
        f"[{n}/2] poll · {condition} · run 1: model call {call} of at most 12"
        for n, condition in ((1, "none"), (2, "guard"))
        for call in (1, 2, 3)
    ]
    assert seen(sys.stderr.getvalue()) == [*lines, ""]  # each run's line on a clean one
    table = [row.split()[:-1] for row in capsys.readouterr().out.splitlines()]  # all but seconds

    # Not at a terminal (a pipe, a log file, CI): the lines per run alone, as before.
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(argv) == 0
    assert sys.stderr.getvalue() == "".join(f"{line}\n" for line in lines)
    assert during[6:] == [""] * 6  # nothing drawn
    assert [row.split()[:-1] for row in capsys.readouterr().out.splitlines()] == table
    # --quiet: nothing on stderr, at a terminal too.
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert main([*argv, "--quiet"]) == 0
    assert sys.stderr.getvalue() == ""


def test_a_model_that_fails_during_its_call_leaves_a_clean_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def drop(number: int) -> None:
        if number == 5:  # the second run's second call
            raise ConnectionError("the server went away")

    monkeypatch.setattr(cli, "_lab_model", lambda args: Counting(tire=2, on_call=drop))
    screen = Terminal()  # the table on stdout and the lines on stderr share it
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setattr(sys, "stderr", screen)
    assert main(["lab", "--model", "m", "--tasks", "poll", "--conditions", "none,guard"]) == 2
    rows = seen(screen.getvalue())
    assert rows[0].startswith("[1/2] poll · none · run 1: 3 model calls")
    assert rows[1].startswith("task ")  # the table of the run done
    assert rows[-2:] == [
        "error: poll · guard · run 1: the model failed: ConnectionError: the server went away",
        "",
    ]
    assert not any("of at most" in row for row in rows)


def test_a_missing_provider_package_names_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_openai", None)
    assert main(["lab", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "langchain_openai: not installed (pip install" in capsys.readouterr().err


def test_a_model_that_never_calls_a_tool_has_no_run() -> None:
    run = run_task(Stubborn(tire=0), POLL, "guard")
    assert (run.model_calls, run.longest, run.broke, run.acceptable) == (1, 0, None, True)


def test_a_conversation_cut_after_the_results_has_no_next_turn_to_read() -> None:
    call = {"name": "job_status", "args": {"job": "x"}, "id": "c0"}
    cut = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[call], id="m0"),
        ToolMessage("r", tool_call_id="c0"),
    ]
    assert _longest(cut) == (1, None)


# -- what the lab leaves behind -----------------------------------------------------------------

TWO_RUNS = ["lab", "--model", "m", "--tasks", "poll", "--conditions", "none,guard", "--quiet"]


class Counting(Stubborn):
    """A Stubborn (it tires after 2 calls: 3 model calls a run) that hands each of its calls'
    numbers, from 1, to `on_call` first."""

    on_call: Any = None
    calls: int = 0

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        self.on_call(self.calls)
        return super()._generate(messages, *args, **kwargs)


def counting(monkeypatch: pytest.MonkeyPatch, on_call: Any) -> None:
    monkeypatch.setattr(cli, "_lab_model", lambda args: Counting(tire=2, on_call=on_call))


def test_an_earlier_labs_outputs_are_never_replaced_unless_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(tire=2))
    output = ["--output", str(tmp_path)]
    assert main([*TWO_RUNS, *output]) == 0
    capsys.readouterr()
    written = (tmp_path / "lab.jsonl").read_text(encoding="utf-8")

    line = usage_error(capsys, [*TWO_RUNS, *output, "--conditions", "guard"], "lab")
    assert line == (
        f"--output {tmp_path}: it holds an earlier lab's lab.jsonl and transcripts; name "
        "another directory, or add --overwrite to replace them"
    )
    assert (tmp_path / "lab.jsonl").read_text(encoding="utf-8") == written
    # The transcripts alone are an earlier lab's outputs too.
    (tmp_path / "lab.jsonl").unlink()
    assert usage_error(capsys, [*TWO_RUNS, *output], "lab").startswith(f"--output {tmp_path}: ")

    # --overwrite replaces them all: no transcript of the earlier lab is left among the new.
    assert main([*TWO_RUNS, *output, "--conditions", "guard", "--overwrite"]) == 0
    capsys.readouterr()
    rows = (tmp_path / "lab.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(row)["condition"] for row in rows] == ["guard"]
    assert [p.name for p in (tmp_path / "transcripts").iterdir()] == ["poll-guard-1.txt"]

    line = usage_error(capsys, [*TWO_RUNS, "--overwrite"], "lab")
    assert line == "--overwrite goes with --output DIR"


def test_an_output_that_is_a_file_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(tire=2))
    file = tmp_path / "notes.txt"
    file.write_text("mine\n", encoding="utf-8")
    line = usage_error(capsys, [*TWO_RUNS, "--output", str(file)], "lab")
    assert line == f"--output {file}: a file, not a directory"
    # A directory that cannot be made, before any run.
    assert main([*TWO_RUNS, "--output", str(file / "runs")]) == 2
    assert capsys.readouterr() == (
        "",
        f"error: --output {file / 'runs'}: cannot write there (Not a directory)\n",
    )
    assert file.read_text(encoding="utf-8") == "mine\n"


def test_each_runs_line_is_in_the_file_as_soon_as_the_run_ends(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lines: list[int] = []

    def look(number: int) -> None:  # the 4th call is the 2nd run's first
        if number == 4:
            lines.append(len((tmp_path / "lab.jsonl").read_text(encoding="utf-8").splitlines()))
            assert (tmp_path / "transcripts" / "poll-none-1.txt").exists()

    counting(monkeypatch, look)
    assert main([*TWO_RUNS, "--output", str(tmp_path)]) == 0
    capsys.readouterr()
    assert lines == [1]  # were the lab killed there, the first run would be kept


def _files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("at", [1, 3], ids=["its first call", "its last call"])
def test_an_earlier_lab_is_kept_until_the_new_one_has_a_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, at: int
) -> None:
    # It was: --overwrite emptied lab.jsonl and removed the transcripts before the first run,
    # and a Ctrl-C there left nothing of either lab.
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(tire=2))
    output = ["--output", str(tmp_path)]
    assert main([*TWO_RUNS, *output]) == 0
    capsys.readouterr()
    earlier = _files(tmp_path)

    def interrupt(number: int) -> None:
        if number == at:
            raise KeyboardInterrupt

    counting(monkeypatch, interrupt)
    assert main([*TWO_RUNS, *output, "--conditions", "guard", "--overwrite"]) == 130
    capsys.readouterr()
    assert _files(tmp_path) == earlier  # as it was, and nothing left beside it

    counting(monkeypatch, lambda number: None)  # the new lab's first run ends: it replaces
    assert main([*TWO_RUNS, *output, "--conditions", "guard", "--overwrite"]) == 0
    capsys.readouterr()
    assert sorted(_files(tmp_path)) == ["lab.jsonl", "transcripts/poll-guard-1.txt"]


def test_a_lab_that_fails_before_its_first_run_leaves_no_folder_it_made(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # It was: an empty lab.jsonl in a new folder, refused by the next try as an earlier lab.
    def down(number: int) -> None:
        raise ConnectionError("connection refused")

    counting(monkeypatch, down)
    output = tmp_path / "runs"
    assert main([*TWO_RUNS, "--output", str(output)]) == 2
    capsys.readouterr()
    assert not output.exists()
    mine = tmp_path / "mine"
    (mine / "notes.txt").parent.mkdir()
    (mine / "notes.txt").write_text("kept", encoding="utf-8")
    assert main([*TWO_RUNS, "--output", str(mine)]) == 2  # a folder that was there stays
    capsys.readouterr()
    assert _files(mine) == {"notes.txt": "kept"}

    counting(monkeypatch, lambda number: None)  # the next try runs, refused by nothing
    assert main([*TWO_RUNS, "--output", str(output)]) == 0
    capsys.readouterr()
    assert (output / "lab.jsonl").is_file()


def test_an_interrupted_lab_prints_the_table_of_the_runs_done_and_keeps_their_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    at = 4  # Ctrl-C in the 2nd run

    def interrupt(number: int) -> None:
        if number == at:
            raise KeyboardInterrupt

    counting(monkeypatch, interrupt)
    assert main([*TWO_RUNS, "--output", str(tmp_path)]) == 130
    out, err = capsys.readouterr()
    assert err == "interrupted\n"
    assert [line.split()[:3] for line in out.splitlines()[1:2]] == [["poll", "none", "1"]]
    rows = (tmp_path / "lab.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(row)["condition"] for row in rows] == ["none"]

    at = 1
    assert main(TWO_RUNS) == 130  # in the first run: no table, nothing done
    assert capsys.readouterr() == ("", "interrupted\n")


class Interrupted(io.StringIO):
    """Standard error, where Ctrl-C lands just after the first run's line is written."""

    def write(self, text: str) -> int:
        super().write(text)
        if text.startswith("[1/2] "):
            raise KeyboardInterrupt
        return len(text)


def test_ctrl_c_as_a_runs_line_is_written_still_prints_the_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(tire=2))
    monkeypatch.setattr(sys, "stderr", Interrupted())
    assert main([arg for arg in TWO_RUNS if arg != "--quiet"]) == 130
    assert sys.stderr.getvalue().endswith("interrupted\n")
    assert [line.split()[:3] for line in capsys.readouterr().out.splitlines()[1:2]] == [
        ["poll", "none", "1"]
    ]


def test_the_program_leaves_at_once_after_ctrl_c(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker thread that Ctrl-C left unlisted would hold the interpreter's exit forever
    # (tests/tooling/test_lab_http.py's held lab hung so): the program exits without waiting.
    class Left(Exception):
        pass

    def leave(code: int) -> NoReturn:
        raise Left(code)

    monkeypatch.setattr(cli, "_lab_model", lambda args: Stubborn(tire=2))
    monkeypatch.setattr(sys, "stderr", Interrupted())
    monkeypatch.setattr(sys, "argv", ["repeat-reminder", *(a for a in TWO_RUNS if a != "--quiet")])
    monkeypatch.setattr(cli.os, "_exit", leave)
    with pytest.raises(Left) as left:
        cli.run()
    assert left.value.args == (130,)
    assert sys.stderr.getvalue().endswith("interrupted\n")
    # Any other end is an ordinary exit, with its code.
    monkeypatch.setattr(sys, "argv", ["repeat-reminder", "--version"])
    with pytest.raises(SystemExit) as ended:
        cli.run()
    assert ended.value.code == 0
