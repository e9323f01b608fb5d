"""Settings from the user's own logs: what `Suggester` proposes, and why."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    add_notification_metadata,
)
from langchain_core.tools import tool

from repeat_reminder_langchain import (
    BOOKKEEPING_TOOLS,
    ReminderConfig,
    RepeatToolReminderMiddleware,
    RepeatToolReminderWarning,
)
from repeat_reminder_langchain._config import TOOL_ERRORS
from repeat_reminder_langchain._detectors import DETECTORS
from repeat_reminder_langchain.tooling import _suggest as suggest
from repeat_reminder_langchain.tooling._cli import main
from repeat_reminder_langchain.tooling._logs import Conversation, LogReader
from repeat_reminder_langchain.tooling._suggest import Suggester, Sweeper
from repeat_reminder_langchain.tooling._tables import format_suggestion, proposal_lines
from repeat_reminder_langchain.tooling.audit import read_logs, suggest_settings

from ..detectors.test_example import SameTool
from ..helpers import SHIPPED, assert_adjacent, reminders, scripted, turn, usage_error
from ..helpers import call as call_

DATA = Path(__file__).resolve().parents[1] / "data"
NOTICE = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
SEED = ReminderConfig(profile="seed")  # 0.4.0's defaults: nothing excluded, no error_pattern
DEFAULT_DETECT = ["repeat", "same_error", "recurring_error"]


@pytest.fixture(autouse=True)
def shipped_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The figures and proposals below are the shipped detectors' on these conversations.

    A detector added by the guide flags some of them too and is proposed with its own figures
    (`test_a_registered_detector_is_swept_and_proposed`): here it is left out.
    """
    for name in [name for name in DETECTORS if name not in SHIPPED]:
        monkeypatch.delitem(DETECTORS, name)


def conversation(index: int, steps: list[Any], task: str = "go") -> Conversation:
    """`steps`: (tool, args, result) calls, one a turn, or texts the user (or harness) says."""
    messages: list[BaseMessage] = [HumanMessage(task)]
    for n, step in enumerate(steps):
        if isinstance(step, str):
            messages += [AIMessage("thinking", id=f"m{n}"), HumanMessage(step)]
            continue
        tool, args, result, *status = step
        call = {"name": tool, "args": args, "id": f"c{n}"}
        messages.append(AIMessage("", tool_calls=[call], id=f"m{n}"))
        marked = status[0] if status else "success"
        messages.append(ToolMessage(result, tool_call_id=f"c{n}", status=marked))
    return Conversation(index, None, "", messages, tuple(range(len(messages))), "langchain")


def suggested(conversations: list[Conversation], config: ReminderConfig | None = None) -> Any:
    suggester = Suggester(config)
    for item in conversations:
        suggester.add(item)
    return suggester.finish()


def swept(conversations: list[Conversation], config: ReminderConfig | None = None) -> Any:
    """What `audit --suggest` proposes: the settings, then the detectors their sweep finds."""
    sweeper = Sweeper(suggested(conversations, config))
    for item in conversations:
        sweeper.add(item)
    return sweeper.finish()


DENIED = "Permission denied: /etc is not yours"  # a failure no default pattern recognises


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return DENIED


BOOK = ("book", {"seat": 1}, "Error: payment does not add up")
FIND = ("find", {}, "ok")


def think(thought: str = "hmm") -> tuple[str, dict[str, str], str]:
    return ("think", {"thought": thought}, "")


def note(text: str = "hmm") -> tuple[str, dict[str, str], str]:
    """A bookkeeping tool the defaults do not know."""
    return ("note", {"text": text}, "")


