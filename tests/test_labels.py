"""The labelled set of the development corpus (`evaluation/labels/`) and the figures drawn from it.

The labels files are checked as data: every key once, every label one of the allowed values with a
reason. Precision, recall and the scan are checked on small examples made by hand. With the corpus
files present (they are not in the repository), every flag the current code raises at the
labelled settings and every candidate loop the scan finds must have a label, or the table would
leave it out of its figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.__main__ import main
from evaluation.labels import (
    FLAG_LABELS,
    LABELS,
    LOOP_LABELS,
    SETTINGS,
    THRESHOLDS,
    Fires,
    FlagKey,
    Labels,
    Row,
    every_setting,
    flags,
    labels_path,
    loops,
    read_labels,
    score,
    suggested,
    table,
)
from evaluation.run import load, replay_all
from evaluation.scan import MIN_OUTPUT, SHAPES, Loop, scan
from repeat_reminder_langchain import BOOKKEEPING_TOOLS, ReminderConfig
from repeat_reminder_langchain._config import TOOL_ERRORS
from repeat_reminder_langchain._detectors import DETECTORS as REGISTRY
from repeat_reminder_langchain.replay import Call, Replayed
from repeat_reminder_langchain.tooling._logs import Conversation

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
FILES = sorted(LABELS.glob("*.labels.jsonl"))
DETECTORS = tuple(REGISTRY)


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_there_is_a_labels_file_per_corpus_file() -> None:
    assert [path.name for path in FILES] == [
        "mini_swe_gemini3pro.dev.labels.jsonl",
        "tau_bench_gpt4o_airline.dev.labels.jsonl",
    ]
    assert labels_path("../x/mini_swe_gemini3pro.dev.jsonl") == FILES[0]
    assert labels_path("tau_bench_gpt4o_airline.dev.json") == FILES[1]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_label_is_well_formed(path: Path) -> None:
    flag_keys: list[tuple[object, ...]] = []
    loop_keys: list[tuple[object, ...]] = []
    for record in records(path):
        reason = record["reason"]
        assert isinstance(reason, str) and reason.strip(), record
        conversation = record["conversation"]
        assert isinstance(conversation, int) and conversation >= 0, record
        if record["kind"] == "flag":
            assert record["label"] in FLAG_LABELS, record
            assert record["detector"] in DETECTORS, record
            fires = record["fires"]
            assert isinstance(fires, list) and fires, record
            assert all(s in SETTINGS and t in THRESHOLDS for s, t in fires), record
            assert len({tuple(f) for f in fires}) == len(fires), record
            flag_keys.append((conversation, record["call"], record["detector"]))
        else:
            assert record["kind"] == "loop", record
            assert record["label"] in LOOP_LABELS, record
            assert record["shape"] in SHAPES, record
            calls = record["calls"]
            assert isinstance(calls, list) and len(calls) >= 3 and calls == sorted(calls), record
            loop_keys.append((conversation, record["shape"], tuple(calls)))
    assert len(set(flag_keys)) == len(flag_keys)
    assert len(set(loop_keys)) == len(loop_keys)
    labels = read_labels(path)  # what the evaluation reads agrees with the file
    assert len(labels.flags) == len(flag_keys) and len(labels.loops) == len(loop_keys)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"label": "maybe"}, "a flag is"),
        ({"reason": " "}, "no reason"),
        ({"kind": "note"}, "kind must be"),
        ({}, "labelled twice"),
    ],
)
def test_a_malformed_labels_file_is_refused(
    tmp_path: Path, change: dict[str, object], problem: str
) -> None:
    good = {
        "kind": "flag",
        "conversation": 0,
        "call": 2,
        "detector": "stale",
        "fires": [["seed", 2]],
        "label": "genuine",
        "reason": "the same file read again",
    }
    path = tmp_path / "x.labels.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **change}) + "\n")
    with pytest.raises(ValueError, match=problem):
        read_labels(path)


def test_flags_on_conversations_without_a_labelled_loop_are_counted_per_ten() -> None:
    raised = {
        (0, 1, "stale"): (("seed", 3),),  # in the loop's conversation: not stray
        (2, 0, "stale"): (("seed", 3),),
        (3, 4, "stale"): (("seed", 3),),
        (3, 5, "stale"): (("seed", 3),),
    }
    labels = Labels(
        flags={},
        fires={},
        loops={
            (0, "same_call", (1, 2, 3)): ("loop", "stuck"),
            (1, "same_output", (0, 4, 6)): ("not", "checks after different fixes"),
        },
    )
    rows = {(r.detector, r.setting, r.threshold): r for r in score(raised, labels)}
    assert rows["stale", "seed", 3].stray == 3
    assert rows["stale", "seed", 3].stray_rate is None  # how many conversations: not known

    counted = score(raised, labels, conversations=20)
    stale = next(r for r in counted if (r.detector, r.setting, r.threshold) == ("stale", "seed", 3))
    assert (stale.stray, stale.loopless, stale.stray_rate) == (3, 19, 30 / 19)


def test_precision_and_recall_on_a_hand_made_example() -> None:
    raised = {
        (0, 1, "stale"): (("seed", 2),),
        (0, 3, "repeat"): (("seed", 2),),
        (0, 3, "stale"): (("seed", 2), ("seed", 3)),
        (1, 0, "stale"): (("seed", 2),),  # raised now, never labelled
        (1, 0, "repeat"): (("seed", 2),),
    }
    labels = Labels(
        flags={
            (0, 1, "stale"): ("genuine", "read again"),
            (0, 3, "repeat"): ("genuine", "twice in a row"),
            (0, 3, "stale"): ("false", "a write"),
            (1, 0, "repeat"): ("false", "a check after a fix"),
            (2, 0, "stale"): ("genuine", "no longer raised"),
        },
        fires={},
        loops={
            (0, "same_call", (1, 2, 3)): ("loop", "stuck"),
            (0, "same_failure", (1, 2, 3)): ("loop", "the same loop, found twice"),
            (1, "same_call", (5, 6, 7)): ("loop", "no flag falls in it"),
            (2, "cycle", (0, 1, 2, 3)): ("not", "progress"),
        },
    )
    rows = {(r.detector, r.setting, r.threshold): r for r in score(raised, labels)}
    assert len(rows) == (len(DETECTORS) + 2) * len(SETTINGS) * len(THRESHOLDS)  # any, on

    stale = rows["stale", "seed", 2]
    assert (stale.flags, stale.genuine, stale.false, stale.unlabelled) == (3, 1, 1, 1)
    assert stale.precision == 0.5  # over labelled flags: the unlabelled one is apart
    assert (stale.found, stale.loops, stale.recall) == (1, 2, 0.5)

    late = rows["stale", "seed", 3]
    assert (late.flags, late.genuine, late.false, late.precision) == (1, 0, 1, 0.0)
    assert (late.found, late.loops) == (1, 2)

    repeat = rows["repeat", "seed", 2]
    assert (repeat.flags, repeat.genuine, repeat.false, repeat.precision) == (2, 1, 1, 0.5)
    assert repeat.found == 1

    # Together a call counts once: genuine when any of its labels is, false only when all of its
    # flags were read (call 0 of conversation 1 has a false label and an unlabelled flag).
    both = rows["any", "seed", 2]
    assert (both.flags, both.genuine, both.false, both.unlabelled) == (3, 2, 0, 1)
    assert both.precision == 1.0
    # What the setting turns on together: the defaults, `repeat` alone.
    on = rows["on", "seed", 2]
    assert (on.flags, on.genuine, on.false, on.found) == (2, 1, 1, 1)

    silent = rows["stale", "recommended", 2]
    assert (silent.flags, silent.precision, silent.found, silent.recall) == (0, None, 0, 0.0)
    none = score({}, Labels({}, {}, {}))
    assert all(r.precision is None and r.recall is None for r in none)


def replayed(*calls: tuple[str, str, str]) -> list[Replayed]:
    """Calls as a replay yields them: tool, the `x` argument and the result."""
    return [
        Replayed(Call(str(i), tool, {"x": arg}, result), i, None)
        for i, (tool, arg, result) in enumerate(calls)
    ]


def test_the_scan_finds_each_shape_wherever_the_calls_are() -> None:
    calls = replayed(
        ("read", "a", "A"),
        ("book", "1", "Error: full"),
        ("read", "a", "A"),
        ("book", "1", "Error: full"),
        ("read", "a", "A changed"),  # another result: not the same call and result
        ("book", "3", "Error: full"),
        ("read", "a", "A"),
    )
    assert scan(calls) == [
        Loop("same_call", (0, 2, 6), "read"),
        Loop("cycle", (0, 1, 2, 3), "read+book"),
        Loop("same_failure", (1, 3, 5), "book"),
    ]


def test_the_scan_leaves_short_runs_and_changing_results_alone() -> None:
    twice = replayed(("read", "a", "A"), ("read", "a", "A"))
    assert scan(twice) == []
    changing = replayed(("a", "1", "x"), ("b", "1", "y"), ("a", "1", "x"), ("b", "1", "z"))
    assert scan(changing) == []  # b's result changed: no full second cycle
    one_more = replayed(("a", "1", "x"), ("b", "1", "y"), ("a", "1", "x"), ("b", "1", "y"))
    assert [loop.shape for loop in scan(one_more)] == ["cycle"]
    errors = replayed(("run", "1", "Error: a"), ("run", "2", "Error: b"), ("run", "3", "Error: a"))
    assert scan(errors) == []  # two different errors


def test_a_block_of_three_calls_repeated_is_a_cycle() -> None:
    calls = replayed(
        ("edit", "insert", ""),  # insert a print, run, the same failure, delete it, twice over
        ("run", "t", "IndentationError"),
        ("edit", "delete", ""),
        ("edit", "insert", ""),
        ("run", "t", "IndentationError"),
        ("edit", "delete", ""),
        ("edit", "insert", ""),
        ("read", "f", "done"),  # the block stops coming back: the run ends before this
    )
    assert [loop for loop in scan(calls) if loop.shape == "cycle"] == [
        Loop("cycle", (0, 1, 2, 3, 4, 5, 6), "edit+run+edit")
    ]
    once_more = replayed(*[("a", "1", "x"), ("b", "1", "y"), ("c", "1", "z")] * 2)[:5]
    assert scan(once_more) == []  # five calls: not two full blocks of three


def test_an_alternation_is_the_same_cycle_as_before_whatever_its_length() -> None:
    # A B A B A B is a block of two three times; as a block of four (A B A B) it is the same
    # cycle, found once, at period two, with the calls and tools an alternation always had.
    calls = replayed(*[("read", "a", "A"), ("book", "1", "Error: full")] * 3, ("read", "b", "B"))
    assert [loop for loop in scan(calls) if loop.shape == "cycle"] == [
        Loop("cycle", (0, 1, 2, 3, 4, 5), "read+book")
    ]
    block_of_four = replayed(
        *[("a", "1", "x"), ("b", "1", "y"), ("a", "1", "x"), ("c", "1", "z")] * 2
    )
    assert [loop for loop in scan(block_of_four) if loop.shape == "cycle"] == [
        Loop("cycle", tuple(range(8)), "a+b+a+c")
    ]


def test_one_call_repeated_is_never_a_cycle() -> None:
    same = replayed(*[("run", "1", "x")] * 6)
    assert [loop.shape for loop in scan(same)] == ["same_call"]
    flipping = replayed(*[("run", "1", "x"), ("run", "1", "y")] * 3)  # one call, two results
    assert "cycle" not in [loop.shape for loop in scan(flipping)]


LONG = "Traceback: the same long output, printed by every one of these scripts"


def test_the_same_output_from_different_arguments_is_a_candidate() -> None:
    calls = replayed(
        ("bash", "python v1.py", LONG),
        ("bash", "sed -i s/a/b/ v1.py", ""),
        ("bash", "python v2.py", LONG),
        ("read", "python v3.py", LONG),  # another tool: not counted with bash's
        ("bash", "python v2.py", LONG),
    )
    assert scan(calls) == [Loop("same_output", (0, 2, 4), "bash")]


def test_the_same_output_needs_two_argument_sets_and_something_said() -> None:
    one_call = replayed(*[("bash", "python v1.py", LONG)] * 3)
    assert [loop.shape for loop in scan(one_call)] == ["same_call"]  # one argument set
    short = replayed(("bash", "a", "ok"), ("bash", "b", "ok"), ("bash", "c", "ok"))
    assert scan(short) == []  # an acknowledgement shorter than MIN_OUTPUT
    assert len("ok") < MIN_OUTPUT <= len(LONG)
    blank = " " * MIN_OUTPUT + "\n"
    assert scan(replayed(("bash", "a", blank), ("bash", "b", blank), ("bash", "c", blank))) == []
    failing = "Error: " + LONG  # a failure is same_failure's, not an output
    calls = replayed(("bash", "a", failing), ("bash", "b", failing), ("bash", "c", failing))
    assert [loop.shape for loop in scan(calls)] == ["same_failure"]


def test_a_file_without_labels_says_so() -> None:
    excerpt = Path(__file__).parent / "data" / "corpus_excerpt.jsonl"
    assert table(str(excerpt), []) == (
        "   labels: none for this file (no corpus_excerpt.labels.jsonl in evaluation/labels/)"
    )


def test_missing_corpus_files_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pattern = str(tmp_path / "corpus" / "*.json*")  # what an unmatched shell pattern passes
    assert main([pattern]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"no conversations at {pattern}: ")
    for source in (
        "sierra-research/tau-bench",
        "59a200c6d575d595120f1cb70fea53cef0632f6b",
        "read as published",
        "gruckion/mini-swe-agent",
        "d12a71affd95403b036b2bdbd827349b77bfffb9",
    ):
        assert source in err


needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the development corpus is not at {CORPUS} (not in the repository)"
)


@pytest.fixture(scope="module")
def raised() -> dict[str, tuple[list[Conversation], dict[FlagKey, Fires]]]:
    """Per labels file, its corpus file's conversations and every flag raised on them."""
    found = {}
    for path in FILES:
        corpus = CORPUS / path.name.replace(".labels.jsonl", ".jsonl")
        if not corpus.exists():
            corpus = corpus.with_suffix(".json")
        conversations = load(str(corpus))
        found[path.name] = (conversations, flags(conversations, every_setting(conversations)))
    return found


