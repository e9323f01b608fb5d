"""The audit of saved conversations: the formats it reads, what it finds, and how it fails."""

from __future__ import annotations

import gzip
import io
import json
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

from repeat_reminder_langchain import ReminderConfig, RepeatToolReminderCallbackHandler
from repeat_reminder_langchain.tooling import _cli as cli
from repeat_reminder_langchain.tooling._cli import main
from repeat_reminder_langchain.tooling._logs import LogError, LogReader, to_messages
from repeat_reminder_langchain.tooling._progress import LARGE, ProgressBar
from repeat_reminder_langchain.tooling.audit import audit, detectors, format_audit
from repeat_reminder_langchain.tooling.demo import run_demo

from ..helpers import SHIPPED

UNGUARDED = messages_to_dict(run_demo(None))
GUARDED = messages_to_dict(run_demo(RepeatToolReminderCallbackHandler()))


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def openai_loop(times: int, tool: str = "get_order", result: str = "pending") -> list[Any]:
    """An OpenAI chat log of `times` identical calls, with usage on each assistant message."""
    messages: list[Any] = [{"role": "system", "content": "be useful"}]
    messages.append({"role": "user", "content": "where is my order?"})
    for number in range(times):
        messages.append({
            "role": "assistant",
            "content": None,
            "tool_calls": [{
                "id": f"call_{number}",
                "type": "function",
                "function": {"name": tool, "arguments": '{"order": "A1"}'},
            }],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        })  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": f"call_{number}", "content": result})
    messages.append({"role": "assistant", "content": "it is pending"})
    return messages


def anthropic_loop(times: int) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": "fix the build"}]
    for number in range(times):
        messages.append({
            "role": "assistant",
            "content": [
                {"type": "text", "text": "trying"},
                {"type": "tool_use", "id": f"tu_{number}", "name": "bash",
                 "input": {"command": "make"}},
            ],
            "usage": {"input_tokens": 50, "output_tokens": 5, "cache_read_input_tokens": 20},
        })  # fmt: skip
        messages.append({
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"tu_{number}",
                         "content": [{"type": "text", "text": "make: *** Error 1"}],
                         "is_error": True}],
        })  # fmt: skip
    return messages


def read(*sources: str, **options: Any) -> list[Any]:
    return list(LogReader(**options).read(list(sources)))


def run_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main([*argv, "--json"]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


# --- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "conversations"),
    [
        ("one.json", json.dumps(UNGUARDED), 1),
        ("pretty.json", json.dumps(UNGUARDED, indent=2), 1),
        ("many.json", json.dumps([UNGUARDED, GUARDED]), 2),
        ("many-pretty.json", json.dumps([UNGUARDED, GUARDED], indent=1), 2),
        ("one.jsonl", "\n".join(json.dumps(m) for m in UNGUARDED) + "\n\n", 1),
        ("many.jsonl", f"{json.dumps(UNGUARDED)}\n{json.dumps(GUARDED)}\n", 2),
        ("lines.txt", f"\n{json.dumps(UNGUARDED)}\n{json.dumps(GUARDED)}\n", 2),
        ("records.json", json.dumps([{"messages": UNGUARDED}, {"messages": GUARDED}]), 2),
        ("record.json", json.dumps({"messages": UNGUARDED}, indent=2), 1),
        ("concatenated.json", json.dumps({"messages": UNGUARDED}, indent=2) * 2, 2),
        ("openai.json", json.dumps(openai_loop(4), indent=2), 1),
        ("anthropic.jsonl", json.dumps({"id": "x", "messages": anthropic_loop(2)}), 1),
        ("nested.jsonl", json.dumps([[UNGUARDED[0]], [GUARDED[0]]]), 2),
    ],
)
def test_every_file_shape_loads(tmp_path: Path, name: str, text: str, conversations: int) -> None:
    if name.startswith("concatenated"):
        pytest.importorskip("ijson", reason="several documents in one file need the audit extra")
    found = read(write(tmp_path, name, text))
    assert len(found) == conversations
    assert [c.index for c in found] == list(range(conversations))


def test_the_formats_are_detected_per_conversation(tmp_path: Path) -> None:
    lines = [
        json.dumps(UNGUARDED),
        json.dumps({"task_id": 7, "reward": 0, "traj": openai_loop(1)}),
        json.dumps({"session_id": "s-1", "messages": anthropic_loop(1)}),
    ]
    found = read(write(tmp_path, "mixed.jsonl", "\n".join(lines)))

    assert [(c.format, c.id) for c in found] == [
        ("langchain", None), ("openai", "7"), ("anthropic", "s-1"),
    ]  # fmt: skip


