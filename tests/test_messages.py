"""Writing the guard's messages, and rendering stored reminders for each provider (offline)."""

from __future__ import annotations

from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from repeat_reminder_langchain import Escalation, Reminder, is_reminder, prepare_messages
from repeat_reminder_langchain.messages import (
    as_user_turn,
    blocked_result,
    escalation_message,
    reminder_message,
)
from repeat_reminder_langchain.reminder import wrap

SAME = {"q": "same"}


def test_two_adjacent_stored_reminders_are_both_rendered_with_their_ids() -> None:
    # Two tools reaching a threshold in one turn store two reminders side by side.
    first = reminder_message(Reminder("probe", 3, "gentle", "{}"))
    second = reminder_message(Reminder("other", 3, "gentle", "{}"))
    turn = AIMessage("", tool_calls=[{"name": "probe", "args": SAME, "id": "toolu_01"}])
    conversation = [
        SystemMessage("You are a careful agent."),
        HumanMessage("go"),
        turn,
        ToolMessage("probed same", tool_call_id="toolu_01"),
        first,
        second,
    ]
    prepared = prepare_messages(conversation, None)

    assert [m.type for m in prepared[-2:]] == ["human", "human"]
    assert [m.id for m in prepared[-2:]] == [first.id, second.id]
    assert prepared[-1].content == wrap(second.text)
    assert all(is_reminder(m) for m in prepared[-2:])
    assert conversation[-1] is second  # the stored conversation is left as it is


def test_a_user_turn_rendering_keeps_name_id_and_tags() -> None:
    stored = reminder_message(Reminder("probe", 3, "gentle", "{}"))
    rendered = as_user_turn(stored)
    assert (rendered.name, rendered.id, rendered.additional_kwargs) == (
        stored.name,
        stored.id,
        stored.additional_kwargs,
    )
    assert reminder_message(Reminder("probe", 3, "gentle", "{}"), "human").id


def test_the_guards_final_message_and_refusals_are_tagged() -> None:
    escalation = Escalation("probe", 9, "repeat", "{}", "end")
    final = escalation_message(escalation)
    assert isinstance(final, AIMessage) and not final.tool_calls
    assert final.additional_kwargs["repeat_tool_reminder"]["level"] == "escalated"
    refused = blocked_result(escalation, "call_9")
    assert (refused.tool_call_id, refused.status, refused.name) == ("call_9", "error", "probe")
    assert not is_reminder(final) and not is_reminder(refused)