@needs_corpus
@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_flag_and_candidate_loop_the_code_finds_has_a_label(
    path: Path, raised: dict[str, tuple[list[Conversation], dict[FlagKey, Fires]]]
) -> None:
    conversations, flagged = raised[path.name]
    labels = read_labels(path)
    assert sorted(set(flagged) - set(labels.flags)) == []
    found = loops(replay_all(conversations, ReminderConfig()))
    assert sorted(set(found) - set(labels.loops)) == []


# At the default threshold, 3: per detector and setting, (flags, genuine, loops found, loops),
# as docs/guides/detectors.md, "What they find on real conversations", gives them.
FIGURES = {
    "mini_swe_gemini3pro.dev.labels.jsonl": {
        ("repeat", "seed"): (0, 0, 0, 12),
        ("stale", "seed"): (3, 2, 2, 12),
        ("same_error", "seed"): (0, 0, 0, 12),
        ("recurring_error", "seed"): (0, 0, 0, 12),
        ("cycle", "seed"): (0, 0, 0, 12),
        ("same_output", "seed"): (16, 4, 5, 12),
        ("any", "seed"): (19, 6, 7, 12),
        ("repeat", "recommended"): (0, 0, 0, 12),
        ("stale", "recommended"): (5, 4, 4, 12),
        ("same_error", "recommended"): (0, 0, 0, 12),
        ("recurring_error", "recommended"): (0, 0, 0, 12),
        ("cycle", "recommended"): (0, 0, 0, 12),
        ("same_output", "recommended"): (24, 4, 5, 12),
        ("any", "recommended"): (29, 8, 9, 12),
        ("on", "seed"): (0, 0, 0, 12),
        ("on", "recommended"): (5, 4, 4, 12),
        ("repeat", "installed"): (0, 0, 0, 12),
        ("stale", "installed"): (3, 2, 2, 12),
        ("same_error", "installed"): (0, 0, 0, 12),
        ("recurring_error", "installed"): (0, 0, 0, 12),
        ("cycle", "installed"): (0, 0, 0, 12),
        ("same_output", "installed"): (16, 4, 5, 12),
        ("any", "installed"): (19, 6, 7, 12),
        ("on", "installed"): (0, 0, 0, 12),
    },
    "tau_bench_gpt4o_airline.dev.labels.jsonl": {
        ("repeat", "seed"): (0, 0, 0, 1),
        ("stale", "seed"): (1, 1, 1, 1),
        ("same_error", "seed"): (0, 0, 0, 1),
        ("recurring_error", "seed"): (0, 0, 0, 1),
        ("cycle", "seed"): (0, 0, 0, 1),
        ("same_output", "seed"): (0, 0, 0, 1),
        ("any", "seed"): (1, 1, 1, 1),
        ("repeat", "recommended"): (1, 1, 1, 1),
        ("stale", "recommended"): (1, 1, 1, 1),
        ("same_error", "recommended"): (1, 1, 1, 1),
        ("recurring_error", "recommended"): (2, 2, 1, 1),
        ("cycle", "recommended"): (0, 0, 0, 1),
        ("same_output", "recommended"): (0, 0, 0, 1),
        ("any", "recommended"): (2, 2, 1, 1),
        ("on", "seed"): (0, 0, 0, 1),
        ("on", "recommended"): (2, 2, 1, 1),
        ("repeat", "installed"): (1, 1, 1, 1),
        ("stale", "installed"): (1, 1, 1, 1),
        ("same_error", "installed"): (1, 1, 1, 1),
        ("recurring_error", "installed"): (2, 2, 1, 1),
        ("cycle", "installed"): (0, 0, 0, 1),
        ("same_output", "installed"): (0, 0, 0, 1),
        ("any", "installed"): (2, 2, 1, 1),
        ("on", "installed"): (2, 2, 1, 1),
    },
}