def test_openai_messages_become_langchain_messages() -> None:
    items = openai_loop(1)
    items[2]["tool_calls"].append(
        {"id": "bad", "function": {"name": "get_order", "arguments": "{not json"}}
    )
    items[2]["tool_calls"].append({"id": "list", "function": {"name": "x", "arguments": "[1]"}})
    items.insert(4, {"role": "tool", "tool_call_id": "bad", "content": None, "status": "error"})
    items.append({"role": "assistant", "function_call": {"name": "old", "arguments": ""}})
    items.append({"role": "developer", "content": [{"type": "text", "text": "be brief"}, "ok"]})
    messages, positions, kind = to_messages(items)

    assert kind == "openai"
    turn = messages[2]
    assert isinstance(turn, AIMessage)
    assert turn.tool_calls[0]["args"] == {"order": "A1"}
    assert [(c["name"], c["error"]) for c in turn.invalid_tool_calls] == [
        ("get_order", "Expecting property name enclosed in double quotes"),
        ("x", "arguments are not an object"),
    ]
    assert turn.usage_metadata == {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
    failed = messages[4]
    assert isinstance(failed, ToolMessage) and failed.status == "error" and failed.content == ""
    assert messages[-2].tool_calls == [{"name": "old", "args": {}, "id": "", "type": "tool_call"}]  # type: ignore[attr-defined]
    assert messages[-1].content == "be brief\nok"
    assert positions == tuple(range(len(items)))


def test_anthropic_tool_results_are_tool_messages_not_the_user_speaking() -> None:
    items = anthropic_loop(1)
    items.append({
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "tu_x", "content": {"rows": 1}},
            {"type": "text", "text": "also, hurry"},
        ],
    })  # fmt: skip
    messages, positions, kind = to_messages(items)

    assert kind == "anthropic"
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "HumanMessage",
    ]  # fmt: skip
    assert positions == (0, 1, 2, 3, 3)
    assert messages[1].tool_calls[0]["args"] == {"command": "make"}  # type: ignore[attr-defined]
    assert messages[1].usage_metadata == {  # type: ignore[attr-defined]
        "input_tokens": 70, "output_tokens": 5, "total_tokens": 75,
    }  # fmt: skip
    assert (messages[2].status, messages[2].content) == ("error", "make: *** Error 1")  # type: ignore[attr-defined]
    assert messages[3].content == '{"rows": 1}'
    assert messages[4].content == "also, hurry"


def test_loose_langchain_dicts_and_odd_contents() -> None:
    items = [
        {"type": "human", "content": None},
        {"type": "ai", "content": "", "tool_calls": [{"name": "ls", "args": {}, "id": "1"}]},
        {"type": "tool", "content": 3, "tool_call_id": "1"},
        {"role": "user", "content": [{"type": "image", "url": "x"}]},
    ]
    messages, _, kind = to_messages(items)

    assert kind == "openai"
    assert [m.content for m in messages] == ["", "", "3", ""]
    assert messages[1].tool_calls[0]["name"] == "ls"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("items", "wanted"),
    [
        ([{"role": "wizard", "content": "x"}], "message 0: unknown role 'wizard'"),
        ([{"role": "user"}, 3], "message 1 is a number, not a message of a known format"),
        ([{"type": "human", "data": {}}], "message 0 is not a LangChain message dict"),
    ],
)
def test_a_message_of_no_known_format_says_which(items: list[Any], wanted: str) -> None:
    with pytest.raises(LogError) as raised:
        to_messages(items)
    assert wanted in str(raised.value)


def test_gzip_bom_globs_and_standard_input(tmp_path: Path) -> None:
    text = json.dumps(UNGUARDED)
    write(tmp_path, "a.json.gz", gzip.compress(b"\xef\xbb\xbf" + text.encode()))
    write(tmp_path, "b.jsonl", "\ufeff" + text + "\n" + text)
    write(tmp_path, "c.json", json.dumps([UNGUARDED], indent=2).encode("utf-8-sig"))
    reader = LogReader(stdin=io.BytesIO(gzip.compress(text.encode())))
    found = list(reader.read([str(tmp_path / "*.json*"), "-"]))

    assert [(Path(c.source).name, c.index) for c in found] == [
        ("a.json.gz", 0), ("b.jsonl", 1), ("b.jsonl", 2), ("c.json", 3), ("-", 4),
    ]  # fmt: skip
    assert reader.read_bytes == sum(p.stat().st_size for p in tmp_path.iterdir()) + len(
        gzip.compress(text.encode())
    )


def test_ids_come_from_the_record_or_the_field_named(tmp_path: Path) -> None:
    records = [
        {"id": True, "task_id": 3, "traj": UNGUARDED},
        {"run": "r-9", "messages": UNGUARDED},
    ]
    path = write(tmp_path, "records.json", json.dumps(records))

    assert [c.id for c in read(path)] == ["3", None]
    assert [c.id for c in read(path, id_key="run")] == [None, "r-9"]


def test_the_messages_key_picks_one_of_several_lists(tmp_path: Path) -> None:
    record = {"input": UNGUARDED[:1], "output": {"messages": UNGUARDED}}
    path = write(tmp_path, "record.json", json.dumps(record))

    found = read(path, messages_key="output.messages")
    assert len(found[0].messages) == len(UNGUARDED)
    with pytest.raises(LogError, match=r"the record has no field 'output\.nothing'"):
        read(path, messages_key="output.nothing")
    both = write(tmp_path, "both.json", json.dumps({"a": UNGUARDED, "b": UNGUARDED}))
    with pytest.raises(LogError, match="the fields 'a', 'b' all hold messages: name one with"):
        read(both)


