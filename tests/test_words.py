"""Reminder words the user sets: per detector and level, format strings or functions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from repeat_reminder_langchain import ConfigError, Escalation, Reminder, ReminderConfig, from_guard
from repeat_reminder_langchain.reminder import WORD_FIELDS

from .conftest import Guarded
from .helpers import LoopModel, ask, reminders

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


def test_words_left_unset_are_the_detectors_own() -> None:
    words = ReminderConfig(words={"stale": {"gentle": "{tool}"}}).words
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
        ({"repat": {}}, "words: unknown detector 'repat'; did you mean 'repeat'?"),
        ({"repeat": {"soft": "x"}}, "words: repeat: unknown level 'soft'; levels are gentle"),
        ({"repeat": {"gentle": 3}}, "repeat.gentle: must be a format string or a function"),
        ({"repeat": "x"}, "words: repeat: must map levels to words, got 'x'"),
        ("x", "words: must map detector names (or *) to their words by level"),
    ],
)
def test_words_that_cannot_be_said_fail_at_construction(words: object, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ReminderConfig(words=words)
    assert problem in str(caught.value)


def test_the_fields_words_may_name_are_the_ones_a_reminder_has() -> None:
    reminder = Reminder("ls", 3, "gentle", "{}")
    said = " ".join(f"{{{name}}}" for name in WORD_FIELDS["gentle"])
    assert reminder.say({"*": {"gentle": said}}).startswith("ls 3 gentle repeat {} ")
    final = " ".join(f"{{{name}}}" for name in WORD_FIELDS["final"])
    stopped = Escalation("ls", 9, "repeat", "{}", "end", limit=9)
    assert stopped.say({"*": {"final": final}}).startswith("ls 9 repeat {} 9 the same call")


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