# At 3, the flags on conversations without a labelled loop, per detector and setting (those with
# none left out): the "at most 1 per 10 such conversations" holds for each.
STRAY = {
    "mini_swe_gemini3pro.dev.labels.jsonl": {
        ("stale", "seed"): 1,
        ("same_output", "seed"): 12,
        ("any", "seed"): 13,
        ("stale", "recommended"): 1,
        ("same_output", "recommended"): 18,
        ("any", "recommended"): 19,
        ("on", "recommended"): 1,
        ("stale", "installed"): 1,
        ("same_output", "installed"): 12,
        ("any", "installed"): 13,
    },
    # A genuine one: the refusal recurring_error counts by its cause, a shape the scan does not
    # look for (the error texts differ by the amount the model sent).
    "tau_bench_gpt4o_airline.dev.labels.jsonl": {
        ("recurring_error", "recommended"): 1,
        ("any", "recommended"): 1,
        ("on", "recommended"): 1,
        ("recurring_error", "installed"): 1,
        ("any", "installed"): 1,
        ("on", "installed"): 1,
    },
}


def by_setting(rows: list[Row], detector: str, setting: str, threshold: int = 3) -> Row:
    """The row of one detector under one setting, at the default threshold."""
    (row,) = [
        r for r in rows if (r.detector, r.setting, r.threshold) == (detector, setting, threshold)
    ]
    return row


