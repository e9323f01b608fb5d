"""The command line: options in any order, one-line errors, every guard option."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import messages_to_dict
from pydantic.fields import FieldInfo

from repeat_reminder_langchain import BOOKKEEPING_TOOLS, ReminderConfig, __version__
from repeat_reminder_langchain._config import short_forms
from repeat_reminder_langchain._detectors import DETECTORS
from repeat_reminder_langchain.tooling import _cli as cli
from repeat_reminder_langchain.tooling._cli import main
from repeat_reminder_langchain.tooling.demo import run_demo

from ..helpers import one_error, usage_error

UNGUARDED = messages_to_dict(run_demo(None))
ESCALATE_5 = ["--escalate-after", "5"]


@pytest.fixture
def log(tmp_path: Path) -> str:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(UNGUARDED), encoding="utf-8")
    return str(path)


def settings(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    assert main(argv) == 0
    found: dict[str, object] = json.loads(capsys.readouterr().out)["settings"]
    return found


@pytest.mark.parametrize("value", ["", ",", "3,,5", " , "])
def test_empty_thresholds_are_an_error_not_the_defaults(
    capsys: pytest.CaptureFixture[str], log: str, value: str
) -> None:
    line = usage_error(capsys, ["audit", log, "--thresholds", value], "audit")
    assert "expected whole numbers separated by commas, like 3,5,8" in line


def test_list_options_do_not_swallow_the_file(capsys: pytest.CaptureFixture[str], log: str) -> None:
    found = settings(capsys, ["audit", "--exclude", "think", log, "--json"])
    assert found["exclude"] == ["think"]

    argv = ["audit", "--exclude", "think,todo_*", "--json", "--exclude", "plan", log]
    argv += ["--include", "job_*", "--include", "read_log"]
    found = settings(capsys, argv)
    assert found["exclude"] == ["think", "todo_*", "plan"]
    assert found["include"] == ["job_*", "read_log"]


def test_repeat_every_0_gets_a_command_line_message(
    capsys: pytest.CaptureFixture[str], log: str
) -> None:
    line = usage_error(capsys, ["audit", log, "--repeat-every", "0"], "audit")
    assert line == (
        "argument --repeat-every: expected a whole number >= 1, or leave the option out "
        "to stay silent; got '0'"
    )
    assert "None" not in line


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        ([], "the following arguments are required: {demo,audit,lab}"),
        (["--bogus"], "unrecognized arguments: --bogus"),  # not that a command is missing
        (["lint"], "argument {demo,audit,lab}: invalid choice: 'lint'"),
        (["audit"], "name the FILE(s) to audit, or a --checkpointer URL"),
        (["audit", "x.json", "--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["demo", "--mode", "loud"], "argument --mode: invalid choice: 'loud'"),
        (["demo", "--thresholds", "three"], "expected whole numbers separated by commas"),
        (["audit", "x", "--ignore-arguments", "no-equals-sign"], "expected TOOL=ARGUMENT"),
        (["audit", "x", "--ignore-arguments", "t=a,,b"], "expected TOOL=ARGUMENT"),
        (["audit", "x", "--exclude", "a,,b"], "expected names separated by commas, like think,"),
        (["demo", "--detect", ",,"], "expected names separated by commas, like repeat,stale; "),
        (["audit", "x", "--fail-on", "0"], "expected gentle, detailed or a number >= 1"),
        (["audit", "x", "--top", "zero"], "expected a whole number >= 1; got 'zero'"),
        (["demo", "--thresholds", "1,3"], "--thresholds: invalid threshold 1 — every"),
        (["demo", "--detect", "repeat,loops"], "--detect: unknown detector 'loops'"),
        (
            ["audit", "x", "--detect", "foo"],
            "argument --detect: unknown detector 'foo'; the detectors are "
            f"{', '.join(DETECTORS)}, all",
        ),
        (["demo", "--detect", "stale,repet"], "--detect: unknown detector 'repet'; did you mean"),
        (
            ["demo", "--detect", "all,stale"],
            "argument --detect: all names every detector: give all alone, or the detectors "
            "by name; got 'all,stale'",
        ),
        (["demo", "--error-pattern", "("], "--error-pattern: invalid regular expression"),
        (["demo", "--not-user", "("], "--not-user: invalid regular expression"),
        (
            ["demo", *ESCALATE_5],
            "--escalate-after: must be greater than every threshold of the repeat "
            "detector (the last is 8), got 5; pass --thresholds 3 (reminders before the stop) "
            "or --escalate-after ≥ 9",
        ),
        (
            ["demo", "--detect", "repeat,stale", "--stale-thresholds", "3,6", *ESCALATE_5],
            "pass --thresholds 3 and --stale-thresholds 3 (reminders before the stop) or "
            "--escalate-after ≥ 9",
        ),
        (
            ["demo", "--profile", "seed", "--exit-behavior", "error"],
            "--exit-behavior: applies only with --escalate-after set",
        ),
        (
            ["demo", "--thresholds", "1", "--stale-thresholds", "1", "--detect", "stale"],
            "--thresholds: invalid threshold 1 — every threshold must be an integer >= 2; "
            "--stale-thresholds: invalid threshold 1",
        ),
    ],
)
def test_every_error_is_one_line_the_usage_and_exit_code_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], wanted: str
) -> None:
    command = argv[0] if argv[:1] in (["demo"], ["audit"]) else ""
    assert wanted in usage_error(capsys, argv, command)


def test_the_usage_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the following arguments are required: {demo,audit,lab}",
        "usage: repeat-reminder demo [options], repeat-reminder audit FILE... [options], or "
        "repeat-reminder lab; repeat-reminder --help says more",
    ]
    assert main(["demo", "--top", "3"]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        "usage: repeat-reminder demo [options]; repeat-reminder demo --help lists them"
    )
    assert main(["audit"]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        "usage: repeat-reminder audit FILE... | --checkpointer URL [options]; "
        "repeat-reminder audit --help lists them"
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"repeat-reminder-langchain {__version__}\n"


def test_help_defines_every_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--help"]) == 0
    out = capsys.readouterr().out
    for column in ("calls", "longest", "streaks", "gentle", "detailed", "escalated", "wasted"):
        assert f"\n  {column} " in out
    for word in ("conversation (its index", "message (the", "tokens: the", "--fail-on"):
        assert word in out
    assert main(["demo", "--help"]) == 0
    assert "error prints the RepeatToolLoopError on one line and exits 1" in (
        " ".join(capsys.readouterr().out.split())
    )


def test_every_guard_option_reaches_the_config(
    capsys: pytest.CaptureFixture[str], log: str
) -> None:
    argv = ["audit", log, "--json", "--thresholds", "2, 4", "--repeat-every", "2"]
    argv += ["--ignore-arguments", "job_status=trace_id,span", "--ignore-arguments", "x=y"]
    argv += ["--ignore-arguments", "job_status=more", "--progress", "result"]
    argv += ["--detect", "all", "--stale-thresholds", "4", "--same-error-thresholds", "2,6"]
    argv += ["--recurring-error-thresholds", "4", "--cycle-thresholds", "2"]
    argv += ["--same-output-thresholds", "5"]
    argv += ["--error-pattern", "^Error", "--arguments-preview-chars", "40"]
    argv += ["--escalate-after", "7", "--exit-behavior", "block", "--not-user", "EXACTLY ONE"]

    assert settings(capsys, argv) == {
        "thresholds": [2, 4],
        "include": [],
        "exclude": list(BOOKKEEPING_TOOLS),
        "arguments_preview_chars": 40,
        "message_type": "system",
        "repeat_every": 2,
        "ignore_arguments": {"job_status": ["trace_id", "span", "more"], "x": ["y"]},
        "progress": "result",
        "mode": "remind",
        "detect": list(DETECTORS),
        "detectors": {
            "stale": {"thresholds": [4]},
            "same_error": {"thresholds": [2, 6]},
            "recurring_error": {"thresholds": [4]},
            "cycle": {"thresholds": [2]},
            "same_output": {"thresholds": [5]},
        },
        "error_pattern": "^Error",
        "not_user": "EXACTLY ONE",
        "escalate_after": 7,
        "exit_behavior": "block",
        "words": {},
        "log_arguments": False,
        "normalise_results": True,
        "profile": "default",
    }


def test_every_field_is_an_option_or_said_not_to_be() -> None:
    # The options are made from the fields: a field added to ReminderConfig is an option of
    # the demo and the audit (the demo's own aside), or _NOT_OFFERED says why not.
    commands = next(
        action
        for action in cli._parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    demo, audit = ({a.dest for a in commands.choices[c]._actions} for c in ("demo", "audit"))
    fields = set(ReminderConfig.model_fields)
    assert fields - demo == set(cli._NOT_OFFERED) != set()
    assert not demo & set(cli._NOT_OFFERED)
    demo_only = {name for name, offer in cli._OFFERS.items() if offer.demo_only}
    assert demo_only and demo_only <= fields
    assert fields & audit == fields & demo - demo_only
    assert set(short_forms()) <= demo & audit
    assert set(cli._OFFERS) <= fields - set(cli._NOT_OFFERED)


def test_a_field_the_command_line_cannot_read_is_no_option() -> None:
    with pytest.raises(
        TypeError, match=re.escape("flag: the command line has no form for <class 'bool'>")
    ):
        cli._kind("flag", FieldInfo.from_annotation(bool), "")


@pytest.mark.parametrize(
    ("option", "least"), [("--arguments-preview-chars", 1), ("--escalate-after", 2)]
)
def test_a_count_option_takes_what_its_field_takes(
    capsys: pytest.CaptureFixture[str], option: str, least: int
) -> None:
    line = usage_error(capsys, ["demo", option, str(least - 1)], "demo")
    assert line == f"argument {option}: expected a whole number >= {least}; got '{least - 1}'"


def test_the_help_lines_are_the_fields_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for said in (
        "--thresholds N,N,... run lengths of identical calls that draw a reminder (default 3,5,8)",
        "--include PATTERN,... tools to track (* matches anything); repeatable",
        "--progress {none,result,auto} result: the same call with a new result starts a new "
        "run (default result)",
        "--escalate-after N stop the loop at this count, as --exit-behavior says",
        "--exit-behavior {end,finish,error,interrupt,block} how the guard stops a loop "
        "(default finish); at --escalate-after; block needs the middleware, so the demo "
        "refuses it",
        "--message-type {system,human} send reminders as system messages (default) or as "
        "tagged user messages",
    ):
        assert said in out
    assert main(["audit", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "how the guard stops a loop (default finish); at --escalate-after" in out
    assert "the demo refuses it" not in out
    assert "--message-type" not in out


def test_python_m_runs_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["repeat_reminder_langchain", "demo", "--thresholds", "2"])
    monkeypatch.delitem(sys.modules, "repeat_reminder_langchain.__main__", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("repeat_reminder_langchain", run_name="__main__")
    assert exit_info.value.code == 0
    assert "[gentle · job_status × 2]" in capsys.readouterr().out


def test_the_usage_line_names_the_command_as_it_was_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: repeat-reminder audit [-h]")

    monkeypatch.setattr(sys, "argv", ["repeat_reminder_langchain", "--help"])
    monkeypatch.delitem(sys.modules, "repeat_reminder_langchain.__main__", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        # As `python -m` runs it: the package's __main__ is the running program's.
        runpy.run_module("repeat_reminder_langchain", run_name="__main__", alter_sys=True)
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m repeat_reminder_langchain [-h]")


def test_the_console_script_calls_itself_by_its_name() -> None:
    script = Path(sys.executable).with_name("repeat-reminder")
    if not script.exists():
        pytest.skip("the project is not installed in this environment (pip install -e .)")
    done = subprocess.run([script, "demo", "--help"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("usage: repeat-reminder demo [-h]")


def test_importing_the_main_module_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module("repeat_reminder_langchain.__main__")
    assert module.run is cli.run
    assert capsys.readouterr().out == ""


def closed_pipe() -> int:
    """The writing end of a pipe whose reader is gone, as `| head -1` leaves it once done."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("command", ["demo", "audit"])
