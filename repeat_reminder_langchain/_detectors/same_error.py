"""`same_error`: one tool failing again and again with the same error, whatever the arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import NonNegativeInt

from .._canonical import digest
from ._detector import Detector, Seen, Words

_VARIANTS = 16  # argument sets remembered for a failure streak, to say how many there were


@dataclass(slots=True)
class _Streak:
    """The failure streak: its tool, its error's fingerprint, how long, with what arguments.

    `spoke`: the user spoke since its last failure, so that only arguments it already failed
    with go on with it.
    """

    tool: str = ""
    error: str = ""
    failures: NonNegativeInt = 0
    variants: list[str] = field(default_factory=list)
    spoke: bool = False
    text: str = field(default="", init=False)  # the error text of the call seen last


class SameError(Detector):
    """Counts the failures in a row of one tool with the identical error.

    A result fails when it is marked as an error (`status="error"`) or its text matches
    `error_pattern`. The streak outlives a user message for the arguments it already failed
    with; new arguments after the user spoke (a card they named, a date they corrected) are
    news, and start it over.
    """

    name = "same_error"
    says: ClassVar[Mapping[str, Any]] = {
        "error": "the error",
        "variants": 2,
        "varied": ", with 2 different argument sets",
    }
    counts = "consecutive identical failures"
    memory = _Streak
    reads = "failures"
    legacy = ("failing", "error", "failures", "variants")
    words = Words(
        gentle=(
            "The last {count} calls to `{tool}` failed with the same error{varied}. Repeating "
            "the call will not fix it: read the error, deal with its cause or try another way, "
            "or report the problem if you cannot.\n"
            # Quoted at once: what to do is often in it (a missing tool's error names the tools
            # there are).
            "The error: {error}"
        ),
        detailed=(
            "Repeated tool failure detected.\n"
            "- tool: {tool}\n"
            "- consecutive_failures: {count}\n"
            "- argument_sets: {variants}\n"
            "- error: {error}\n"
            "Every one of these calls failed with this same error, so changing the arguments is "
            "not reaching the cause. Stop retrying this tool the same way: address what the "
            "error says, use another approach, or report the problem."
        ),
        stopped="calls failing with the same error",
    )

    def see(self, memory: _Streak, seen: Seen) -> int | None:
        if not seen.failed:
            memory.tool, memory.error, memory.failures, memory.variants = "", "", 0, []
            memory.spoke = False
            return None
        error, short = digest(seen.compared), seen.key[:8]
        news = memory.spoke and short not in memory.variants
        memory.spoke = False
        if seen.tool == memory.tool and error == memory.error and not news:
            memory.failures += 1
            if short not in memory.variants and len(memory.variants) < _VARIANTS:
                memory.variants = [*memory.variants, short]
        else:
            memory.tool, memory.error, memory.failures, memory.variants = (
                seen.tool,
                error,
                1,
                [short],
            )
        memory.text = seen.text
        return memory.failures

    @classmethod
    def after_user(cls, kept: dict[str, Any]) -> dict[str, Any]:
        # A call that fails the same way after every user message still loops.
        return {**kept, "spoke": True}

    def details(self, memory: _Streak, cut: Callable[[str], str]) -> Mapping[str, Any]:
        variants = len(memory.variants)
        varied = f", with {variants} different argument sets" if variants > 1 else ""
        return {"error": cut(memory.text), "variants": variants, "varied": varied}

    @classmethod
    def upgrade(cls, flat: Mapping[str, Any]) -> dict[str, Any] | None:
        # What it reads is checked as every stored memory is, by `memory`'s types.
        if not flat.get("failing"):
            return None
        return {
            "tool": flat["failing"],
            "error": flat.get("error", ""),
            "failures": flat.get("failures", 0),
            "variants": flat.get("variants", []),
        }