def test_a_tool_with_empty_results_between_identical_calls_is_proposed_for_exclude() -> None:
    loops = [conversation(n, [BOOK, note(f"try {n}"), BOOK, FIND]) for n in range(2)]
    found = suggested(loops)

    (exclude,) = found.proposals  # BOOK's `Error: ` the default error_pattern sees already
    assert (exclude.setting, exclude.conversations) == ("exclude", 2)
    # A list set replaces the default one: the bookkeeping tools stay in it.
    assert exclude.value == [*BOOKKEEPING_TOOLS, "note"]
    assert exclude.reasons == ({"tool": "note", "hides": 2, "results": 2, "empty": True},)
    assert exclude.example == "conversation 0, calls 0-2"
    assert found.config.exclude == (*BOOKKEEPING_TOOLS, "note")
    # `think` is excluded already: nothing to propose (`note`, after, stands between nothing).
    # The guard sees through it, and so does the suggestion: `note` between the same calls
    # with a `think` is proposed all the same.
    thinking = [conversation(n, [BOOK, think(f"try {n}"), BOOK, note(f"{n}")]) for n in range(2)]
    assert suggested(thinking).proposals == []
    both = [conversation(n, [BOOK, think(), note(f"try {n}"), BOOK]) for n in range(2)]
    (exclude,) = suggested(both).proposals
    assert (exclude.value[-1], exclude.example) == ("note", "conversation 0, calls 0-3")
    # Under 0.4.0's defaults nothing is excluded: `think` is proposed, alone.
    (exclude, _) = suggested(thinking, SEED).proposals  # and the error pattern, below
    assert (exclude.value, exclude.example) == (["think"], "conversation 0, calls 0-2")
    assert suggested(thinking, SEED).config.exclude == ("think",)
    assert [p.setting for p in suggested(both, SEED).proposals] == ["error_pattern"]
    # A tool asked the same each time, between the same attempts, is half of a cycle.
    cycle = conversation(0, [BOOK, note(), BOOK, note(), BOOK])
    assert suggested([cycle]).proposals == []
    assert [p.setting for p in suggested([cycle], SEED).proposals] == ["error_pattern"]


def test_a_tool_whose_results_vary_hides_nothing_it_can_be_told_to() -> None:
    steps = [BOOK, ("search", {"q": 1}, "3 flights"), BOOK, ("search", {"q": 2}, "no flight")]
    found = suggested([conversation(0, steps)], ReminderConfig(error_pattern="x"))
    assert found.proposals == []
    assert (
        format_suggestion(found)
        == "1 conversation: no setting to suggest; the settings given stand."
    )


def test_an_error_word_at_the_start_of_results_in_several_conversations_is_the_pattern() -> None:
    steps = [("book", {"n": 1}, "Failed: no seat"), ("pay", {}, "ok")]
    calls = [conversation(n, steps) for n in range(2)]
    (proposal,) = suggested(calls).proposals
    # A pattern set replaces the default one: the failures that one sees are still seen.
    assert (proposal.setting, proposal.value) == (
        "error_pattern",
        rf"(?:{TOOL_ERRORS})|(?:\AFailed:)",
    )
    (reason,) = proposal.reasons
    assert reason == {"prefix": "Failed", "results": 2, "tools": 1, "failed": 0, "marked": 0}
    assert suggested(calls[:1]).proposals == []  # once is no habit
    assert len(suggested([conversation(0, steps * 3)]).proposals) == 1  # three times is
    # `Error: ` the default pattern sees already; 0.4.0's defaults see no failure in text.
    errors = [conversation(n, [("book", {"n": 1}, "Error: no seat"), FIND]) for n in range(2)]
    assert suggested(errors).proposals == []
    (proposal,) = suggested(errors, SEED).proposals
    assert proposal.value == r"\AError:"
    # `Error:` where the default pattern sees only some of them: the word is proposed.
    errors[1].messages[2] = ToolMessage("Error:\nno seat", tool_call_id="c0")
    (proposal,) = suggested(errors).proposals
    assert proposal.value == rf"(?:{TOOL_ERRORS})|(?:\AError:)"


