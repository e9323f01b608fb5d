"""Escalation: what stopping a loop says — the error raised, and the question put to a human."""

from __future__ import annotations

from typing import Literal, TypedDict

from ._reminder import Escalation

__all__ = ["InterruptRequest", "RepeatToolLoopError", "interrupt_request", "read_answer"]

CHOICES = ("continue", "end")


class RepeatToolLoopError(RuntimeError):
    """Raised with `exit_behavior="error"` when a loop reaches `escalate_after`.

    The checkpoint then holds a complete conversation (every call has its result), so the
    thread can be inspected, or continued with a new user message, which resets the counts.

    Its message names the arguments by their digest only (a message ends up in logs and error
    records, and arguments may hold secrets); `arguments` holds them.

    Attributes:
        tool: The tool called.
        arguments: The call's canonical arguments, cut to the preview cap.
        digest: A fingerprint of the full canonical arguments (what the message names).
        count: The count the calls reached (a turn's whole batch of identical calls).
        detector: Which detector reached the limit.
        escalate_after: The limit it reached.
        thread_id: The conversation, if the run had one.
    """

    def __init__(self, escalation: Escalation, thread_id: str | None = None) -> None:
        self.tool = escalation.tool
        self.arguments = escalation.arguments
        self.digest = escalation.digest
        self.count = escalation.count
        self.detector = escalation.detector
        self.escalate_after = escalation.limit
        self.thread_id = thread_id
        super().__init__(
            f"repeat tool loop stopped: {escalation.summary} ({escalation.detector}, "
            f"escalate_after={escalation.limit}), arguments {escalation.digest}"
            + ("" if thread_id is None else f", thread {thread_id}")  # none: not said at all
        )


class InterruptRequest(TypedDict):
    """The payload of the `interrupt()` raised with `exit_behavior="interrupt"`."""

    kind: Literal["repeat_tool_escalation"]
    question: str
    tool: str
    count: int
    detector: str
    arguments: str
    choices: list[str]


def interrupt_request(escalation: Escalation) -> InterruptRequest:
    """What a human is asked when the guard stops a loop for them to decide."""
    return {
        "kind": "repeat_tool_escalation",
        "question": (
            f"The agent has been looping on `{escalation.tool}` ({escalation.detector}, "
            f'{escalation.count} times). Resume with "continue" to let it go on (its counts '
            'start over), "end" to end the run, or any other text to tell it something.'
        ),
        "tool": escalation.tool,
        "count": escalation.count,
        "detector": escalation.detector,
        "arguments": escalation.arguments,
        "choices": [*CHOICES, "<any other text: sent to the agent as a user message>"],
    }


def read_answer(answer: object) -> tuple[Literal["continue", "end", "message"], str]:
    """What a human's resume value asks for: go on, end, or a message for the agent.

    `"continue"` and `"end"` (any case, surrounding spaces ignored) are the choices; any other
    non-empty text is a message; anything else (None, an empty string, a number) is read as
    "continue", so a resume never fails the run.
    """
    if isinstance(answer, str) and answer.strip():
        choice = answer.strip().lower()
        if choice in CHOICES:
            return choice, ""  # type: ignore[return-value]
        return "message", answer
    return "continue", ""
