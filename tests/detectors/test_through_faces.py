"""The detectors beyond consecutive repeats through every face."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.tools import ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver

from repeat_reminder_langchain import BOOKKEEPING_TOOLS, ConfigError, ReminderConfig
from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain._detectors import DETECTORS

from ..conftest import Guarded, build
from ..helpers import SHIPPED, ask, call, other, probe, scripted, turn

Make = Callable[..., Guarded]
A = {"q": "a"}


def tags(messages: list[Any]) -> list[tuple[str, str, str, int]]:
    """`(detector, level, tool, count)` of every reminder, in order."""
    return [
        (t["detector"], t["level"], t["tool"], t["count"])
        for t in (m.additional_kwargs["repeat_tool_reminder"] for m in messages if is_reminder(m))
    ]


def texts(messages: list[Any]) -> list[str]:
    return [str(m.content) for m in messages if is_reminder(m)]


@tool
def book(amount: int) -> str:
    """Book the trip."""
    raise ToolException("payment amount does not add up")


book.handle_tool_error = True  # a ToolException becomes an error result, as agents see it


@tool
def shell(command: str) -> str:
    """Run a shell command."""
    if command.startswith("pylint"):
        return "Error: pylint: No module named 'astroid'"
    return f"ran {command}"


@tool
def think(thought: str) -> str:
    """Think."""
    return "ok"


def _interleaved(times: int) -> list[Any]:
    """`probe(a)` `times` times, each with another call in between."""
    script = []
    for n in range(times):
        script.append(turn(call("probe", A)))
        script.append(turn(call("other", {"q": n})))
    return script[:-1]


# -- stale ------------------------------------------------------------------------------------


def test_stale_reminds_when_a_call_keeps_returning_the_same_result(guarded: Make) -> None:
    agent = guarded(scripted(_interleaved(4)), detect=["repeat", "stale"])
    messages = agent.invoke(ask())

    assert tags(messages) == [("stale", "gentle", "probe", 3)]
    assert "returned exactly the same result 3 times" in texts(messages)[0]


def test_a_stale_loop_whose_results_differ_only_by_a_timestamp_and_a_uuid_is_seen(
    guarded: Make,
) -> None:
    def agent(**fields: Any) -> Guarded:
        polls = itertools.count()

        @tool
        def job_status(job_id: str) -> str:
            """Check a job."""
            n = next(polls)
            uuid = f"{n:08x}-0000-4000-8000-{0:012x}"
            return f"job {job_id}: pending (at 2026-12-05T02:{n:02d}:00Z, {uuid})"

        script = []
        for n in range(3):
            script += [turn(call("job_status", {"job_id": "7"})), turn(call("other", {"q": n}))]
        return guarded(scripted(script[:-1]), tools=[job_status, other], detect=["stale"], **fields)

    # Compared byte for byte (as before the normaliser), each poll is news.
    assert tags(agent().invoke(ask())) == [("stale", "gentle", "job_status", 3)]
    assert tags(agent(normalise_results=False).invoke(ask())) == []


def test_stale_is_off_by_default(guarded: Make) -> None:
    assert tags(guarded(scripted(_interleaved(4))).invoke(ask())) == []


def test_a_different_result_starts_the_stale_count_over(guarded: Make) -> None:
    readings = itertools.count()

    @tool
    def gauge(q: str) -> str:
        """Read the gauge."""
        return "7" if next(readings) != 2 else "8"

    script = []
    for n in range(5):
        script += [turn(call("gauge", A)), turn(call("other", {"q": n}))]
    agent = guarded(scripted(script), tools=[gauge, other], detect=["stale"])

    # Results 7, 7, 8, 7, 7: the third differs, so the fourth and fifth count 1 and 2.
    assert tags(agent.invoke(ask())) == []


def test_stale_detailed_reminders_cite_the_evidence(guarded: Make) -> None:
    agent = guarded(scripted(_interleaved(4)), detect=["stale"], stale_thresholds=[2, 4])
    messages = agent.invoke(ask())

    assert tags(messages) == [("stale", "gentle", "probe", 2), ("stale", "detailed", "probe", 4)]
    detailed = texts(messages)[1]
    assert "- tool: probe" in detailed
    assert "- identical_results: 4" in detailed
    assert '- arguments: {"q":"a"}' in detailed


def test_consecutive_identical_calls_draw_one_reminder_repeat_first(guarded: Make) -> None:
    script = [turn(call("probe", A)) for _ in range(3)]
    agent = guarded(scripted(script), detect=["repeat", "stale", "same_error"])

    assert tags(agent.invoke(ask())) == [("repeat", "gentle", "probe", 3)]


def test_a_turn_whose_calls_draw_several_reminders_is_told_once(guarded: Make) -> None:
    # A failing booking retried beside the same note, in one turn each time: both keep
    # returning the same, and the model reads it in one message.
    script = [
        turn(call("think", {"thought": "retry"}), call("book", {"amount": 100})) for _ in range(3)
    ]
    agent = guarded(scripted(script), tools=[book, think], detect=["repeat", "stale"])
    messages = agent.invoke(ask())

    (reminder,) = [m for m in messages if is_reminder(m)]
    assert messages[messages.index(reminder) - 1].type == "tool"  # after the turn's results
    tag = reminder.additional_kwargs["repeat_tool_reminder"]
    assert tag["summary"] == "think \u00d7 3 \u00b7 book \u00d7 3"
    assert [(t["detector"], t["tool"], t["count"]) for t in tag["reminders"]] == [
        ("stale", "think", 3),
        ("stale", "book", 3),
    ]
    said = str(reminder.content)
    assert said.index("`think` has now returned") < said.index("`book` has now returned")
    assert agent.stats.snapshot()["detectors"] == {"stale": {"delivered": 2, "undelivered": 0}}


def test_a_new_user_message_starts_stale_counts_over(guarded: Make, thread: str) -> None:
    agent = guarded(
        scripted([*_interleaved(2), AIMessage("that is all for now"), turn(call("probe", A))]),
        detect=["stale"],
        checkpointer=InMemorySaver(),
    )
    first = agent.invoke(ask(), thread)
    second = agent.invoke(ask("again"), thread)

    assert tags(first) == [] and tags(second) == []  # 2 before the user spoke, 1 after


# -- same_error -------------------------------------------------------------------------------


def test_same_error_reminds_when_varied_calls_fail_alike(guarded: Make) -> None:
    script = [turn(call("book", {"amount": n})) for n in (100, 105, 110)]
    agent = guarded(scripted(script), tools=[book], detect=["repeat", "same_error"])
    messages = agent.invoke(ask())

    assert tags(messages) == [("same_error", "gentle", "book", 3)]
    assert "with 3 different argument sets" in texts(messages)[0]


def test_same_error_detailed_reminders_quote_the_error(guarded: Make) -> None:
    script = [turn(call("book", {"amount": n})) for n in range(5)]
    agent = guarded(
        scripted(script), tools=[book], detect=["same_error"], same_error_thresholds=[2, 5]
    )
    detailed = texts(agent.invoke(ask()))[1]

    assert "- consecutive_failures: 5" in detailed
    assert "- argument_sets: 5" in detailed
    assert "- error: payment amount does not add up" in detailed


def test_error_pattern_counts_errors_that_tools_return(guarded: Make) -> None:
    script = [turn(call("shell", {"command": f"pylint --disable={n} x.py"})) for n in range(3)]
    plain = guarded(scripted(script), tools=[shell], detect=["same_error"])
    patterned = guarded(
        scripted(script), tools=[shell], detect=["same_error"], error_pattern=r"^Error:"
    )

    assert tags(plain.invoke(ask())) == []  # a returned "Error: ..." is a success by status
    assert tags(patterned.invoke(ask())) == [("same_error", "gentle", "shell", 3)]


@pytest.mark.parametrize(
    "between",
    [
        {"name": "shell", "args": {"command": "ls"}},  # a success of the same tool
        {"name": "probe", "args": A},  # another tool
    ],
)
def test_anything_but_the_same_failure_ends_a_failure_run(
    guarded: Make, between: dict[str, Any]
) -> None:
    fail = [turn(call("shell", {"command": f"pylint -{n}"})) for n in range(4)]
    script = [*fail[:2], turn(call(between["name"], between["args"])), *fail[2:]]
    agent = guarded(
        scripted(script), tools=[shell, probe], detect=["same_error"], error_pattern="^Error:"
    )

    assert tags(agent.invoke(ask())) == []


def test_a_different_error_text_ends_a_failure_run(guarded: Make) -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise ToolException("timeout" if url.endswith("2") else "connection refused")

    fetch.handle_tool_error = True

    script = [turn(call("fetch", {"url": f"http://h/{n}"})) for n in (0, 1, 2, 3, 4)]
    agent = guarded(scripted(script), tools=[fetch], detect=["same_error"])

    assert tags(agent.invoke(ask())) == []  # refused twice, timeout, refused twice


def test_untracked_calls_are_transparent_to_every_detector(guarded: Make) -> None:
    script = []
    for n in range(3):
        script += [turn(call("book", {"amount": n})), turn(call("think", {"thought": str(n)}))]
    agent = guarded(
        scripted(script[:-1]),
        tools=[book, think],
        detect=["same_error"],
        exclude=list(BOOKKEEPING_TOOLS),
    )

    assert tags(agent.invoke(ask())) == [("same_error", "gentle", "book", 3)]


# -- recurring_error --------------------------------------------------------------------------


def test_recurring_error_reminds_when_one_call_fails_alike_between_other_steps(
    guarded: Make, thread: str
) -> None:
    script = []
    for n in range(3):
        script += [turn(call("book", {"amount": 5})), turn(call("other", {"q": str(n)}))]
        script.append(AIMessage("The booking failed. Shall I try again?"))
    agent = guarded(
        scripted(script),
        tools=[book, other],
        checkpointer=InMemorySaver(),
        detect=["same_error", "recurring_error"],
    )
    for text in ["book it", "yes", "yes, again"]:
        messages = agent.invoke(ask(text), thread)

    # `same_error` ends at the other tool; the booking fails alike after each user message.
    assert tags(messages) == [("recurring_error", "gentle", "book", 3)]
    assert "failed 3 times with the same error, with other steps in between" in texts(messages)[0]
    assert "payment amount does not add up" in texts(messages)[0]


# -- cycle ------------------------------------------------------------------------------------


@tool
def edit(change: str) -> str:
    """Edit the script."""
    return "edited"


@tool
def run(command: str) -> str:
    """Run the script."""
    return "IndentationError: unexpected indent (t.py, line 3)"


def _rounds(times: int) -> list[Any]:
    """Insert a debug line, run into the same error, take the line out: `times` rounds."""
    script = []
    for _ in range(times):
        script += [
            turn(call("edit", {"change": "insert print"})),
            turn(call("run", {"command": "python t.py"})),
            turn(call("edit", {"change": "delete print"})),
        ]
    return script


def test_cycle_reminds_when_a_sequence_comes_back_with_the_same_results(guarded: Make) -> None:
    agent = guarded(scripted(_rounds(3)), tools=[edit, run], detect=["repeat", "cycle"])
    messages = agent.invoke(ask())

    assert tags(messages) == [("cycle", "gentle", "edit", 3)]
    said = texts(messages)[0]
    assert "the same sequence of calls 3 times in a row" in said
    assert '  2. run {"command":"python t.py"}' in said


def test_cycle_is_off_by_default_and_repeat_sees_no_repeat(guarded: Make) -> None:
    assert tags(guarded(scripted(_rounds(3)), tools=[edit, run]).invoke(ask())) == []


def test_a_user_message_starts_the_rounds_over(guarded: Make, thread: str) -> None:
    agent = guarded(
        scripted([*_rounds(2), AIMessage("stuck"), *_rounds(2)]),
        tools=[edit, run],
        checkpointer=InMemorySaver(),
        detect=["cycle"],
    )
    agent.invoke(ask(), thread)
    messages = agent.invoke(ask("try again"), thread)

    assert tags(messages) == []  # two rounds each side of the user: never three in a row


# -- same_output ------------------------------------------------------------------------------

TRACE = "Traceback (most recent call last):\n  File repro.py, line 3\nValueError: bad input"


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return TRACE if command.startswith("python") else ""


def new_names() -> list[AIMessage]:
    script = []
    for name in ("repro", "repro2", "repro3"):
        script += [
            turn(call("bash", {"command": f"cp base.py {name}.py"})),
            turn(call("bash", {"command": f"python {name}.py"})),
        ]
    return script


def test_same_output_counts_and_reports_without_reminding_unless_asked(guarded: Make) -> None:
    agent = guarded(scripted(new_names()), tools=[bash], detect=["repeat", "same_output"])
    assert tags(agent.invoke(ask())) == []
    stats = agent.stats.snapshot()
    assert stats["detectors"] == {"same_output": {"delivered": 0, "undelivered": 1}}
    assert stats["undelivered"] == {"bash": {"gentle": 1}}
    # With escalation on, it still only reports: it never stops a run.
    stopping = guarded(
        scripted(new_names()),
        tools=[bash],
        detect=["same_output"],
        same_output_thresholds=[2],
        escalate_after=3,
    )
    assert tags(stopping.invoke(ask())) == []
    assert stopping.stats.snapshot()["escalations"] == {}


def test_what_it_reports_is_logged_as_counted_not_sent(
    guarded: Make, caplog: pytest.LogCaptureFixture
) -> None:
    script = [turn(call("bash", {"command": f"python {name}.py"})) for name in "abc"]
    agent = guarded(scripted(script), tools=[bash], detect=["same_output"])
    with caplog.at_level(logging.INFO, logger="repeat_reminder_langchain"):
        assert tags(agent.invoke(ask())) == []
    (line,) = [r.getMessage() for r in caplog.records if r.name == "repeat_reminder_langchain"]
    assert line.startswith(
        "repeat tool reminder counted, not sent (same_output reports only: remind=False): bash × 3"
    )


def test_same_output_reminds_when_new_names_bring_back_one_output(guarded: Make) -> None:
    agent = guarded(
        scripted(new_names()),
        tools=[bash],
        detect=["repeat", "same_output"],
        detectors={"same_output": {"remind": True}},
    )
    messages = agent.invoke(ask())

    assert tags(messages) == [("same_output", "gentle", "bash", 3)]
    said = texts(messages)[0]
    assert "returned this same output 3 times, to 3 different sets of arguments" in said
    assert "ValueError: bad input" in said


def test_same_output_is_off_by_default(guarded: Make) -> None:
    script = [turn(call("bash", {"command": f"python r{n}.py"})) for n in range(4)]
    assert tags(guarded(scripted(script), tools=[bash]).invoke(ask())) == []


# -- what every detector shares ---------------------------------------------------------------


def test_reminders_say_which_detector_fired_in_events_and_stats(guarded: Make) -> None:
    agent = guarded(scripted(_interleaved(3)), detect=["stale"])
    chunks = list(agent.graph.stream(ask(), agent.run_config(), stream_mode="custom"))

    assert [c["repeat_tool_reminder"]["detector"] for c in chunks] == ["stale"]
    assert agent.stats.snapshot()["detectors"] == {"stale": {"delivered": 1, "undelivered": 0}}


@pytest.mark.parametrize("face", ["state", "middleware"])
def test_the_state_kept_stays_small_with_every_detector_on(face: str, thread: str) -> None:
    # Every memory filled: 240 calls with new arguments, long ones, half of them failing
    # with errors of their own, the other half returning one of 20 outputs.
    @tool
    def read(path: str, pad: str) -> str:
        """Read a file."""
        return f"contents shared by many files: {int(path.split('-')[1]) % 20:03d} " * 3

    @tool
    def run(command: str) -> str:
        """Run a command."""
        return f"Error: {command[:16]} failed, with a long message of its own " * 4

    script = [
        turn(
            call("read", {"path": f"file-{n}", "pad": "p" * 10_000}),
            call("run", {"command": f"make target-{n} " + "x" * 2_000}),
        )
        for n in range(120)
    ]
    agent = build(
        face,
        scripted(script),
        tools=[read, run],
        checkpointer=InMemorySaver(),
        detect=list(DETECTORS),
        error_pattern="^Error",
    )
    agent.invoke(ask(), thread)

    stored = agent.state(thread)["repeat_tool_reminder"]
    mine = stored[agent.guard.name] if face == "middleware" else stored
    # The budget is per detector: one more adds its own memory, bounded as each one is.
    memories = mine.pop("detectors")
    remembering = {name for name in SHIPPED if DETECTORS[name].memory is not None}
    assert remembering <= set(memories) <= set(DETECTORS)  # each shipped one's memory is in it
    assert all(len(json.dumps(memory)) <= 4096 for memory in memories.values()), memories
    assert len(json.dumps(mine)) <= 512
    assert len(memories["stale"]["calls"]) == 64


def test_detector_settings_fail_loud() -> None:
    with pytest.raises(ConfigError, match="detect: unknown detector 'stal'; did you mean 'stale'"):
        ReminderConfig(detect=["stal"])
    with pytest.raises(ConfigError, match="detect: must be a non-empty list"):
        ReminderConfig(detect="stale")
    with pytest.raises(ConfigError, match="stale_thresholds: invalid threshold 1"):
        ReminderConfig(stale_thresholds=[1])
    with pytest.raises(ConfigError, match="same_error_thresholds: must not be empty"):
        ReminderConfig(same_error_thresholds=[])
    with pytest.raises(ConfigError, match="error_pattern: invalid regular expression"):
        ReminderConfig(error_pattern="(")


def test_stored_reminders_of_every_detector_are_reminders() -> None:
    # A stored SystemMessage of any detector is recognised (and rendered for providers).
    message = SystemMessage(
        "x",
        additional_kwargs={
            "lc_source": "repeat_tool_reminder",
            "repeat_tool_reminder": {"detector": "stale", "level": "gentle"},
        },
    )
    assert is_reminder(message)