def test_the_pattern_is_checked_against_results_marked_as_errors() -> None:
    steps = [
        ("book", {}, "Error: no seat", "error"),
        ("pay", {}, "Exception: declined"),
        ("x", {}, "boom", "error"),
    ]
    found = suggested([conversation(n, steps) for n in range(2)], SEED)
    (proposal,) = found.proposals
    assert proposal.value == r"(?:\AError:)|(?:\AException:)"
    assert {r["prefix"]: (r["failed"], r["marked"]) for r in proposal.reasons} == {
        "Error": (2, 4),
        "Exception": (0, 4),
    }
    assert "(2 of them among the 4 marked status=error)" in format_suggestion(found)
    # Under the defaults `Error: ` is seen already: `Exception:` is proposed beside it.
    found = suggested([conversation(n, steps) for n in range(2)])
    (proposal,) = found.proposals
    assert proposal.value == rf"(?:{TOOL_ERRORS})|(?:\AException:)"
    assert [(r["prefix"], r["failed"], r["marked"]) for r in proposal.reasons] == [
        ("Exception", 0, 4)
    ]
    assert "(0 of them among the 4 marked status=error)" in format_suggestion(found)
    failing = re.compile(proposal.value)
    assert [bool(failing.search(result)) for _, _, result, *_ in steps] == [True, True, False]


def test_a_return_code_envelope_gives_a_pattern_for_codes_other_than_zero() -> None:
    def run(code: int, output: str) -> tuple[str, dict[str, str], str]:
        return (
            "bash",
            {"command": output},
            f"<returncode>{code}</returncode>\n<output>\n{output}</output>",
        )

    steps = [run(0, "ok\n"), run(1, "Traceback: boom\n"), run(1, ""), run(0, "fine\n")]
    found = suggested([conversation(0, steps)])
    (proposal,) = found.proposals
    assert proposal.reasons == ({"envelope": "returncode", "results": 4, "nonzero": 2, "empty": 1},)
    failing = re.compile(proposal.value)
    assert [bool(failing.search(result)) for _, _, result in steps] == [False, True, False, False]
    assert failing.search("<returncode>-9</returncode>\n<warning>too long</warning>")
    assert failing.search("Error: the default pattern's failures are kept")
    assert not re.search(suggested([conversation(0, steps)], SEED).proposals[0].value, "Error: x")
    assert proposal.example.startswith(
        "conversation 0: <returncode>1</returncode> <output> Traceback"
    )
    said = "4 results start with <returncode>N</returncode>, 2 with a code other than 0 (1 of"
    assert said in format_suggestion(found)
    # Every code 0, or an envelope on few results: nothing says a call failed.
    assert suggested([conversation(0, [steps[0], steps[3]])]).proposals == []
    few = [steps[1], *(("read", {"n": n}, "text") for n in range(3))]
    assert suggested([conversation(0, few)]).proposals == []


def test_a_notice_many_conversations_get_after_the_task_is_not_the_user() -> None:
    talks = [
        conversation(n, [NOTICE.replace("2", str(n)), "Yes, please go ahead and book it.", FIND])
        for n in range(4)
    ]
    (proposal,) = suggested(talks).proposals
    assert proposal.value == r"\APlease always provide EXACTLY ONE action"
    (reason,) = proposal.reasons
    assert reason == {
        "head": NOTICE[:40],
        "messages": 4,
        "conversations": 4,
        "fixed": 4,  # the number in it aside, one text
        "answered": 4,
    }
    assert re.search(proposal.value, NOTICE)
    said = (
        "4 user-role messages in 4 conversations start with 'Please always provide EXACTLY ONE "
        "action': 4 word for word (numbers aside), 4 answered by the model"
    )
    assert said in format_suggestion(suggested(talks))
    assert suggested(talks, ReminderConfig(not_user="^Note")).proposals == []
    # Marked as the harness's own (langchain-core's notification metadata), it is not the
    # user already: there is nothing to propose.
    for talk in talks:
        talk.messages[2] = add_notification_metadata(talk.messages[2], source="harness")
    assert suggested(talks).proposals == []


