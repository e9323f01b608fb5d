"""`repeat`: the same call with the same arguments, again and again (the original rule)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, StrictBool

from ._detector import Detector, Seen, Words


class _Settings(BaseModel):
    """`remind` alone: its thresholds are each tool's own rules (`thresholds`, a policy's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    remind: StrictBool = True


class Repeat(Detector):
    """Counts identical calls in a row: the counter's streak, which it keeps itself."""

    name = "repeat"
    settings = _Settings
    reads = "calls"
    by_run = True
    words = Words(
        gentle=(
            "You have called `{tool}` {count} times in a row with exactly the same arguments. "
            "Before calling it again, look closely at the result you already have: the same "
            "call will most likely return the same thing. If the task is not finished, try a "
            "different approach or different arguments; if you already have what you need, "
            "finish."
        ),
        detailed=(
            "Repeated tool call detected.\n"
            "- tool: {tool}\n"
            "- consecutive_calls: {count}\n"
            "- arguments: {arguments}\n"
            "These identical calls are not making progress. Do not call this tool with these "
            "exact arguments again. Read the latest result, then choose a different action or "
            "different arguments, or finish if you have gathered enough to answer."
        ),
        stopped="the same call with the same arguments",
    )

    def see(self, memory: None, seen: Seen) -> int:
        return seen.streak