def test_output_piped_to_a_reader_that_stops_early(command: str, log: str) -> None:
    argv = [command] if command == "demo" else [command, log]
    pipe = closed_pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "repeat_reminder_langchain", *argv],
            stdout=pipe,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(pipe)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_reader_gone_away_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # In this process too (the subprocesses above are not measured for coverage).
    with os.fdopen(closed_pipe(), "w") as pipe:
        monkeypatch.setattr(sys, "stdout", pipe)
        assert main(["demo"]) == 0
        monkeypatch.undo()


# -- settings in a file -----------------------------------------------------------------------


def test_a_settings_file_is_read_and_options_go_over_it(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    path = tmp_path / "guard.toml"
    path.write_text('thresholds = [2, 4]\nexclude = ["think"]\n', encoding="utf-8")
    found = settings(capsys, ["audit", log, "--json", "--config", str(path), "--thresholds", "5"])

    assert (found["thresholds"], found["exclude"]) == ([5], ["think"])


STALE_OFF = "settings for stale, which is not detected: add it to {}, or leave the settings out"


def test_a_warning_of_the_settings_is_one_line_naming_the_file(tmp_path: Path) -> None:
    # The real command, as a user runs it: not Python's form, which names `sys.exit(main())`.
    (tmp_path / "keep.toml").write_text("stale_thresholds = [4]\n", encoding="utf-8")
    command = [sys.executable, "-m", "repeat_reminder_langchain", "demo", "--config", "keep.toml"]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr.splitlines() == [f"warning: keep.toml: {STALE_OFF.format('detect')}"]


def test_a_warning_of_the_settings_names_the_file_or_the_options_that_draw_it(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    keep = tmp_path / "keep.toml"
    keep.write_text("stale_thresholds = [4]\n", encoding="utf-8")
    both = tmp_path / "both.toml"
    both.write_text('detect = ["repeat", "stale"]\nstale_thresholds = [4]\n', encoding="utf-8")
    for options, source, detect in [
        (["--stale-thresholds", "2"], "the options", "--detect"),  # in the options' words
        (["--config", str(keep), "--thresholds", "2,4"], str(keep), "detect"),  # the file's alone
        (["--config", str(both), "--detect", "repeat"], f"{both} with the options", "detect"),
        (["--config", str(both)], None, ""),  # stale is detected: nothing to say
    ]:
        assert main(["audit", log, "--json", *options]) == 0
        said = capsys.readouterr().err.splitlines()
        assert said == (
            [] if source is None else [f"warning: {source}: {STALE_OFF.format(detect)}"]
        )


@pytest.mark.parametrize("name", ["used.toml", "used.json"])
def test_the_settings_in_use_are_written_for_the_guard_to_read(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    argv = ["audit", log, "--json", "--detect", "repeat,stale", "--exclude", "think"]
    used = settings(capsys, [*argv, "--write-config", str(path)])

    assert ReminderConfig.from_file(path) == ReminderConfig(
        detect=["repeat", "stale"], exclude=["think"]
    )
    assert used["detect"] == ["repeat", "stale"]
    assert settings(capsys, ["audit", log, "--json", "--config", str(path)]) == used


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("threshold = [3]\n", "unknown setting 'threshold'; did you mean 'thresholds'?"),
        ("thresholds = [1]\n", "thresholds: invalid threshold 1"),
        ("thresholds = [3\n", "not TOML: "),
    ],
)
def test_a_settings_file_that_is_wrong_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "guard.toml"
    path.write_text(text, encoding="utf-8")
    line = usage_error(capsys, ["audit", log, "--config", str(path)], "audit")
    assert line.startswith(f"{path}: {problem}")


@pytest.mark.parametrize(
    "case",
    [
        (  # the option's problem: named as the option, its way out in options
            "thresholds = [3]",
            ["--escalate-after", "3"],
            "--escalate-after: must be greater than every threshold of the repeat detector (the "
            "last is 3), got 3; pass --escalate-after ≥ 4",
        ),
        (  # the file's problem, which an option made: the file's names, the option as option
            "escalate_after = 9",
            ["--thresholds", "3,10"],
            "escalate_after: must be greater than every threshold of the repeat detector (the "
            "last is 10), got 9; pass --thresholds 3 (reminders before the stop) or "
            "escalate_after ≥ 11 (from the option --thresholds: {path} alone is valid)",
        ),
    ],
    ids=["option", "file made wrong by an option"],
)
def test_a_problem_of_a_file_and_options_names_each_as_it_was_given(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path, case: tuple[str, list[str], str]
) -> None:
    stored, options, problem = case
    path = tmp_path / "guard.toml"
    path.write_text(stored + "\n", encoding="utf-8")
    argv = ["audit", log, "--config", str(path), *options]
    assert usage_error(capsys, argv, "audit").startswith(problem.format(path=path))


def test_settings_that_cannot_be_written_stop_before_the_audit(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    argv = ["audit", log, "--write-config", str(tmp_path / "a.ini")]
    assert usage_error(capsys, argv, "audit").endswith("a settings file is .toml or .json")
    assert main(["audit", log, "--write-config", str(tmp_path / "none" / "a.toml")]) == 2
    assert "cannot write the settings (No such file or directory)" in capsys.readouterr().err


def test_the_demo_reads_a_settings_file_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "guard.json"
    path.write_text(
        '{"thresholds": [2, 3], "escalate_after": 4, "exit_behavior": "end"}', encoding="utf-8"
    )
    assert main(["demo", "--config", str(path)]) == 0
    assert "Stopped: the agent was looping on `job_status`" in capsys.readouterr().out
    path.write_text('{"escalate_after": 3}', encoding="utf-8")
    line = usage_error(capsys, ["demo", "--config", str(path)], "demo")
    assert line.startswith(f"{path}: escalate_after: must be greater than every threshold")


def test_settings_are_never_written_over_a_file_unless_asked(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    path = tmp_path / "keep.toml"
    kept = 'escalate_after = 12\n\n[words.repeat]\ngentle = "Mind {tool}."\n'
    path.write_text(kept, encoding="utf-8")
    for suggest in ([], ["--suggest"]):
        argv = ["audit", log, *suggest, "--write-config", str(path)]
        assert usage_error(capsys, argv, "audit") == (
            f"--write-config {path}: the file is there already; name another, or add "
            "--overwrite to replace it"
        )
        assert path.read_text(encoding="utf-8") == kept

    argv = ["audit", log, "--thresholds", "2", "--write-config", str(path), "--overwrite"]
    assert main(argv) == 0
    capsys.readouterr()
    assert ReminderConfig.from_file(path) == ReminderConfig(thresholds=[2])
    line = usage_error(capsys, ["audit", log, "--overwrite"], "audit")
    assert line == "--overwrite goes with --write-config FILE or --html FILE"


def test_a_report_is_never_written_over_a_file_unless_asked(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    # It was: the file was emptied as the audit began, and removed if the audit then failed.
    report = tmp_path / "mine.html"
    report.write_text("my own page", encoding="utf-8")
    argv = ["audit", log, "--html", str(report)]
    assert usage_error(capsys, argv, "audit") == (
        f"--html {report}: the file is there already; name another, or add --overwrite to "
        "replace it"
    )
    assert report.read_text(encoding="utf-8") == "my own page"
    assert main([*argv, "--overwrite"]) == 0
    capsys.readouterr()
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("fails", ["bad input", "missing input", "ctrl-c"])
@pytest.mark.parametrize("option", ["--html", "--write-config"])
def test_a_file_replaced_stays_whole_when_the_audit_fails_or_is_interrupted(  # noqa: PLR0917
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    log: str,
    tmp_path: Path,
    option: str,
    fails: str,
) -> None:
    # It was: --overwrite emptied (or removed) the file as the audit began, and a failure or
    # Ctrl-C then left nothing of it.
    from repeat_reminder_langchain.tooling.audit import Auditor

    mine = tmp_path / ("mine.html" if option == "--html" else "mine.toml")
    mine.write_text("thresholds = [4]\n", encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    source = {"bad input": str(bad), "missing input": str(tmp_path / "gone.json")}.get(fails, log)
    if fails == "ctrl-c":
        interrupt_at(monkeypatch, Auditor, "add", 1)
    assert main(["audit", source, option, str(mine), "--overwrite"]) == (
        130 if fails == "ctrl-c" else 2
    )
    capsys.readouterr()
    assert mine.read_text(encoding="utf-8") == "thresholds = [4]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["mine.html" if option == "--html" else "mine.toml", "run.json", "bad.json"]
    )  # nothing left beside it


@pytest.mark.parametrize("option", ["--html", "--write-config"])
def test_an_output_that_is_an_input_is_refused_before_anything_is_read(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path, option: str
) -> None:
    # It was: `audit in.json --html in.json --overwrite` deleted in.json, and --write-config
    # emptied it.
    kept = Path(log).read_text(encoding="utf-8")
    alias = tmp_path / "alias.json"
    alias.symlink_to(log)
    for named in (log, str(alias), os.path.join(tmp_path, ".", "run.json")):
        argv = ["audit", log, option, named, "--overwrite"]
        line = usage_error(capsys, argv, "audit")
        assert line == f"{option} {named}: that is {log}, which the audit reads; name another file"
    glob_argv = ["audit", str(tmp_path / "*.json"), option, log, "--overwrite"]
    assert "which the audit reads" in usage_error(capsys, glob_argv, "audit")
    assert Path(log).read_text(encoding="utf-8") == kept


def test_two_outputs_on_one_file_are_refused(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    # It was: both were said to be written, and the settings were lost under the report.
    same = tmp_path / "same.toml"
    argv = ["audit", log, "--write-config", str(same), "--html", str(same)]
    assert usage_error(capsys, argv, "audit") == (
        f"--write-config {same} and --html {same} are one file: name two"
    )
    assert not same.exists()


@pytest.mark.parametrize("option", ["--html", "--write-config"])
def test_an_output_that_is_a_directory_says_so(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path, option: str
) -> None:
    # It was: "the file is there already", and --overwrite then failed on it.
    folder = tmp_path / "out.toml"
    folder.mkdir()
    for more in ([], ["--overwrite"]):
        line = usage_error(capsys, ["audit", log, option, str(folder), *more], "audit")
        assert line == f"{option} {folder}: a directory, not a file"


@pytest.mark.parametrize("command", [["demo"], ["audit", "{log}"], ["lab", "--model", "m"]])
@pytest.mark.parametrize("name", ["settings", "settings.toml"])
def test_a_settings_file_that_is_a_directory_says_so(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path, command: list[str], name: str
) -> None:
    # It was: "a settings file is .toml or .json", or "cannot be read: Is a directory".
    folder = tmp_path / name
    folder.mkdir()
    argv = [part.format(log=log) for part in command] + ["--config", str(folder)]
    line = usage_error(capsys, argv, command[0])
    assert line == f"{folder}: a directory, not a settings file"


@pytest.mark.parametrize("option", ["--html", "--write-config"])
def test_a_place_taken_during_the_audit_is_one_line_and_nothing_else_moves(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    log: str,
    tmp_path: Path,
    option: str,
) -> None:
    from repeat_reminder_langchain.tooling.audit import Auditor

    target = tmp_path / ("report.html" if option == "--html" else "guard.toml")
    add = Auditor.add

    def taken(self: Auditor, conversation: object) -> None:  # a directory made meanwhile
        target.mkdir(exist_ok=True)
        (target / "inside").touch()
        add(self, conversation)  # type: ignore[arg-type]

    monkeypatch.setattr(Auditor, "add", taken)
    what = "report" if option == "--html" else "settings"
    assert one_error(capsys, ["audit", log, option, str(target)]) == (
        f"{target}: cannot write the {what} (Is a directory)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name, "run.json"]


def test_settings_toml_cannot_hold_are_said_after_the_audit_and_nothing_is_written(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    given = tmp_path / "given.json"
    given.write_text('{"escalate_after": null}', encoding="utf-8")
    path = tmp_path / "guard.toml"
    argv = ["audit", log, "--config", str(given), "--write-config", str(path)]
    assert usage_error(capsys, argv, "audit").startswith(
        "escalate_after: None cannot be written to TOML"
    )
    assert not path.exists()


def test_settings_with_nothing_to_change_are_written_after_the_audit_and_say_so(
    capsys: pytest.CaptureFixture[str], log: str, tmp_path: Path
) -> None:
    # It was: a one-byte file, written before the audit and left when the audit failed.
    path = tmp_path / "guard.toml"
    assert main(["audit", str(tmp_path / "gone.json"), "--write-config", str(path)]) == 2
    assert not path.exists()
    assert main(["audit", log, "--write-config", str(path)]) == 0
    capsys.readouterr()
    assert path.read_text(encoding="utf-8") == "# The defaults fit: no setting to change.\n"
    assert ReminderConfig.from_file(path) == ReminderConfig()


def interrupt_at(monkeypatch: pytest.MonkeyPatch, owner: type, name: str, at: int) -> None:
    """`owner.name` raises KeyboardInterrupt at its `at`-th call, as Ctrl-C would there."""
    original = getattr(owner, name)
    calls = [0]

    def interrupted(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] == at:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, interrupted)


@pytest.mark.parametrize("command", ["demo", "audit", "suggest"])
def test_ctrl_c_is_one_line_and_exit_code_130(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    log: str,
    tmp_path: Path,
    command: str,
) -> None:
    from repeat_reminder_langchain.tooling._suggest import Suggester
    from repeat_reminder_langchain.tooling.audit import Auditor
    from repeat_reminder_langchain.tooling.demo import PollingModel

    report = tmp_path / "report.html"
    argv, owner, name, at = {
        "demo": (["demo"], PollingModel, "_generate", 3),  # the model's third call
        "audit": (["audit", log, "--html", str(report)], Auditor, "add", 1),
        "suggest": (["audit", log, "--suggest"], Suggester, "add", 1),
    }[command]
    interrupt_at(monkeypatch, owner, name, at)
    assert main(argv) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert not report.exists()  # no half-written report left behind
