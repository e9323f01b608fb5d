"""Reminder texts and tags: what the model reads, and what marks it."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from repeat_reminder_langchain import Escalation, Reminder
from repeat_reminder_langchain._conversation import is_reminder
from repeat_reminder_langchain._messages import reminder_message, wrap
from repeat_reminder_langchain._reminder import preview


def test_the_gentle_text_asks_to_read_the_result_and_change_course() -> None:
    text = Reminder("grep", 3, "gentle", '{"q":"x"}').text
    assert "`grep` 3 times in a row with exactly the same arguments" in text
    assert "different approach or different arguments" in text
    assert "finish" in text


def test_the_detailed_text_names_tool_count_and_arguments_then_says_stop() -> None:
    lines = Reminder("grep", 5, "detailed", '{"q":"x"}').text.splitlines()
    assert lines[:4] == [
        "Repeated tool call detected.",
        "- tool: grep",
        "- consecutive_calls: 5",
        '- arguments: {"q":"x"}',
    ]
    assert "Do not call this tool with these exact arguments again" in lines[4]


def test_the_tag_says_what_fired() -> None:
    assert Reminder("grep", 5, "detailed", "{}").tag() == {
        "kind": "plugin",
        "plugin": "repeat-tool-reminder",
        "form": "notice",
        "summary": "grep × 5",
        "tool": "grep",
        "count": 5,
        "level": "detailed",
        "detector": "repeat",
    }
    assert Escalation("grep", 9, "stale", "{}", "end").tag()["level"] == "escalated"


def test_each_detector_has_its_own_words_citing_the_evidence() -> None:
    stale = Reminder("cat", 4, "detailed", '{"path":"a"}', detector="stale").text
    assert "- identical_results: 4" in stale and '- arguments: {"path":"a"}' in stale
    details = {"error": "no", "variants": 3}
    failing = Reminder("book", 5, "detailed", "{}", detector="same_error", details=details)
    assert "- consecutive_failures: 5" in failing.text
    assert "- argument_sets: 3" in failing.text and "- error: no" in failing.text
    assert "looping on `grep`" in Escalation("grep", 9, "repeat", "{}", "end").text


def test_preview_cuts_and_counts_what_it_left_out() -> None:
    assert preview("abc", 3) == "abc"
    assert preview("abcd", 3) == "abc… (+1 more chars)"


def test_reminder_messages_are_tagged_system_or_wrapped_human_messages() -> None:
    reminder = Reminder("grep", 3, "gentle", "{}")
    system = reminder_message(reminder)
    human = reminder_message(reminder, "human")
    assert isinstance(system, SystemMessage) and system.content == reminder.text
    assert isinstance(human, HumanMessage) and human.content == wrap(reminder.text)
    assert human.content.startswith("<system-reminder>\n")
    assert human.content.endswith("\n</system-reminder>")
    for message in (system, human):
        assert message.name == "repeat_tool_reminder"
        assert message.additional_kwargs == {
            "lc_source": "repeat_tool_reminder",
            "repeat_tool_reminder": reminder.tag(),
        }
        assert message.id is not None and message.id.startswith("repeat_tool_reminder-")
        assert is_reminder(message)
    assert system.id != reminder_message(reminder).id


def test_an_escalation_is_read_back_from_its_tag_and_nothing_else_is() -> None:
    stop = Escalation("grep", 9, "stale", '{"q":"x"}', "finish", "d1g", position=2, limit=8)
    assert Escalation.from_tag(stop.tag()) == stop
    assert Escalation.from_tag(Reminder("grep", 3, "gentle", "{}").tag()) is None
    # A tag written before tags held the whole escalation, or altered in the checkpoint.
    before = {k: v for k, v in stop.tag().items() if k not in ("behavior", "limit")}
    assert Escalation.from_tag(before) is None
    assert Escalation.from_tag({**stop.tag(), "count": "9"}) is None
    assert Escalation.from_tag({**stop.tag(), "behavior": "explode"}) is None
