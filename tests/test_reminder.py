"""Reminder texts, tags and messages; reading a conversation for turns and user messages."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from repeat_reminder_langchain import Reminder, is_reminder
from repeat_reminder_langchain.messages import latest_turn, reminder_message, user_spoke
from repeat_reminder_langchain.reminder import preview, wrap


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
        "lc_source": "repeat_tool_reminder",
        "repeat_tool_reminder": {
            "kind": "plugin",
            "plugin": "repeat-tool-reminder",
            "form": "notice",
            "summary": "grep × 5",
            "tool": "grep",
            "count": 5,
            "level": "detailed",
        },
    }


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
        assert message.additional_kwargs == reminder.tag()
        assert is_reminder(message)
    assert system.id != reminder_message(reminder).id


def test_is_reminder_is_true_only_for_the_guards_messages() -> None:
    tag = Reminder("grep", 3, "gentle", "{}").tag()
    assert not is_reminder(HumanMessage("hi"))
    assert not is_reminder(SystemMessage("sys", name="repeat_tool_reminder"))
    assert not is_reminder(
        HumanMessage("x", additional_kwargs={"lc_source": "repeat_tool_reminder"})
    )
    assert not is_reminder(AIMessage("x", additional_kwargs=tag))
    assert not is_reminder("a string")
    assert not is_reminder(None)


def test_latest_turn_reads_only_the_last_model_turn() -> None:
    old = AIMessage("", tool_calls=[{"name": "a", "args": {}, "id": "1"}], id="m1")
    new = AIMessage(
        "",
        id="m2",
        tool_calls=[
            {"name": "b", "args": {"x": 1}, "id": "2"},
            {"name": "c", "args": {}, "id": "3"},
        ],
        invalid_tool_calls=[
            {
                "name": "d",
                "args": '{"x": ',
                "id": "4",
                "error": "bad json",
                "type": "invalid_tool_call",
            },
            {"name": None, "args": "?", "id": "5", "error": "no name", "type": "invalid_tool_call"},
        ],
    )
    messages = [HumanMessage("go"), old, ToolMessage("r", tool_call_id="1"), new]
    messages += [ToolMessage("r", tool_call_id="3"), ToolMessage("r", tool_call_id="4")]

    turn = latest_turn(messages)
    assert turn is not None
    assert turn.id == "m2"
    assert [(c.id, c.tool, c.args) for c in turn.calls] == [("3", "c", {}), ("4", "d", '{"x": ')]
    assert not turn.complete

    turn = latest_turn([*messages, ToolMessage("r", tool_call_id="2")])
    assert turn is not None and turn.complete
    assert [c.id for c in turn.calls] == ["2", "3", "4"]


def test_latest_turn_without_a_model_turn_with_calls() -> None:
    assert latest_turn([]) is None
    assert latest_turn([HumanMessage("go")]) is None
    assert latest_turn([HumanMessage("go"), AIMessage("just text")]) is None


def test_calls_without_ids_count_with_their_turn() -> None:
    message = AIMessage("", tool_calls=[{"name": "a", "args": {}, "id": None}])
    turn = latest_turn([message])
    assert turn is not None and turn.complete
    assert [(c.id, c.tool) for c in turn.calls] == [("#0", "a")]
    assert turn.id


def test_user_spoke_after_the_model_only_for_real_user_messages() -> None:
    reminder = reminder_message(Reminder("grep", 3, "gentle", "{}"), "human")
    summary = HumanMessage("summary", additional_kwargs={"lc_source": "summarization"})
    assert user_spoke([HumanMessage("hi")])
    assert user_spoke([AIMessage("a"), ToolMessage("r", tool_call_id="1"), HumanMessage("steer")])
    assert not user_spoke([HumanMessage("hi"), AIMessage("a")])
    assert not user_spoke([AIMessage("a"), reminder])
    assert not user_spoke([summary])
    assert not user_spoke([SystemMessage("sys")])