def test_a_task_that_recurs_and_a_few_people_saying_the_same_are_the_user() -> None:
    tasks = [conversation(n, ["thanks"], task=NOTICE) for n in range(4)]  # only as the task
    reply = "Yes, please transfer me to a human agent now."
    replies = [conversation(n, [reply, FIND] if n < 3 else []) for n in range(40)]
    assert suggested(tasks).proposals == []
    assert suggested(replies).proposals == []  # 3 of 40: a few people, not a harness


def test_a_reply_many_customers_give_in_their_own_words_is_the_user() -> None:
    # A simulated customer's "yes" recurs in many conversations, each time worded its own way.
    tails = ["Thanks", "Thank you!", "Cheers", "Great", "Perfect", "Ok", "Go on", "Sure", "Yes"]
    said = "Yes, please proceed with the cancellation of my reservation."
    replies = [conversation(n, [f"{said} {tail}", FIND]) for n, tail in enumerate(tails)]
    assert suggested(replies).proposals == []
    # A sign-off in one wording ends the conversation: the model never answers it.
    bye = [conversation(n, [FIND, "Thank you so much for your help! ###STOP###"]) for n in range(9)]
    assert suggested(bye).proposals == []
    # The same notice, word for word and answered each time, is the harness.
    notices = [conversation(n, [said + " Reply with one action.", FIND]) for n in range(10)]
    assert [p.setting for p in suggested(notices).proposals] == ["not_user"]


def test_the_real_customer_service_conversations_get_no_not_user() -> None:
    suggester = Suggester()
    for item in LogReader().read([str(DATA / "tau_bench_excerpt.json")]):
        suggester.add(item)
    assert suggester.finish().proposals == []  # think and `Error: ` the defaults know
    seed = Suggester(SEED)
    for item in LogReader().read([str(DATA / "tau_bench_excerpt.json")]):
        seed.add(item)
    assert [p.setting for p in seed.finish().proposals] == ["exclude", "error_pattern"]


def test_settings_given_are_not_proposed_again_and_the_proposals_go_on_top() -> None:
    loops = [conversation(n, [BOOK, think("a"), BOOK, think("b")]) for n in range(2)]
    found = suggested(loops, ReminderConfig(exclude=["todo"], error_pattern="^Error"))
    assert [p.setting for p in found.proposals] == ["exclude"]
    assert found.proposals[0].value == ["todo", "think"]
    assert found.config == ReminderConfig(exclude=["todo", "think"], error_pattern="^Error")
    assert suggested(loops, ReminderConfig(exclude=["think"])).config.exclude == ("think",)
    # An error_pattern given, even none, is not proposed again.
    fails = [conversation(n, [("book", {}, "Failed: no seat")]) for n in range(2)]
    assert suggested(fails, ReminderConfig(error_pattern=None)).proposals == []


def test_the_rarest_user_texts_are_forgotten_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suggest, "_KEPT", 3)
    said = "{}: a person writing something long enough, once, as number {}."
    talks = [
        conversation(n, [NOTICE, FIND, said.format(n, 1), said.format(n, 2)]) for n in range(3)
    ]
    assert [p.setting for p in suggested(talks).proposals] == ["not_user"]


def test_two_notices_are_one_pattern() -> None:
    other = "Your last command ran for too long and was stopped after 60 seconds."
    talks = [conversation(n, [NOTICE, FIND, other, FIND]) for n in range(3)]
    (proposal,) = suggested(talks).proposals
    assert proposal.value == rf"\A(?:{NOTICE[:40]}|{other[:40]})"


