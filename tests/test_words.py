"""Reminder words the user sets: per detector and level, format strings or functions."""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import repeat_reminder_langchain
from repeat_reminder_langchain import (
    ConfigError,
    Escalation,
    Reminder,
    ReminderConfig,
    RepeatToolReminderWarning,
    _log,
    from_guard,
)
from repeat_reminder_langchain._conversation import tag_of
from repeat_reminder_langchain._reminder import UserWords, word_fields

from .conftest import Guarded
from .helpers import LoopModel, ask, assert_adjacent, reminders

Make = Callable[..., Guarded]

WORDS = {
    "repeat": {
        "gentle": "Call {count} of `{tool}` with {arguments}: same as before.",
        "final": "Ended after {count} calls of {tool} ({detector}, limit {limit}).",
    },
    "*": {"detailed": lambda reminder: f"STOP calling {reminder.tool} ({reminder.level})."},
}


def texts(messages: list[object]) -> list[str]:
    """What the guard said, as the model read it (a user turn's tags taken off)."""
    said = [str(m.content) for m in messages if from_guard(m)]  # type: ignore[attr-defined]
    return [
        s.removeprefix("<system-reminder>\n").removesuffix("\n</system-reminder>") for s in said
    ]


def test_the_users_words_reach_the_model_on_every_face(guarded: Make) -> None:
    messages = guarded(LoopModel(), words=WORDS).invoke(ask("loop 5"))

    assert reminders(messages) == [("gentle", "probe", 3), ("detailed", "probe", 5)]
    assert texts(messages) == [
        'Call 3 of `probe` with {"q":"same"}: same as before.',
        "STOP calling probe (detailed).",
    ]


def test_the_users_final_words_end_a_run_on_every_face(guarded: Make) -> None:
    agent = guarded(LoopModel(), words=WORDS, escalate_after=9, exit_behavior="end")
    messages = agent.invoke(ask("loop 50"))

    assert texts(messages)[-1] == "Ended after 9 calls of probe (repeat, limit 9)."


def test_the_users_final_words_may_quote_the_request_and_the_loops_latest_result(
    guarded: Make,
) -> None:
    words = {"*": {"final": 'You asked "{request}"; {tool} said "{result}".'}}
    for behavior in ("end", "finish"):
        agent = guarded(
            LoopModel(), words=words, thresholds=[3], escalate_after=4, exit_behavior=behavior
        )
        messages = agent.invoke(ask("loop 50"))
        # Said by the message that ends the run, or that asks for the answer (a model that
        # goes on after it is ended with the same words; a call it makes is refused).
        stopping = [m for m in messages if (tag_of(m) or {}).get("behavior") == behavior]
        said = texts([m for m in stopping if m.type != "tool"])
        assert said == ['You asked "loop 50"; probe said "probed same".']
        assert_adjacent(messages)
    # Said once when the guard is built, with a value in each: words of a result alone are fine.
    assert ReminderConfig(words={"*": {"final": "{result}"}}).words
    with pytest.raises(ConfigError, match=r"cannot be said \(the words are empty\)"):
        ReminderConfig(words={"*": {"final": "{result:.0}"}})


def test_words_left_unset_are_the_detectors_own() -> None:
    words = ReminderConfig(detect=["repeat", "stale"], words={"stale": {"gentle": "{tool}"}}).words
    reminder = Reminder("grep", 3, "gentle", "{}")
    assert reminder.say(words) == reminder.text
    assert reminder.text.startswith("You have called `grep` 3 times in a row")
    stopped = Escalation("grep", 9, "repeat", "{}", "end", limit=9)
    assert stopped.say(words) == stopped.text
    assert stopped.say({"*": {"final": "{what}"}}) == "the same call with the same arguments"
    assert stopped.say({"*": {"final": lambda escalation: f"bye {escalation.tool}"}}) == "bye grep"


