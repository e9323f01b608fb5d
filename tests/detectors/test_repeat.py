"""`repeat`, the original rule, and the registry that names every detector in precedence order."""

from __future__ import annotations

import string

import pytest

from repeat_reminder_langchain import ConfigError, Escalation, Reminder, ReminderConfig
from repeat_reminder_langchain._detectors import DETECTORS, Seen
from repeat_reminder_langchain._detectors.repeat import Repeat
from repeat_reminder_langchain._reminder import word_fields

from ..helpers import SHIPPED, c, play


def test_the_part_counts_the_counters_streak_and_keeps_no_memory() -> None:
    detector = Repeat(Repeat.settings())
    memory = detector.start({"count": 4})
    assert memory is None
    assert (
        detector.see(memory, Seen("probe", "k", 4)) == 4
    )  # no result needed: known before it runs
    assert detector.keep(memory) is None
    assert detector.details(memory, str) == {}


def test_repeat_reminds_by_the_tools_rules_repeat_every_included() -> None:
    config = ReminderConfig(thresholds=[2], repeat_every=2)
    assert play([[c()] for _ in range(4)], config)[1] == [
        ("repeat", "gentle", "probe", 2),
        ("repeat", "detailed", "probe", 4),
    ]


def test_the_registry_names_every_detector_once_in_precedence_order() -> None:
    # The shipped ones in their order, whatever detector the guide inserts among them.
    assert [name for name in DETECTORS if name in SHIPPED] == list(SHIPPED)
    # What each one's words name beside the count is what it says (`says`), and no more.
    for name in DETECTORS:
        words = DETECTORS[name].words
        for level, text in (("gentle", words.gentle), ("detailed", words.detailed)):
            named = {field for _, field, _, _ in string.Formatter().parse(text) if field}
            assert named <= set(word_fields(name, level)), (name, level)
    assert all(DETECTORS[name].name == name for name in DETECTORS)
    # `detect=` takes them in any order and keeps the registry's.
    assert ReminderConfig(detect=["stale", "repeat"]).detect == ("repeat", "stale")
    with pytest.raises(ConfigError, match=r"detect: unknown detector 'stael'.*stale"):
        ReminderConfig(detect=["stael"])


@pytest.mark.parametrize("name", DETECTORS)
def test_each_detectors_words_are_its_own(name: str) -> None:
    words = DETECTORS[name].words
    says = DETECTORS[name].says
    gentle = Reminder("probe", 3, "gentle", "{}", detector=name, details=says)
    detailed = Reminder("probe", 5, "detailed", "{}", detector=name, details=says)
    fields = {"tool": "probe", "arguments": "{}", **says}
    assert gentle.text == words.gentle.format(count=3, **fields)
    assert detailed.text == words.detailed.format(count=5, **fields)
    stopped = Escalation("probe", 9, name, "{}", "end")
    assert words.stopped in stopped.text