@pytest.mark.parametrize(
    ("name", "text", "wanted"),
    [
        (
            "trunc.json",
            json.dumps(UNGUARDED, indent=2)[:300],
            "{}:15:5: not JSON (Unterminated string",
        ),
        (
            "bad.json",
            '[\n  {"role": "user"},\n  {"role": x}\n]',
            "{}:3:12: not JSON (Expecting value)",
        ),
        ("two.json", '[\n{"role": "user"}\n] [2]', "{}:3:3: not JSON (Extra data)"),
        (
            "bad.jsonl",
            '[{"role": "user"}]\n{"role": nope}\n',
            "{}:2:10: not JSON (Expecting value)",
        ),
        ("latin.jsonl", b'[{"role": "user", "content": "caf\xe9"}]\n', "{}:1:34: not UTF-8 text"),
        ("latin.json", b'[\n{"role": "user", "content": "caf\xe9"}]', "{}:2:33: not UTF-8 text"),
        ("empty.json", "\n\n", "{}: empty: it holds no conversations"),
        ("nothing.json", "[]", "{}: holds no conversations"),
        ("nothing-pretty.json", "[\n]", "{}: holds no conversations"),
        ("scalar.jsonl", "3\n", "{}:1: expected a conversation or a record, got a number"),
        ("strings.json", '["a", "b"]', "{}:1: a list of conversations holds something else"),
        ("mixed.jsonl", '{"role": "user"}\n[{"role": "user"}]\n', "{}:2: mixes single messages"),
        (
            "record.json",
            '{"task": 1, "reward": 0}',
            "{}:1: a record with no list of messages (its fields: 'task', 'reward')",
        ),
        (
            "unknown.json",
            '[{"role": "alien", "content": ""}]',
            "{}:1: message 0: unknown role 'alien'",
        ),
        (
            "inner.json",
            '[[{"role": "user"}], 4]',
            "{}:1: a list of conversations holds something else",
        ),
        ("badgz.json", b"\x1f\x8b\x08\x00not really gzip", "{}: cannot read it ("),
        (
            "strs.json",
            '[\n"a", null]',
            "{}: item 0: expected a conversation or a record, got a string",
        ),
    ],
)
def test_a_bad_file_gets_one_error_line_with_where_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str | bytes, wanted: str
) -> None:
    path = write(tmp_path, name, text)

    assert main(["audit", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"error: {wanted.format(path)}"), line


def test_a_sqlite_database_is_refused_with_the_way_to_audit_its_threads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    path = tmp_path / "checkpoints.sqlite"
    with closing(sqlite3.connect(path)) as database:
        database.execute("CREATE TABLE checkpoints (thread_id TEXT)")
        database.commit()
    monkeypatch.chdir(tmp_path)
    for name in ("checkpoints.sqlite", str(path)):  # relative, and absolute: sqlite:////PATH
        assert main(["audit", name]) == 2
        assert capsys.readouterr().err == (
            f"error: {name}: a SQLite database, not saved conversations; a LangGraph "
            f"checkpointer's threads are audited with --checkpointer sqlite:///{name}\n"
        )
    # It was: "not UTF-8 text", at some line and column of the database's pages.
    with pytest.raises(LogError, match=r"^-: a SQLite database, .* --checkpointer sqlite:///PATH$"):
        read("-", stdin=io.BytesIO(path.read_bytes()))


def test_an_empty_conversation_is_read_with_a_note_and_the_audit_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = {"id": "loop", "messages": openai_loop(3)}
    lines = [{"id": "e", "messages": []}, loop, {"messages": [], "tags": []}, [[]], []]
    path = write(tmp_path, "runs.jsonl", "\n".join(map(json.dumps, lines)))

    found = run_json(capsys, ["audit", path])
    # Nothing in them is bad, and there is nothing to count: each is a conversation read.
    assert found["conversations"] == 5
    assert found["skipped"] == 0
    assert [f["id"] for f in found["findings"]] == ["loop"]
    assert capsys.readouterr().err == ""  # said once, while reading (run_json read it)
    assert main(["audit", path, "--quiet"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"note: {path}:1: an empty conversation (the record's list 'messages' is empty): "
        "read, with nothing to count",
        f"note: {path}:3: an empty conversation (the record's lists 'messages', 'tags' are "
        "empty): read, with nothing to count",
        f"note: {path}:4: conversation 0: an empty conversation: read, with nothing to count",
        # A line `[]` was dropped, and nothing said so.
        f"note: {path}:5: an empty conversation: read, with nothing to count",
    ]
    # --suggest reads them twice, and says them once.
    assert main(["audit", path, "--suggest", "--quiet"]) == 0
    assert len(capsys.readouterr().err.splitlines()) == 4


def test_a_first_line_that_is_an_empty_list_is_an_empty_conversation_of_the_file(
    tmp_path: Path,
) -> None:
    # The file's first value alone could be a JSON file of no conversations (refused, above);
    # a line that follows makes it one line of JSON Lines: an empty conversation.
    said: list[str] = []
    lines = [[], {"id": "loop", "messages": openai_loop(3)}]
    path = write(tmp_path, "runs.jsonl", "\n".join(map(json.dumps, lines)))
    found = list(LogReader(note=said.append).read([path]))

    assert [bool(c.messages) for c in found] == [False, True]
    assert [c.index for c in found] == [0, 1]
    assert said == [f"{path}:1: an empty conversation: read, with nothing to count"]

    # So is an empty list in a JSON file's array of conversations (it was dropped unsaid).
    said.clear()
    pretty = write(tmp_path, "runs.json", json.dumps(lines, indent=2))
    found = list(LogReader(note=said.append).read([pretty]))
    assert [bool(c.messages) for c in found] == [False, True]
    assert said == [f"{pretty}: item 0: an empty conversation: read, with nothing to count"]


def test_many_empty_conversations_are_said_in_a_few_lines(tmp_path: Path) -> None:
    said: list[str] = []
    reader = LogReader(note=said.append)
    found = list(reader.read([write(tmp_path, "e.json", json.dumps([[]] * 8))]))

    assert [c.messages for c in found] == [[]] * 8
    assert reader.empty == 8
    assert said[4].endswith(
        "e.json:1: conversation 4: an empty conversation: read, with nothing to count"
    )
    assert said[5:] == ["more empty conversations: read, each with nothing to count"]


def test_missing_files_and_empty_globs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for source, wanted in [
        (str(tmp_path / "nowhere.json"), "no such file"),
        (str(tmp_path), "is a directory"),
        (str(tmp_path / "*.nothing"), "no file matches this pattern"),
    ]:
        assert main(["audit", source]) == 2
        assert capsys.readouterr().err == f"error: {source}: {wanted}\n"


def test_an_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "locked.json", "[]")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", refuse)
    with pytest.raises(LogError, match=r"locked\.json: cannot open it \(Permission denied\)"):
        read(path)


def test_stdin_errors_say_what_they_can(tmp_path: Path) -> None:
    pytest.importorskip("ijson", reason="the streaming parser's messages need the audit extra")
    reader = LogReader(stdin=io.BytesIO(b"[\n" + json.dumps(UNGUARDED).encode()[1:-1]))
    with pytest.raises(LogError, match=r"^-: not JSON \(parse error: premature EOF\)$"):
        list(reader.read(["-"]))


def test_skip_bad_counts_and_skips_what_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [json.dumps(UNGUARDED), "{truncated", "42", json.dumps({"id": 1}), json.dumps(GUARDED)]
    lines.append('{"role": "user", "content": "a lone message"}')
    path = write(tmp_path, "some-bad.jsonl", "\n".join(lines))

    assert main(["audit", path, "--skip-bad"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 conversations · 19 tool calls · 4 unreadable skipped · thresholds")
    assert f"skipped: {path}:2:2: not JSON (Expecting property name" in out
    assert f"skipped: {path}:6: mixes single messages and whole conversations" in out
    only_bad = write(tmp_path, "all-bad.jsonl", "{truncated\n")
    assert main(["audit", only_bad, "--skip-bad", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == 1


# --- what it finds -------------------------------------------------------------------------


def test_the_table_shows_per_tool_streaks_and_would_be_reminders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "runs.json", json.dumps([UNGUARDED, GUARDED]))

    assert main(["audit", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    # As installed: the default detectors, and the stop at 10 (escalate_after's default), which
    # the unguarded run's loop of 12 reaches once.
    assert lines[:9] == [
        "2 conversations · 19 tool calls · thresholds 3, 5, 8",
        "tool        calls  longest  streaks  gentle  detailed  escalated  wasted",
        "job_status     17       12        2       2         3          1      11",
        "read_log        2        1        0       0         0          0       0",
        "",
        "detector         reminders  escalations  conversations",
        "repeat                   5            1              2",
        "same_error               0            0              0",
        "recurring_error          0            0              0",
    ]
    assert "wasted calls: 11 in 2 conversations · tokens spent on them: not recorded" in lines[10]
    assert lines[lines.index("top 2 conversations by wasted calls") + 1 :][:3] == [
        "conversation  id  calls  reminders  wasted  tokens",
        "           0   —     13          3       9       —",
        "           1   —      6          2       2       —",
    ]
    # The guarded run holds the reminders the guard sent: they are marked.
    start = lines.index("findings: the reminders the guard sent (sent: yes) or would have sent")
    assert lines[start + 1 :] == [
        "conversation  id  message  tool        detector  count  level      sent  arguments",
        "           0   —        5  job_status  repeat        3  gentle     "
        '—     {"job_id":"nightly-build-7"}',
        "           0   —        9  job_status  repeat        5  detailed   "
        '—     {"job_id":"nightly-build-7"}',
        "           0   —       15  job_status  repeat        8  detailed   "
        '—     {"job_id":"nightly-build-7"}',
        "           0   —       19  job_status  repeat       10  escalated  "
        '—     {"job_id":"nightly-build-7"}',  # the tenth call: one finding for the stop
        "           1   —        5  job_status  repeat        3  gentle     "
        'yes   {"job_id":"nightly-build-7"}',
        "           1   —       10  job_status  repeat        5  detailed   "
        'yes   {"job_id":"nightly-build-7"}',
    ]
    assert main(["audit", write(tmp_path, "unguarded.json", json.dumps(UNGUARDED))]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("findings: the reminders the guard would have sent")
    assert lines[start + 1].split() == [
        "conversation", "id", "message", "tool", "detector", "count", "level", "arguments",
    ]  # fmt: skip


def test_json_has_the_settings_and_every_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [{"id": "a", "messages": UNGUARDED}, {"id": "b", "messages": GUARDED}]
    path = write(tmp_path, "runs.jsonl", "\n".join(json.dumps(r) for r in records))
    found = run_json(capsys, ["audit", path, "--top", "1"])

    assert found["settings"]["thresholds"] == [3, 5, 8]
    assert found["conversations"] == 2
    assert found["reminders"] == {"gentle": 2, "detailed": 3, "escalated": 1}  # the stop at 10
    assert found["wasted"] == {
        "calls": 11,
        "conversations": 2,
        "tokens": None,
        "tokens_recorded": 0,
    }
    assert found["detectors"] == {
        "repeat": {"reminders": 5, "escalations": 1, "conversations": 2},
        "same_error": {"reminders": 0, "escalations": 0, "conversations": 0},
        "recurring_error": {"reminders": 0, "escalations": 0, "conversations": 0},
    }
    assert [c["id"] for c in found["top"]] == ["a"]
    assert found["findings"][0] == {
        "conversation": 0, "id": "a", "position": 5, "call": 0, "tool": "job_status",
        "detector": "repeat", "count": 3, "level": "gentle", "sent": False,
        "arguments": '{"job_id":"nightly-build-7"}',
    }  # fmt: skip
    assert [(f["conversation"], f["count"], f["level"], f["sent"]) for f in found["findings"]] == [
        (0, 3, "gentle", False), (0, 5, "detailed", False), (0, 8, "detailed", False),
        (0, 10, "escalated", False), (1, 3, "gentle", True), (1, 5, "detailed", True),
    ]  # fmt: skip


def test_positions_point_into_the_input_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "claude.json", json.dumps({"messages": anthropic_loop(4)}))
    found = run_json(capsys, ["audit", path, "--detect", "repeat,same_error"])

    assert [(f["position"], f["detector"], f["count"]) for f in found["findings"]] == [
        (5, "repeat", 3),
    ]  # the repeat reminder comes first; same_error stays silent that turn
    items = anthropic_loop(4)
    assert items[5]["content"][1]["type"] == "tool_use"
    assert found["wasted"]["calls"] == 1
    assert found["wasted"]["tokens"] == 75


def test_tokens_of_wasted_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "openai.json", json.dumps([openai_loop(6), openai_loop(2)]))

    assert main(["audit", path]) == 0
    out = capsys.readouterr().out
    assert "wasted calls: 3 in 1 conversation · tokens spent on them: 330 of 880 recorded" in out
    assert "           0   —      6          2       3     330" in out


def test_every_detector_with_the_guards_semantics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages: list[Any] = [{"role": "user", "content": "book it"}]
    for number in range(4):  # the same failing booking, a note between each attempt
        for tool, args, result in [
            ("book", f'{{"seat": "{number % 2}"}}', "Error: payment does not add up"),
            ("think", '{"thought": "hmm"}', ""),
            ("status", "{}", "open"),
        ]:
            call_id = f"{tool}_{number}"
            messages.append({"role": "assistant", "tool_calls": [
                {"id": call_id, "function": {"name": tool, "arguments": args}}]})  # fmt: skip
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    path = write(tmp_path, "tau.json", json.dumps([{"task_id": 1, "traj": messages}]))

    seed = run_json(capsys, ["audit", path, "--profile", "seed"])  # 0.4.0: repeat alone
    assert seed["findings"] == []
    assert seed["bookkeeping"] == []  # book alternates its arguments: nothing to reveal
    # As installed: think is transparent, and TOOL_ERRORS sees the unmarked failures.
    defaults = run_json(capsys, ["audit", path])
    assert [(f["tool"], f["detector"], f["count"]) for f in defaults["findings"]] == [
        ("book", "recurring_error", 3),
    ]
    assert defaults["bookkeeping"] == []
    # The detectors that ship (`--detect all` also runs one a contributor adds), think tracked,
    # no pattern.
    shipped = ",".join(SHIPPED)
    bare = ["audit", path, "--profile", "seed", "--detect", shipped]
    argv = [*bare, "--error-pattern", "^Error"]
    found = run_json(capsys, argv)
    # think's empty result is no evidence that nothing changed: only status is stale. The
    # booking is refused alike whatever the seat, the model coming back to it each time.
    assert [(f["tool"], f["detector"], f["count"]) for f in found["findings"]] == [
        ("book", "recurring_error", 3),
        ("status", "stale", 3),
    ]
    assert found["detectors"]["same_error"]["reminders"] == 0  # status succeeds between
    found = run_json(capsys, [*argv, "--exclude", "think,status"])
    assert [(f["tool"], f["detector"], f["count"]) for f in found["findings"]] == [
        ("book", "same_error", 3),
    ]
    assert found["wasted"]["calls"] == 1
    assert run_json(capsys, [*bare, "--exclude", "think,status"])["findings"] == []
    # The default pattern sees the failures no status marks.
    found = run_json(capsys, ["audit", path, "--detect", shipped, "--exclude", "think,status"])
    assert [(f["tool"], f["detector"], f["count"]) for f in found["findings"]] == [
        ("book", "same_error", 3),
    ]


def test_logs_where_no_failure_can_be_seen_say_so_once_for_the_detectors_of_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # OpenAI's tool messages carry no status: without a pattern (seed's), no failure is seen.
    path = write(tmp_path, "log.json", json.dumps([openai_loop(4, result="Error: denied")]))
    argv = ["audit", path, "--profile", "seed", "--detect", "repeat,same_error,recurring_error"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    note = (
        "note: same_error and recurring_error counted nothing: no failure can be recognised in "
        'these logs (no result is marked status="error" and none matches --error-pattern)'
    )
    assert text.count("no failure can be recognised") == 1 and note in text
    assert run_json(capsys, argv)["failures_seen"] is False
    seen = run_json(capsys, [*argv, "--error-pattern", "^Error"])
    assert seen["failures_seen"] is True
    assert main([*argv, "--error-pattern", "^Error"]) == 0
    assert "recognised" not in capsys.readouterr().out
    assert main(["audit", path, "--detect", "repeat,stale"]) == 0  # none in use: nothing said
    assert "recognised" not in capsys.readouterr().out
    # As installed, the default pattern (TOOL_ERRORS) sees them: nothing to say.
    assert run_json(capsys, ["audit", path])["failures_seen"] is True
    assert main(["audit", path]) == 0
    assert "recognised" not in capsys.readouterr().out


def test_a_bookkeeping_tool_hiding_a_loop_gets_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages: list[Any] = [HumanMessage("go")]
    for number in range(4):
        for tool in ("search", "think"):
            call = {"name": tool, "args": {"q": 1}, "id": f"{tool}{number}"}
            messages += [
                AIMessage("", tool_calls=[call]),
                ToolMessage("r", tool_call_id=call["id"]),
            ]
    path = write(tmp_path, "noted.json", json.dumps([messages_to_dict(messages)] * 2))

    seed = ["audit", path, "--profile", "seed"]  # every tool counted, think too
    assert main(seed) == 0
    out = capsys.readouterr().out
    assert "no findings: the guard would not have stepped in." in out
    assert out.rstrip().endswith(
        "note: excluding think would reveal 2 reminders in 2 conversations (--exclude think)"
    )
    found = run_json(capsys, [*seed, "--exclude", "think"])
    assert [f["count"] for f in found["findings"]] == [3, 3]
    assert found["bookkeeping"] == []
    assert run_json(capsys, [*seed, "--include", "search"])["bookkeeping"] == []
    # As installed, think is excluded (BOOKKEEPING_TOOLS): the loop is found, nothing to note.
    found = run_json(capsys, ["audit", path])
    assert [(f["tool"], f["count"]) for f in found["findings"]] == [("search", 3)] * 2
    assert found["bookkeeping"] == []


def test_a_turn_whose_calls_draw_several_reminders_is_one_finding_with_each_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A note and a failing booking, side by side in every turn, each returning the same.
    messages: list[Any] = [HumanMessage("book it")]
    for number in range(3):
        calls = [
            {"name": "think", "args": {"thought": "retry"}, "id": f"t{number}"},
            {"name": "book", "args": {"amount": 100}, "id": f"b{number}"},
        ]
        messages += [
            AIMessage("", tool_calls=calls),
            ToolMessage("noted", tool_call_id=f"t{number}"),
            ToolMessage("Error: no seats", tool_call_id=f"b{number}", status="error"),
        ]
    path = write(tmp_path, "side.json", json.dumps([messages_to_dict(messages)]))
    argv = ["audit", path, "--profile", "seed", "--detect", "repeat,stale"]  # think counted

    found = run_json(capsys, argv)
    (finding,) = found["findings"]
    assert (finding["position"], finding["tool"], finding["count"]) == (7, "think", 3)
    assert [(r["call"], r["tool"], r["detector"]) for r in finding["reasons"]] == [
        (0, "think", "stale"),
        (1, "book", "stale"),
    ]
    assert found["reminders"]["gentle"] == 2 and found["detectors"]["stale"]["reminders"] == 2
    assert found["flagged"][0]["reminders"] == 2
    assert main(argv) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[:10] == ["0", "—", "7", "think", "·", "book", "stale", "·", "stale", "3"]


def test_escalation_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "run.json", json.dumps(UNGUARDED))

    assert main(["audit", path, "--escalate-after", "9", "--fail-on", "detailed"]) == 1
    captured = capsys.readouterr()
    assert (
        "tool        calls  longest  streaks  gentle  detailed  escalated  wasted" in captured.out
    )
    assert "repeat                   3            1              1" in captured.out
    assert "job_status  repeat        9  escalated" in captured.out
    assert "escalated  {" not in captured.out.replace("9  escalated  {", "")  # one per loop
    assert (
        captured.err == "audit: 3 detailed reminders or stopped loops found (--fail-on detailed)\n"
    )


def test_one_finding_is_said_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first_three = write(tmp_path, "three.json", json.dumps(UNGUARDED[:7]))  # a gentle reminder
    assert main(["audit", first_three, "--fail-on", "gentle"]) == 1
    captured = capsys.readouterr()
    assert captured.err == "audit: 1 reminder found (--fail-on gentle)\n"
    assert "\ntop 1 conversation by wasted calls\n" in captured.out

    first_five = write(tmp_path, "five.json", json.dumps(UNGUARDED[:11]))  # and a detailed one
    assert main(["audit", first_five, "--fail-on", "detailed"]) == 1
    said = "audit: 1 detailed reminder or stopped loop found (--fail-on detailed)\n"
    assert capsys.readouterr().err == said


@pytest.mark.parametrize(
    ("fail_on", "code", "said"),
    [
        ("gentle", 1, "audit: 3 reminders found (--fail-on gentle)\n"),
        (  # two detailed reminders, and the loop stopped at 10 (escalate_after's default)
            "detailed",
            1,
            "audit: 3 detailed reminders or stopped loops found (--fail-on detailed)\n",
        ),
        ("3", 1, "audit: 3 reminders found (--fail-on 3)\n"),
        ("4", 0, ""),
    ],
)
def test_fail_on_gates_a_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fail_on: str, code: int, said: str
) -> None:
    path = write(tmp_path, "run.json", json.dumps(UNGUARDED))
    assert main(["audit", path, "--fail-on", fail_on]) == code
    assert capsys.readouterr().err == said


def test_fail_on_passes_a_clean_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = write(tmp_path, "clean.json", json.dumps(openai_loop(1)))
    for level in ("gentle", "detailed"):
        assert main(["audit", clean, "--fail-on", level]) == 0
    assert capsys.readouterr().err == ""


def test_the_table_says_which_rules_it_counted_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path, "a.json", json.dumps(UNGUARDED))
    b = write(tmp_path, "b.json", json.dumps(GUARDED))
    argv = ["audit", a, b, "--thresholds", "2,4", "--repeat-every", "2", "--exclude", "read_*"]
    argv += ["--ignore-arguments", "job_status=trace,x", "--progress", "none"]
    argv += ["--detect", "repeat,stale", "--error-pattern", "E", "--stale-thresholds", "4,6"]

    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "2 conversations · 19 tool calls · 2 files · thresholds 2, 4 · detect repeat, stale · "
        "exclude read_* · repeat every 2 · progress none · ignore arguments job_status: "
        "trace, x · stale thresholds 4, 6 · error pattern E"
    )
    assert main(["audit", a, "--progress", "result"]) == 0  # the default: not said
    assert capsys.readouterr().out.splitlines()[0] == (
        "1 conversation · 13 tool calls · thresholds 3, 5, 8"
    )
    # Under a profile, the rules said are the ones set over it, the profile named once.
    assert main(["audit", a, "--profile", "seed", "--detect", "repeat,stale"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "1 conversation · 13 tool calls · thresholds 3, 5, 8 · profile seed · detect repeat, stale"
    )


def test_the_audit_counts_as_the_guard_ran() -> None:
    guarded = run_demo(RepeatToolReminderCallbackHandler())
    result = audit([guarded], ReminderConfig())

    assert (result.tools["job_status"].gentle, result.tools["job_status"].detailed) == (1, 1)
    assert result.count() == 2 and result.count("gentle") == 1
    assert (
        format_audit(result).splitlines()[0] == "1 conversation · 6 tool calls · thresholds 3, 5, 8"
    )


def test_an_output_that_cannot_be_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "run.json", json.dumps(UNGUARDED))
    target = tmp_path / "missing" / "report.html"

    assert main(["audit", path, "--html", str(target)]) == 2
    assert capsys.readouterr().err == (
        f"error: {target}: cannot write the report (No such file or directory)\n"
    )


# --- the progress bar ----------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_draws_only_for_a_large_input_at_a_terminal() -> None:
    ticks = iter([0.0, 0.3, 0.4, 0.8])
    screen = Terminal()
    bar = ProgressBar(screen, LARGE * 2, interval=0.2, clock=lambda: next(ticks))
    bar.update(LARGE // 4, 1)
    assert screen.getvalue().endswith("· 4 of 34 MB · 1 conversation")
    bar.update(LARGE // 2, 10)
    bar.update(LARGE, 20)  # too soon: not drawn
    bar.update(LARGE, 30)
    bar.close()
    drawn = screen.getvalue().split("\r")

    assert drawn[2] == "audit [#######.......................]  25% · 8 of 34 MB · 10 conversations"
    assert drawn[3].startswith("audit [###############...............]  50% · 17 of 34 MB · 30")
    assert drawn[4].strip() == drawn[5] == ""
    bar.close()  # nothing drawn since: nothing to clear
    quiet = io.StringIO()
    ProgressBar(quiet, LARGE * 2).update(1, 1)
    small = Terminal()
    ProgressBar(small, LARGE - 1).update(1, 1)
    assert quiet.getvalue() == small.getvalue() == ""


def test_the_audit_draws_its_bar_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "run.json", json.dumps(UNGUARDED))
    monkeypatch.setattr("repeat_reminder_langchain.tooling._progress.LARGE", 1)
    monkeypatch.setattr(cli.sys, "stderr", Terminal())

    assert main(["audit", path]) == 0
    assert "audit [" in cli.sys.stderr.getvalue()  # type: ignore[attr-defined]
    monkeypatch.setattr(cli.sys, "stderr", Terminal())
    assert main(["audit", path, "--quiet"]) == 0
    assert cli.sys.stderr.getvalue() == ""  # type: ignore[attr-defined]


def test_where_a_broken_document_breaks_whatever_its_wrapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ijson", reason="several documents in one file need the audit extra")
    pretty = json.dumps(UNGUARDED, indent=2)
    zipped = write(tmp_path, "broken.json.gz", gzip.compress(pretty[:300].encode()))
    with pytest.raises(LogError, match=r"broken\.json\.gz:15:5: not JSON \(Unterminated"):
        read(zipped)
    bom = write(tmp_path, "bom.json", ("\ufeff" + pretty[:300]).encode())
    with pytest.raises(LogError, match=r"bom\.json:15:5: not JSON"):
        read(bom)
    record = json.dumps({"messages": UNGUARDED}, indent=2)
    several = write(tmp_path, "several.json", record + "\n" + record[:200])
    line = record.count("\n") + 2 + record[:200].count("\n")
    with pytest.raises(LogError, match=rf"several\.json:{line}:\d+: not JSON"):
        read(several)
    monkeypatch.setattr("repeat_reminder_langchain.tooling._logs._RELOCATE", 10)
    with pytest.raises(LogError, match=r"bom\.json: not JSON \(too large to say where it breaks\)"):
        read(bom)


@pytest.mark.parametrize(
    ("text", "options", "wanted"),
    [
        (
            '{"a": {"b": 1}}',
            {"messages_key": "a"},
            "expected a conversation or a record, got an object",
        ),
        ("null\n", {}, "expected a conversation or a record, got null"),
        ("[true, false]\n", {}, "a list of conversations holds something else"),
    ],
)
def test_values_that_are_no_conversation(
    tmp_path: Path, text: str, options: dict[str, Any], wanted: str
) -> None:
    with pytest.raises(LogError, match=wanted):
        read(write(tmp_path, "odd.jsonl", text), **options)


def test_skip_bad_keeps_the_first_five_problems(tmp_path: Path) -> None:
    lines = ['{"role": "user", "content": "alone"}', json.dumps(UNGUARDED)]
    lines += [f"{{bad {n}" for n in range(6)]
    reader = LogReader(skip_bad=True)
    found = list(reader.read([write(tmp_path, "bad.jsonl", "\n".join(lines))]))

    assert [c.format for c in found] == ["openai"]  # the conversation after it was skipped
    assert reader.skipped == 7
    assert len(reader.problems) == 5
    assert reader.problems[0].endswith(":2: mixes single messages and whole conversations")


def test_without_ijson_a_document_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real = builtins.__import__

    def no_ijson(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ijson":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ijson)
    pretty = write(tmp_path, "pretty.json", json.dumps([UNGUARDED, GUARDED], indent=2))
    record = write(tmp_path, "record.json", json.dumps({"messages": UNGUARDED}, indent=2))
    assert [c.index for c in read(pretty, record)] == [0, 1, 2]
    broken = write(tmp_path, "broken.json", json.dumps(UNGUARDED, indent=2)[:300])
    with pytest.raises(LogError, match=r"broken\.json:15:5: not JSON \(Unterminated"):
        read(broken)


def test_a_failed_audit_leaves_no_report_behind(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.jsonl", "{nope\n")
    target = tmp_path / "report.html"

    assert main(["audit", bad, "--html", str(target)]) == 2
    assert not target.exists()


def test_a_finding_stays_on_one_line_of_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages: list[Any] = [HumanMessage("go")]
    for number in range(3):
        call = {"name": "bash", "args": {"command": "make\n\tmake test"}, "id": f"c{number}"}
        messages += [AIMessage("", tool_calls=[call]), ToolMessage("ok", tool_call_id=f"c{number}")]
    path = write(tmp_path, "multiline.json", json.dumps(messages_to_dict(messages)))

    assert main(["audit", path]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith('bash  repeat        3  gentle  {"command":"make\\n\\tmake test"}')
    found = run_json(capsys, ["audit", path])
    assert found["findings"][0]["arguments"] == '{"command":"make\\n\\tmake test"}'


def test_the_detectors_are_named_in_the_order_they_take_precedence() -> None:
    # What `--detect all` runs, and the order any `detect=` is kept in.
    names = detectors()
    assert names[0] == "repeat" and len(names) == len(set(names)) > 1
    assert ReminderConfig(detect=list(reversed(names))).detect == names
