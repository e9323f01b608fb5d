"""Auditing saved conversations from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import messages_to_dict

from repeat_reminder_langchain import ReminderConfig, RepeatToolReminderCallbackHandler
from repeat_reminder_langchain.__main__ import main
from repeat_reminder_langchain.audit import audit, load_conversations
from repeat_reminder_langchain.demo import run_demo

UNGUARDED = messages_to_dict(run_demo(None))
GUARDED = messages_to_dict(run_demo(RepeatToolReminderCallbackHandler()))


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("name", "text", "conversations"),
    [
        ("one.json", json.dumps(UNGUARDED), 1),
        ("many.json", json.dumps([UNGUARDED, GUARDED]), 2),
        ("one.jsonl", "\n".join(json.dumps(m) for m in UNGUARDED) + "\n\n", 1),
        ("many.jsonl", f"{json.dumps(UNGUARDED)}\n{json.dumps(GUARDED)}\n", 2),
    ],
)
def test_every_file_shape_loads(tmp_path: Path, name: str, text: str, conversations: int) -> None:
    assert len(load_conversations(write(tmp_path, name, text))) == conversations


def test_the_table_shows_per_tool_streaks_and_would_be_reminders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "runs.json", json.dumps([UNGUARDED, GUARDED]))

    assert main(["audit", path]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "2 conversations · 19 tool calls · thresholds 3, 5, 8",
        "tool        calls  longest  streaks  gentle  detailed",
        "job_status     17       12        2       2         3",
        "read_log        2        1        0       0         0",
    ]


def test_options_change_the_audit_and_json_is_available(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "run.json", json.dumps(UNGUARDED))
    argv = ["audit", path, "--json", "--thresholds", "4", "--repeat-every", "4"]
    argv += ["--exclude", "read_*", "--progress", "result"]
    argv += ["--ignore-arguments", "job_status=trace_id"]

    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == {
        "conversations": 1,
        "calls": 13,
        "tools": {
            "job_status": {"calls": 12, "longest": 12, "streaks": 1, "gentle": 1, "detailed": 2},
            "read_log": {"calls": 1, "longest": 0, "streaks": 0, "gentle": 0, "detailed": 0},
        },
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "line 1 is not JSON (Expecting property name enclosed in double quotes)"),
        ("[]", "expected a JSON list of message dicts, a list of such lists, or JSONL"),
        ('{"a": 1}', "expected a JSON list of message dicts"),
        ('[{"type": "human", "data": {"content": "x"}}, []]', "mixes message dicts and"),
        ('[{"no": "type"}]', "conversation 1 holds something that is not a LangChain message"),
        ('[[{"type": "martian", "data": {}}]]', "conversation 1 holds something"),
    ],
)
def test_a_bad_file_gets_one_error_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = write(tmp_path, "bad.json", text)

    assert main(["audit", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"error: {path}: ")
    assert message in line


def test_a_missing_or_undecodable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", str(tmp_path / "nowhere.json")]) == 2
    assert "cannot read it (FileNotFoundError" in capsys.readouterr().err
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    assert main(["audit", str(binary)]) == 2
    assert "cannot read it (UnicodeDecodeError" in capsys.readouterr().err


def test_bad_options_say_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "run.json", json.dumps(UNGUARDED))
    assert main(["audit", path, "--repeat-every", "0"]) == 2
    assert "invalid repeat_every 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["audit", path, "--ignore-arguments", "no-equals-sign"])
    assert "expected TOOL=ARGUMENT" in capsys.readouterr().err


def test_the_audit_counts_as_the_guard_ran() -> None:
    (guarded,) = load_conversations_from(GUARDED)
    result = audit([guarded], ReminderConfig())
    assert (result.tools["job_status"].gentle, result.tools["job_status"].detailed) == (1, 1)


def load_conversations_from(data: list[dict[str, object]]) -> list[object]:
    from langchain_core.messages import messages_from_dict

    return [messages_from_dict(data)]


def test_the_table_says_which_rules_it_counted_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "runs.json", json.dumps([UNGUARDED, GUARDED]))
    argv = ["audit", path, "--thresholds", "2,4", "--repeat-every", "2", "--exclude", "read_*"]
    argv += ["--ignore-arguments", "job_status=trace,x", "--progress", "result"]

    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "2 conversations · 19 tool calls · thresholds 2, 4 · exclude read_* · repeat every 2 · "
        "ignore arguments job_status: trace, x · progress result"
    )
