"""The evaluation (`python -m evaluation`) on a committed excerpt of the real corpus.

`tests/data/README.md` says where each conversation comes from and what it shows. The figures
asserted here are the ones a reader of the evaluation relies on: where `stale` fires and where
it must not, what `same_error` needs to fire on a shell, and what excluding `think` reveals
on τ-bench.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

from evaluation.__main__ import main
from evaluation.edits import Edits
from evaluation.evaluate import FileReport, evaluate
from evaluation.reruns import WRITE_TOOLS
from evaluation.run import ERROR_PATTERN, NOT_USER, SHELL_ERRORS, Settings, load

DATA = Path(__file__).parent / "data"
SHELL = str(DATA / "corpus_excerpt.jsonl")
TAU = str(DATA / "tau_bench_excerpt.json")


def firings(report: FileReport, name: str) -> list[tuple[int, int, int, str]]:
    return [(f.conversation, f.call, f.count, f.detector) for f in report.outcomes[name].firings]


def args_of(report: FileReport, conversation: int, call: int) -> object:
    return report.replays["stale"][conversation].calls[call].call.args


@pytest.fixture(scope="module")
def shell() -> FileReport:
    return evaluate(SHELL, Settings(error_pattern=ERROR_PATTERN))


def test_the_excerpt_reads_as_the_corpus_does(shell: FileReport) -> None:
    assert len(shell.conversations) == 4
    assert shell.calls == shell.tracked == 61
    assert {c.format for c in shell.conversations} == {"langchain"}


def test_stale_fires_on_a_file_read_again_and_on_a_rerun_edits_do_not_change(
    shell: FileReport,
) -> None:
    # Conversation 0: `cat astropy/io/ascii/rst.py` a third time, only reads between.
    # Conversation 3: `python3 test_valid_path.py` a third time with the same output, after
    # `sed -i` edits to the script that changed nothing it prints.
    assert firings(shell, "stale") == [(0, 12, 3, "stale"), (3, 23, 3, "stale")]
    assert args_of(shell, 0, 12) == {"command": "cat astropy/io/ascii/rst.py"}
    assert args_of(shell, 3, 23) == {"command": "python3 test_valid_path.py"}
    assert shell.outcomes["stale"].tools == {"bash": 2}


def test_stale_is_silent_on_edit_then_rerun(shell: FileReport) -> None:
    # Conversation 1: the reproduction run, rewritten, run; fixed with `sed -i`, run: the
    # output changes every time, so every re-run starts a new count of 1.
    rerun = [r for r in shell.reruns if r.conversation == 1]
    assert [(r.call, r.previous, r.kind, r.stale, r.fired) for r in rerun] == [
        (6, 4, "edit_changed", 1, False),
        (8, 6, "edit_changed", 1, False),
    ]
    assert not [f for f in shell.outcomes["all"].firings if f.conversation == 1]
    changed = [r for r in shell.reruns if r.changed]
    assert len(changed) == 4
    assert all(r.stale == 1 and not r.fired for r in changed)


def test_reruns_after_edits_with_the_same_output_count_on(shell: FileReport) -> None:
    rerun = [(r.call, r.kind, r.stale, r.fired) for r in shell.reruns if r.conversation == 3]
    assert rerun == [
        (15, "edit_changed", 1, False),
        (19, "edit_changed", 1, False),
        (21, "edit_same", 2, False),
        (23, "edit_same", 3, True),
        (25, "edit_same", 4, False),
    ]


def test_the_sweep_shows_each_threshold(shell: FileReport) -> None:
    stale = [(row.threshold, row.firings, row.conversations) for row in shell.sweeps["stale"]]
    assert stale == [(2, 2, 2), (3, 2, 2), (4, 1, 1), (5, 0, 0)]


def test_same_error_on_a_shell_depends_on_the_pattern() -> None:
    # Conversation 2: three different `grep`s that find nothing. Any non-zero return code
    # makes them one error three times; the proposed pattern leaves empty outputs out.
    anything = evaluate(SHELL, Settings(error_pattern=r"\A<returncode>[1-9]"))
    assert firings(anything, "same_error") == [(2, 10, 3, "same_error")]
    assert args_of(anything, 2, 10) == {
        "command": 'grep "Figur" reproduce_bug/_build/html/index.html\n'
        'grep "Viser" reproduce_bug/_build/html/index.html'
    }
    for pattern in (ERROR_PATTERN, SHELL_ERRORS, None):
        assert firings(evaluate(SHELL, Settings(error_pattern=pattern)), "same_error") == []


def test_excluding_think_reveals_the_tau_bench_loop() -> None:
    # `book_reservation` fails three times with the same arguments and error, `think` between.
    kept = evaluate(TAU, Settings(error_pattern=ERROR_PATTERN))
    assert firings(kept, "repeat") == firings(kept, "same_error") == []
    assert firings(kept, "stale") == [(0, 13, 3, "stale")]  # whatever came between
    excluded = evaluate(TAU, Settings(error_pattern=ERROR_PATTERN, exclude=("think",)))
    assert (excluded.calls, excluded.tracked) == (16, 12)
    assert firings(excluded, "repeat") == [(0, 13, 3, "repeat")]
    assert firings(excluded, "same_error") == [(0, 13, 3, "same_error")]
    assert firings(excluded, "all") == [(0, 13, 3, "repeat")]  # one reminder, repeat first
    assert excluded.outcomes["all"].tools == {"book_reservation": 1}


@pytest.mark.parametrize(
    ("command", "edit"),
    [
        ("sed -i 's/a/b/' f.py", "writes"),
        ("sed -n '1,20p' f.py", ""),
        ("cat <<'EOF' > f.py\nprint(1 > 0)\nEOF", "writes"),
        ("cat f.py | grep -i foo", ""),
        ("python x.py 2>&1 | head", ""),
        ("python x.py > /dev/null", ""),
        ('echo "a > b"', ""),
        ("echo hi >> notes.txt", "writes"),
        ("git checkout django/db/models.py", "writes"),
        ("git diff", ""),
        ("cd repo && rm -rf build", "writes"),
        ("python -c \"open('f', 'w').write('x')\"", "writes"),
        ("grep -rn 'rm -rf' .", ""),
    ],
)
def test_edits_are_told_from_the_command_text(command: str, edit: str) -> None:
    assert Edits()(command) == edit


def test_running_a_script_that_writes_is_an_edit_by_the_script() -> None:
    edits = Edits()
    assert edits("python apply_fix.py") == ""  # not known to write yet
    script = "cat <<'EOF' > apply_fix.py\nopen('src/m.py', 'w').write(text)\nEOF"
    assert edits(script) == "writes"
    assert edits("python3 apply_fix.py") == "runs"
    assert edits("python3 reproduce.py") == ""


def test_write_tools_are_told_by_name() -> None:
    writes = ["book_reservation", "update_reservation_flights", "cancel_reservation", "edit"]
    reads = ["get_reservation_details", "search_direct_flight", "think", "calculate", "reset"]
    assert all(WRITE_TOOLS.fullmatch(name) for name in writes)
    assert not any(WRITE_TOOLS.fullmatch(name) for name in reads)


def test_harness_feedback_as_user_messages_resets_nothing_with_not_user(tmp_path: Path) -> None:
    # A harness's feedback as a user message between two identical reads resets `stale`;
    # with `not_user` it is not the user, and the reads count on.
    def read(n: int) -> list[AIMessage | ToolMessage]:
        call = {"name": "bash", "args": {"command": "cat f"}, "id": f"c{n}"}
        return [AIMessage("", tool_calls=[call]), ToolMessage("same", tool_call_id=f"c{n}")]

    feedback = HumanMessage("Please always provide EXACTLY ONE action")
    messages = [HumanMessage("task"), *read(1), *read(2), feedback, *read(3)]
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(messages_to_dict(messages)) + "\n")
    plain = evaluate(str(path), Settings())
    assert firings(plain, "stale") == []
    harness = Settings(not_user=NOT_USER)
    assert firings(evaluate(str(path), harness), "stale") == [(0, 2, 3, "stale")]
    assert len(load(str(path))[0].messages) == len(messages)  # nothing is left out


def test_the_command_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([SHELL, TAU, "--show", "stale"]) == 0
    out = capsys.readouterr().out
    assert "corpus_excerpt.jsonl: 4 conversations, 61 tool calls (61 tracked)" in out
    assert "after an edit, output changed (edit then re-run)" in out
    assert "0 with a stale count other than 1 or a stale reminder (must be 0)" in out
    assert "-- conversation 0, call 12: stale × 3" in out
    assert '>>   12 bash {"command":"cat astropy/io/ascii/rst.py"}' in out


def test_the_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([SHELL, TAU, "--json", "--exclude", "think", "--stale-thresholds", "3,4"]) == 0
    shell, tau = json.loads(capsys.readouterr().out)
    assert shell["settings"]["stale_thresholds"] == [3, 4]
    assert shell["detectors"]["stale"]["firings"] == 3
    assert shell["sweeps"]["stale"] == {"2": [2, 2], "3": [2, 2], "4": [1, 1], "5": [0, 0]}
    assert shell["reruns"]["edit_changed"] == {
        "reruns": 4,
        "series": 3,
        "stale_fired": 0,
        "stale_counts": {"1": 4},
    }
    assert tau["detectors"]["same_error"]["firings"] == 1
    assert tau["detectors"]["all"]["by_detector"] == {"repeat": 1}