@needs_corpus
@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_precision_and_recall_are_the_figures_the_docs_give(
    path: Path, raised: dict[str, tuple[list[Conversation], dict[FlagKey, Fires]]]
) -> None:
    conversations, flagged = raised[path.name]
    settings = every_setting(conversations)
    rows = score(flagged, read_labels(path), settings=settings, conversations=len(conversations))
    measured = {
        (row.detector, row.setting): (row.flags, row.genuine, row.found, row.loops)
        for row in rows
        if row.threshold == 3
    }
    assert {k: v for k, v in measured.items() if k[1] != "suggested"} == FIGURES[path.name]
    at_3 = [row for row in rows if row.threshold == 3 and row.setting != "suggested"]
    assert {(r.detector, r.setting): r.stray for r in at_3 if r.stray} == STRAY[path.name]
    assert all(row.stray_rate is not None and row.stray_rate <= 1 for row in at_3)
    assert all(row.unlabelled == 0 for row in rows)
    # As installed: each detector on is genuine at least 90% of the times it fires, and the
    # defaults find at least the loops 0.4.0's found.
    for detector in settings["installed"].detect:
        precision = by_setting(rows, detector, "installed").precision
        assert precision is None or precision >= 0.9, detector
    assert by_setting(rows, "on", "installed").found >= by_setting(rows, "on", "seed").found
    # What `audit --suggest` derives from the file alone, written and loaded, finds at least
    # the loops the recommended configuration finds, with each detector it turns on at least
    # as precise as that detector under the recommended settings, at every threshold.
    by = {(r.detector, r.setting, r.threshold): r for r in rows}
    for at in THRESHOLDS:
        assert by["on", "suggested", at].found >= by["on", "recommended", at].found
        for detector in settings["suggested"].detect:
            mine, theirs = by[detector, "suggested", at], by[detector, "recommended", at]
            assert (mine.precision or 0) >= (theirs.precision or 0), (detector, at)


@needs_corpus
def test_the_settings_suggested_for_each_corpus_are_the_ones_a_person_found(
    raised: dict[str, tuple[list[Conversation], dict[FlagKey, Fires]]],
) -> None:
    tau, shell = (suggested(raised[path.name][0]) for path in reversed(FILES))
    # The defaults already see τ-bench's bookkeeping tool and its failures: stale is the news.
    assert (tau.exclude, tau.error_pattern, tau.not_user) == (BOOKKEEPING_TOOLS, TOOL_ERRORS, None)
    assert tau.detect == shell.detect == ("repeat", "same_error", "recurring_error", "stale")
    assert shell.exclude == BOOKKEEPING_TOOLS
    assert shell.not_user == r"\APlease always provide EXACTLY ONE action"
    # The shell's return code is added to what the defaults see, not put in its place.
    assert shell.error_pattern is not None and r"<returncode>" in shell.error_pattern
    assert shell.error_pattern.startswith(f"(?:{TOOL_ERRORS})|")