def test_the_sweep_counts_each_detectors_flags_under_the_suggested_settings() -> None:
    loops = [conversation(n, [BOOK, note("a"), BOOK, note("b"), BOOK]) for n in range(2)]
    found = suggested(loops)
    sweeper = Sweeper(found)
    for item in loops:
        sweeper.add(item)
    assert found.sweep["repeat"] == {2: (2, 2), 3: (2, 2), 4: (0, 0)}  # note is excluded
    assert found.sweep["cycle"] == {2: (0, 0), 3: (0, 0), 4: (0, 0)}
    text = format_suggestion(found)
    excluded = [*BOOKKEEPING_TOOLS, "note"]
    assert f"  ReminderConfig(exclude={excluded!r})\n" in text
    assert f"  --exclude {','.join(excluded)}\n" in text
    assert "repeat           2 in 2  2 in 2  0 in 0" in text
    # Under 0.4.0's defaults, with the error pattern the logs call for.
    seed = suggested(loops, SEED)
    text = format_suggestion(seed)
    assert "ReminderConfig(exclude=['note'], error_pattern='\\\\AError:', profile='seed')" in text
    assert "--exclude note --error-pattern '\\AError:' --profile seed" in text


def test_the_detectors_the_sweep_finds_are_proposed_with_their_figures() -> None:
    loops = [conversation(n, [BOOK, note("a"), BOOK, note("b"), BOOK]) for n in range(2)]
    found = swept(loops)
    detect = found.proposals[-1]
    # Beside the detectors in use, the one the sweep finds (same_error, recurring_error flag
    # too: they are on already).
    assert (detect.setting, detect.value) == ("detect", [*DEFAULT_DETECT, "stale"])
    assert detect.reasons == ({"detector": "stale", "flags": 2, "conversations": 2},)
    assert detect.example == "conversation 0, message 9: book (stale)"
    assert found.config.detect == (*DEFAULT_DETECT, "stale")
    text = format_suggestion(found)
    assert "stale would remind 2 times at 3 in 2 conversations" in text
    assert "same_error would remind" not in text
    # Under 0.4.0's defaults (repeat alone), each detector found is proposed.
    seed = swept(loops, SEED)
    detect = seed.proposals[-1]
    assert detect.value == [*DEFAULT_DETECT, "stale"]
    assert detect.reasons[0] == {"detector": "same_error", "flags": 2, "conversations": 2}
    assert detect.example == "conversation 0, message 9: book (same_error)"
    assert "same_error would remind 2 times at 3 in 2 conversations" in format_suggestion(seed)
    given = swept(loops, ReminderConfig(detect=["stale"]))  # a setting given stands
    assert [p.setting for p in given.proposals] == ["exclude"]
    assert given.config.detect == ("stale",)
    quiet = [conversation(n, [BOOK, ("find", {}, "ok")]) for n in range(2)]
    assert swept(quiet).proposals == []  # the detectors in use stand
    assert [p.setting for p in swept(quiet, SEED).proposals] == ["error_pattern"]  # repeat alone


def test_a_detector_that_reports_only_is_shown_and_left_out_unless_asked_to_remind() -> None:
    passed = "12 passed in 0.31s: the very same long report after each of three fixes"
    runs = [("bash", {"command": f"python v{n}.py"}, passed) for n in range(3)]
    found = swept([conversation(0, runs)])
    assert found.sweep["same_output"][3] == (1, 1)
    assert found.proposals == []  # only same_output flags: repeat stands alone
    runs += [("read", {"path": "a"}, "the same text, read again and again")] * 3
    (detect,) = swept([conversation(0, runs)]).proposals
    assert detect.value == [*DEFAULT_DETECT, "stale"]
    left = (
        "same_output would remind 1 time at 3 in 1 conversation: left out, it reports without "
        "reminding unless asked (remind)"
    )
    assert left in "\n".join(proposal_lines(detect))
    with pytest.warns(RepeatToolReminderWarning, match="settings for same_output"):
        asked = ReminderConfig(detectors={"same_output": {"remind": True}})
    with warnings.catch_warnings():  # said above; the settings on top say it until detect does
        warnings.simplefilter("ignore", RepeatToolReminderWarning)
        (detect,) = swept([conversation(0, runs)], asked).proposals
    assert detect.value == [*DEFAULT_DETECT, "stale", "same_output"]


