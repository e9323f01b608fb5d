"""Reading a finished conversation: transcript rows and summaries."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from repeat_reminder_langchain import ReminderConfig, RepeatToolReminderCallbackHandler
from repeat_reminder_langchain.replay import replay
from repeat_reminder_langchain.tooling.demo import run_demo
from repeat_reminder_langchain.tooling.transcript import (
    _transcript_rows,
    format_transcript,
    summarize,
)


def test_rows_cover_every_kind_of_message() -> None:
    call = {"name": "ls", "args": {"dir": "."}, "id": "1"}
    odd = {"name": "raw", "args": {"args": [1]}, "id": "2"}
    messages = [
        SystemMessage("be brief"),
        HumanMessage([{"type": "text", "text": "list"}, "files"]),
        AIMessage("sure", tool_calls=[call, odd]),
        ToolMessage("a b", tool_call_id="1"),
        ToolMessage({"k": 1}, tool_call_id="2", name="raw"),  # type: ignore[arg-type]
        AIMessage(""),
    ]
    rows = _transcript_rows(messages)

    assert [(r.role, r.text) for r in rows] == [
        ("system", "be brief"),
        ("user", "list files"),
        ("assistant", 'sure → ls(dir=".") → raw(args=[1])'),
        ("tool", "tool → a b"),
        ("tool", "raw → {'k': 1}"),
        ("assistant", ""),
    ]
    assert format_transcript(messages, width=20).splitlines()[2] == "  3  assistant  sur…"


def test_the_transcript_shows_every_line_of_a_reminder() -> None:
    messages = run_demo(RepeatToolReminderCallbackHandler())
    lines = format_transcript(messages).splitlines()

    start = lines.index(" 13  REMINDER   [detailed · job_status × 5]")
    assert lines[start + 1 : start + 4] == [
        "                Repeated tool call detected.",
        "                - tool: job_status",
        "                - consecutive_calls: 5",
    ]


def test_summary_counts_streaks_as_the_guard_does() -> None:
    def turn(n: int, name: str = "grep", args: object = None) -> list[object]:
        call = {"name": name, "args": args or {"q": 1}, "id": f"c{n}"}
        return [
            AIMessage("", tool_calls=[call], id=f"m{n}"),
            ToolMessage("r", tool_call_id=f"c{n}"),
        ]

    messages = [HumanMessage("go"), *turn(1), *turn(2), *turn(3, "todo"), *turn(4)]
    messages += [HumanMessage("again"), *turn(5), *turn(6, args={"q": 2})]
    config = ReminderConfig(exclude=["todo"])

    replayed = [
        (r.call.tool, r.message, r.trace and r.trace.streak)
        for r in replay(messages, config)  # type: ignore[arg-type]
    ]
    assert replayed == [
        ("grep", 1, 1), ("grep", 3, 2), ("todo", 5, None), ("grep", 7, 3), ("grep", 10, 1),
        ("grep", 12, 1),
    ]  # fmt: skip
    summary = summarize(messages, config)  # type: ignore[arg-type]
    assert (summary.calls, summary.reminders, summary.longest) == (6, 0, ("grep", 3))
    assert summarize([HumanMessage("hi")]).longest is None


def test_a_summary_reads_as_one_line_and_a_stray_reminder_marks_nothing() -> None:
    from repeat_reminder_langchain import Reminder
    from repeat_reminder_langchain._messages import reminder_message
    from repeat_reminder_langchain.tooling.transcript import steps

    messages = run_demo(RepeatToolReminderCallbackHandler())
    assert str(summarize(messages)) == (
        "6 tool calls · 2 reminders (1 gentle, 1 detailed) · longest streak: job_status × 5"
    )
    stray = [*messages, reminder_message(Reminder("never_called", 3, "gentle", "{}"))]
    assert [s.reminder for s in steps(stray)] == [s.reminder for s in steps(messages)]


def test_the_transcript_says_how_each_reminder_reached_the_model_it_was_sent_to() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from repeat_reminder_langchain import Reminder
    from repeat_reminder_langchain._messages import reminder_message

    reminder = Reminder("ls", 3, "gentle", "{}")
    messages = [HumanMessage("go"), reminder_message(reminder), reminder_message(reminder, "human")]
    takes = GenericFakeChatModel(messages=iter(()))
    takes.profile = {"mid_conversation_system_messages": True}
    plain = GenericFakeChatModel(messages=iter(()))

    def how(model: object) -> list[str]:
        lines = format_transcript(messages, sent_to=model).splitlines()
        return [line.split(" · ")[-1] for line in lines if "REMINDER" in line]

    # Stored as a system message: one for the model that takes it, a user turn for the other;
    # stored as a user turn: a user turn for both.
    assert how(takes) == ["sent as a system message]", "sent as a user turn]"]
    assert how(plain) == ["sent as a user turn]", "sent as a user turn]"]
    assert "sent as" not in format_transcript(messages)  # no model named: nothing said


def test_a_summary_counts_the_request_for_the_answer_among_the_reminders() -> None:
    guard = RepeatToolReminderCallbackHandler(escalate_after=10, exit_behavior="finish")
    summary = summarize(run_demo(guard, heeds=False))

    assert (summary.reminders, summary.gentle, summary.detailed, summary.escalated) == (4, 1, 2, 1)
    assert str(summary) == (
        "10 tool calls · 4 reminders (1 gentle, 2 detailed, 1 escalated) · "
        "longest streak: job_status × 10"
    )