def test_a_detectors_own_words_come_before_every_detectors() -> None:
    words = {"*": {"gentle": "any {tool}"}, "repeat": {"gentle": "mine {tool}"}}
    assert Reminder("ls", 3, "gentle", "{}").say(words) == "mine ls"
    assert Reminder("ls", 3, "gentle", "{}", detector="stale").say(words) == "any ls"


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        ({"repeat": {"gentle": "x {toool}"}}, "words: repeat.gentle: unknown field {toool}; the"),
        ({"repeat": {"final": "{evidence}"}}, "words: repeat.final: unknown field {evidence}"),
        ({"repeat": {"gentle": "{tool.upper}"}}, "unknown field {tool.upper}"),
        ({"repeat": {"gentle": "{}"}}, "words: repeat.gentle: unknown field {}"),
        ({"repeat": {"gentle": "{"}}, "repeat.gentle: not a format string"),
        # Said with a value of every field when the guard is built, not first at a loop.
        ({"repeat": {"gentle": "{tool:d}"}}, "repeat.gentle: cannot be said (Unknown format code"),
        ({"repeat": {"final": "{count!x}"}}, "repeat.final: cannot be said (Unknown conversion"),
        ({"same_error": {"detailed": "{variants:s}"}}, "same_error.detailed: cannot be said"),
        ({"repeat": {"gentle": ""}}, "words: repeat.gentle: must not be empty"),
        ({"*": {"final": " \n"}}, "words: *.final: must not be empty"),
        ({"repat": {}}, "words: unknown detector 'repat'; did you mean 'repeat'?"),
        # A name like none of them: all of them, the detectors in the order they take precedence.
        (
            {"zzz": {}},
            "words: unknown detector 'zzz'; they are repeat, same_error, recurring_error, stale, "
            "cycle, same_output",
        ),
        # It was: "unknown detector 'gentle'", with no word of where a level goes.
        ({"gentle": "x"}, "words: 'gentle' is a level: levels go under a detector"),
        ({"repeat": {"soft": "x"}}, "words: repeat: unknown level 'soft'; levels are gentle"),
        (
            {"repeat": {"gentel": "x"}},
            "words: repeat: unknown level 'gentel'; did you mean 'gentle'?",
        ),
        ({"repeat": {"gentle": 3}}, "repeat.gentle: must be a format string or a function"),
        ({"repeat": "x"}, "words: repeat: must map levels to words, got 'x'"),
        ("x", "words: must map detector names (or *) to their words by level"),
    ],
)
def test_words_that_cannot_be_said_fail_at_construction(words: object, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ReminderConfig(words=words)
    assert problem in str(caught.value)


@pytest.mark.filterwarnings("ignore:words for")
def test_words_may_give_every_field_they_name_a_format_spec_its_values_take() -> None:
    # Words are said once when the guard is built, with a value in every field: a spec any
    # tool name, count, limit, preview or quoted text takes (aligned, here) is accepted.
    from repeat_reminder_langchain._detectors import DETECTORS

    for detector in ("*", *DETECTORS):
        for level in ("gentle", "detailed", "final"):
            aligned = " ".join(f"{{{name}:>1}}" for name in word_fields(detector, level))
            config = ReminderConfig(words={detector: {level: aligned}})
            assert config.words == {detector: {level: aligned}}


def test_the_fields_words_may_name_are_the_ones_a_reminder_has() -> None:
    reminder = Reminder("ls", 3, "gentle", "{}")
    said = " ".join(f"{{{name}}}" for name in word_fields("*", "gentle"))
    assert reminder.say({"*": {"gentle": said}}).startswith("ls 3 gentle repeat {} ")
    final = " ".join(f"{{{name}}}" for name in word_fields("*", "final"))
    stopped = Escalation("ls", 9, "repeat", "{}", "end", limit=9)
    assert stopped.say({"*": {"final": final}}).startswith("ls 9 repeat {} 9 the same call")
    assert stopped.say({"*": {"final": final}}).endswith("arguments  ")  # no request, no result


def test_a_configuration_with_words_is_a_value() -> None:
    again = ReminderConfig(words=WORDS)
    assert again == ReminderConfig(words=WORDS) and hash(again) == hash(ReminderConfig(words=WORDS))
    assert again.model_dump(mode="json")["words"]["*"]["detailed"] == "<function <lambda>>"


def test_words_are_written_to_a_settings_file_and_read_back(tmp_path: Path) -> None:
    said = {
        "repeat": {"gentle": 'Again: "{tool}" × {count}\n', "final": "bye"},
        "*": {"detailed": "D"},
    }
    config = ReminderConfig(words=said, ignore_arguments={"run": ["id"]})
    config.to_file(tmp_path / "words.toml")

    assert ReminderConfig.from_file(tmp_path / "words.toml") == config
    assert '[words."*"]\n"detailed" = "D"' in (tmp_path / "words.toml").read_text()
    with pytest.raises(ConfigError, match="words: a function cannot be written to a file"):
        ReminderConfig(words=WORDS).to_file(tmp_path / "words.toml")


# -- words that fail when said ----------------------------------------------------------------


def _raises(told: object) -> str:
    raise RuntimeError("the user's bug")


FAILING = {
    "a function that raises": {"repeat": {"gentle": _raises}},
    "a function that says nothing": {"repeat": {"gentle": lambda reminder: ""}},
    "a function that returns no text": {"*": {"gentle": lambda reminder: None}},
    "a format string empty for its values": {"*": {"gentle": "{error}"}},
    "final words that raise": {"*": {"final": _raises}},
}


@pytest.mark.parametrize("words", FAILING.values(), ids=FAILING.keys())
def test_words_that_fail_when_said_change_nothing_but_the_words(
    guarded: Make, words: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The one stop that ended every loop on live models must not hang on the user's words:
    # the run stops where it stops without them, and the guard says its own words instead.
    plain = guarded(LoopModel(), thresholds=[3], escalate_after=4).invoke(ask("loop 50"))
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        agent = guarded(LoopModel(), thresholds=[3], escalate_after=4, words=words)
        messages = agent.invoke(ask("loop 50"))
        again = agent.invoke(ask("loop 50"))  # said once per guard, not once per failure

    assert texts(messages) == texts(plain) == texts(again)
    assert [m.type for m in messages] == [m.type for m in plain]
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert agent.stats.snapshot()["escalations"] == {"probe": {"repeat": 2}}
    failed = [r for r in caplog.records if "words" in r.getMessage()]
    (entry,) = words
    (level,) = words[entry]
    assert [r.getMessage().split(" failed")[0] for r in failed] == [
        f"repeat reminder words {entry}.{level}"
    ]
    assert failed[0].levelno == logging.WARNING and failed[0].exc_info is None  # no traceback
    assert not any("middleware failed" in r.getMessage() for r in caplog.records)


def test_a_guard_says_each_failing_entry_once_and_its_own_words_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    words = UserWords(
        {"repeat": {"gentle": _raises}, "*": {"detailed": "{error}", "final": _raises}}
    )
    reminder = Reminder("ls", 3, "gentle", "{}")
    stopped = Escalation("ls", 9, "repeat", "{}", "end", limit=9)
    told = [reminder, Reminder("ls", 5, "detailed", "{}"), stopped] * 2
    with caplog.at_level(logging.WARNING, "repeat_reminder_langchain"):
        said = [words.say(each) for each in told]

    assert said == [each.text for each in told]
    assert [r.getMessage() for r in caplog.records] == [
        "repeat reminder words repeat.gentle failed (RuntimeError: the user's bug); the guard's "
        "own words are said in their place",
        "repeat reminder words *.detailed failed (ValueError: the words are empty); the guard's "
        "own words are said in their place",
        "repeat reminder words *.final failed (RuntimeError: the user's bug); the guard's own "
        "words are said in their place",
    ]
    # Asked directly, the words raise what they raise: a user trying their words sees why.
    with pytest.raises(TypeError, match="the words are a NoneType, not text"):
        reminder.say({"*": {"gentle": lambda r: None}})
    with pytest.raises(TypeError, match="the words are a bytes, not text"):
        reminder.say({"*": {"gentle": lambda r: b"stop"}})
    assert UserWords({"stale": {"gentle": "mine"}}).say(reminder) == reminder.text


def test_words_for_a_detector_not_detected_draw_one_warning_where_the_guard_is_built() -> None:
    with pytest.warns(RepeatToolReminderWarning) as warned:
        ReminderConfig(words={"stale": {"gentle": "x"}, "*": {"detailed": "y"}})
    (warning,) = warned
    assert str(warning.message) == (
        "words for stale, which is not detected: add it to detect, or leave the words out"
    )
    assert warning.filename == __file__
    with pytest.warns(RepeatToolReminderWarning) as warned:
        ReminderConfig(words={"stale": {"gentle": "x"}, "cycle": {"final": "y"}})
    assert [str(each.message) for each in warned] == [
        "words for stale, cycle, which are not detected: add them to detect, or leave the words out"
    ]


def test_a_warning_with_no_user_code_to_point_at_points_at_the_library_that_asked() -> None:
    # A guard built in a thread a library started (here `threading`, called straight on the
    # constructor): the warning names the first library frame that called the package, so
    # that a filter by module matches it, never the guard's own code.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        worker = threading.Thread(
            target=ReminderConfig, kwargs={"words": {"stale": {"gentle": "x"}}}
        )
        worker.start()
        worker.join()

    (warning,) = [w for w in caught if w.category is RepeatToolReminderWarning]
    package = Path(repeat_reminder_langchain.__file__).parent
    assert not Path(warning.filename).is_relative_to(package)
    assert warning.filename.startswith(_log._LIBRARIES)  # threading's (or mutmut's trampoline)


def test_a_level_at_the_top_of_a_settings_files_words_says_where_it_goes(tmp_path: Path) -> None:
    path = tmp_path / "guard.toml"
    path.write_text('[words]\ngentle = "Mind {tool}."\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[words.repeat\] in a settings file"):
        ReminderConfig.from_file(path)