def test_logs_where_no_failure_can_be_seen_say_so_once() -> None:
    runs = [("read", {"path": str(n)}, "permission denied") for n in range(3)]
    found = swept([conversation(0, runs)])
    assert found.failures == 0
    text = format_suggestion(found)
    assert "\nsame_error  " not in text and "\nrecurring_error  " not in text
    assert text.count("no failure can be recognised") == 1
    assert text.endswith(
        "same_error and recurring_error: not counted, no failure can be recognised in these "
        'logs (no result is marked status="error" and no error_pattern fits)'
    )
    marked = swept([conversation(0, [(*run, "error") for run in runs])])
    assert marked.failures == 3
    assert "recognised" not in format_suggestion(marked)
    assert marked.proposals == []  # same_error flags: it is on already
    assert swept([conversation(0, [(*run, "error") for run in runs])], SEED).config.detect == (
        "repeat",
        "same_error",
    )


# -- the command line --------------------------------------------------------------------------


def test_the_written_settings_remind_of_the_loop_the_suggestion_found(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A tool that returns its errors, in a log that marks none (OpenAI's tool messages have no
    # status): five paths, one refusal. The file written is the one the middleware loads.
    messages: list[Any] = [{"role": "user", "content": "read the config"}]
    for n in range(5):
        call = {"id": f"c{n}", "type": "function"}
        call["function"] = {"name": "read_file", "arguments": json.dumps({"path": f"/etc/{n}"})}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": DENIED})
    log = tmp_path / "log.json"
    log.write_text(json.dumps([messages]), encoding="utf-8")
    written = tmp_path / "guard.toml"
    assert main(["audit", str(log), "--suggest", "--write-config", str(written)]) == 0
    pattern = rf"(?:{TOOL_ERRORS})|(?:\APermission denied:)"
    assert f"  --error-pattern '{pattern}'\n" in capsys.readouterr().out
    config = ReminderConfig.from_file(written)
    assert config.error_pattern == pattern
    assert config.detect == tuple(DEFAULT_DETECT)  # same_error, which flags, is on already

    model = scripted([turn(call_("read_file", {"path": f"/etc/{n}"})) for n in range(5)])
    guard = RepeatToolReminderMiddleware(config)
    agent = create_agent(model, tools=[read_file], middleware=[guard])
    out = agent.invoke({"messages": [HumanMessage("read the config")]})["messages"]
    assert_adjacent(out)
    assert reminders(out) == [("gentle", "read_file", 3)]


def test_audit_suggest_prints_the_settings_and_writes_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = str(DATA / "tau_bench_excerpt.json")
    assert main(["audit", path, "--suggest", "--write-config", str(tmp_path / "s.toml")]) == 0
    out = capsys.readouterr().out
    # `think` and `Error: ` the defaults know: only the detector the sweep finds is proposed.
    assert out.startswith(
        "1 conversation: the settings they call for, and why\n"
        "  --detect repeat,same_error,recurring_error,stale\n"
    )
    assert ReminderConfig.from_file(tmp_path / "s.toml") == ReminderConfig(
        detect=[*DEFAULT_DETECT, "stale"]
    )
    assert main(["audit", path, "--suggest", "--json", "--ignore-arguments", "x=y"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"] == {
        "ignore_arguments": {"x": ["y"]},
        "detect": [*DEFAULT_DETECT, "stale"],
    }
    assert data["sweep"]["repeat"]["3"] == {"flags": 1, "conversations": 1}
    assert data["failures"] == 3
    assert data["proposals"][-1]["reasons"] == [
        {"detector": "stale", "flags": 1, "conversations": 1}
    ]
    # Under 0.4.0's defaults, the bookkeeping tool and the error pattern too.
    assert main(["audit", path, "--suggest", "--json", "--profile", "seed"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"] == {
        "exclude": ["think"],
        "detect": [*DEFAULT_DETECT, "stale"],
        "error_pattern": r"\AError:",
        "profile": "seed",
    }
    assert data["proposals"][-1]["reasons"][0] == {
        "detector": "same_error",
        "flags": 1,
        "conversations": 1,
    }


def test_the_library_reads_logs_and_suggests_what_the_command_writes(tmp_path: Path) -> None:
    path = str(DATA / "tau_bench_excerpt.json")
    assert main(["audit", path, "--suggest", "--write-config", str(tmp_path / "s.toml")]) == 0
    conversations = list(read_logs([path]))
    assert [(found.index, found.source) for found in conversations] == [(0, path)]
    assert suggest_settings(conversations) == ReminderConfig.from_file(tmp_path / "s.toml")
    given = suggest_settings(conversations, ReminderConfig(error_pattern="^ERR"))
    assert (given.error_pattern, given.exclude) == ("^ERR", BOOKKEEPING_TOOLS)
    seed = suggest_settings(conversations, ReminderConfig(profile="seed", error_pattern="^ERR"))
    assert (seed.error_pattern, seed.exclude) == ("^ERR", ("think",))
    with pytest.raises(ValueError, match=r"missing\.json: no such file"):
        list(read_logs([str(tmp_path / "missing.json")]))


def test_audit_suggest_reads_standard_input_twice(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (DATA / "tau_bench_excerpt.json").read_bytes()

    class Stdin:
        buffer = __import__("io").BytesIO(data)

    monkeypatch.setattr("sys.stdin", Stdin)
    assert main(["audit", "-", "--suggest"]) == 0
    assert "repeat           1 in 1  1 in 1  0 in 0" in capsys.readouterr().out


@pytest.mark.parametrize("option", [["--html", "x.html"], ["--fail-on", "gentle"]])
def test_audit_only_options_are_refused_with_suggest(
    capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    argv = ["audit", str(DATA / "tau_bench_excerpt.json"), "--suggest", *option]
    assert usage_error(capsys, argv, "audit") == f"{option[0]} goes with the audit, not --suggest"


def test_a_file_that_cannot_be_read_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["audit", str(bad), "--suggest"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad}:1:")


def test_the_text_gives_the_settings_as_python_and_as_options() -> None:
    talks = [conversation(n, [NOTICE, FIND]) for n in range(3)]
    text = format_suggestion(
        suggested(talks, ReminderConfig(ignore_arguments={"run_*": ["a", "b"]}))
    )
    assert "  ReminderConfig(ignore_arguments={'run_*': ['a', 'b']}, not_user='\\\\APlease" in text
    assert "  --ignore-arguments 'run_*=a,b' --not-user '\\APlease always provide" in text


def test_words_given_are_kept_in_python_and_left_to_the_file_in_options() -> None:
    talks = [conversation(n, [NOTICE, FIND]) for n in range(3)]
    text = format_suggestion(suggested(talks, ReminderConfig(words={"*": {"gentle": "{tool}"}})))
    notice = "not_user='\\\\APlease always provide EXACTLY ONE action'"
    assert f"  ReminderConfig({notice}, words=" in text
    assert "--words" not in text


def test_a_registered_detector_is_swept_and_proposed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every detector of the registry, the one the guide adds too: from its declarations alone.
    monkeypatch.setitem(DETECTORS, SameTool.name, SameTool)
    reads = [("read", {"path": path}, f"the text of {path}") for path in "abcd"]
    found = swept([conversation(0, reads)])
    assert found.sweep["same_tool"] == {2: (1, 1), 3: (1, 1), 4: (1, 1)}
    (detect,) = found.proposals
    assert detect.value == [*DEFAULT_DETECT, "same_tool"]
    assert detect.example == "conversation 0, message 5: read (same_tool)"
    assert "same_tool    1 in 1  1 in 1  1 in 1\n" in format_suggestion(found)
