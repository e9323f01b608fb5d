"""`same_error`: one tool failing again and again with the same error, whatever the arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from typing_extensions import override

from .._canonical import digest
from ._part import Part, Seen, Words, expect

_VARIANTS = 16  # argument sets remembered for a failure streak, to say how many there were


class _Streak:
    """The failure streak: its tool, its error's fingerprint, how long, with what arguments.

    `spoke`: the user spoke since its last failure, so that only arguments it already failed
    with go on with it.
    """

    __slots__ = ("error", "failing", "failures", "spoke", "text", "variants")

    def __init__(self, kept: Mapping[str, Any]) -> None:
        self.failing: str = kept.get("tool", "")
        self.error: str = kept.get("error", "")
        self.failures: int = kept.get("failures", 0)
        self.variants: list[str] = kept.get("variants", [])
        self.spoke: bool = kept.get("spoke", False)
        self.text = ""  # the error text of the call seen last


class SameError(Part):
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
    remembers = True
    failures_only = True
    legacy = ("failing", "error", "failures", "variants")
    words = Words(
        gentle=(
            "The last {count} calls to `{tool}` failed with the same error{varied}. Repeating "
            "the call will not fix it: read the error, deal with its cause or try another way, "
            "or report the problem if you cannot."
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

    @override
    def start(self, kept: Mapping[str, Any]) -> _Streak:
        return _Streak(kept)

    @override
    def see(self, memory: _Streak, seen: Seen) -> int | None:
        if not seen.failed:
            memory.failing, memory.error, memory.failures, memory.variants = "", "", 0, []
            memory.spoke = False
            return None
        error, short = digest(seen.text), seen.key[:8]
        news = memory.spoke and short not in memory.variants
        memory.spoke = False
        if seen.tool == memory.failing and error == memory.error and not news:
            memory.failures += 1
            if short not in memory.variants and len(memory.variants) < _VARIANTS:
                memory.variants = [*memory.variants, short]
        else:
            memory.failing, memory.error, memory.failures, memory.variants = (
                seen.tool,
                error,
                1,
                [short],
            )
        memory.text = seen.text
        return memory.failures

    @override
    def keep(self, memory: _Streak) -> dict[str, Any] | None:
        if not memory.failing:
            return None  # no streak: nothing of it is kept
        kept = {
            "tool": memory.failing,
            "error": memory.error,
            "failures": memory.failures,
            "variants": memory.variants,
        }
        if memory.spoke:
            kept["spoke"] = True
        return kept

    @override
    @classmethod
    def after_user(cls, kept: dict[str, Any]) -> dict[str, Any]:
        # A call that fails the same way after every user message still loops.
        return {**kept, "spoke": True}

    @override
    def details(self, memory: _Streak, cut: Callable[[str], str]) -> Mapping[str, Any]:
        variants = len(memory.variants)
        varied = f", with {variants} different argument sets" if variants > 1 else ""
        return {"error": cut(memory.text), "variants": variants, "varied": varied}

    @override
    @classmethod
    def check(cls, kept: object) -> None:
        super().check(kept)
        _check(kept, "tool")  # type: ignore[arg-type]

    @override
    @classmethod
    def upgrade(cls, flat: Mapping[str, Any]) -> dict[str, Any] | None:
        if not flat.get("failing"):
            return None
        _check(flat, "failing")
        return {
            "tool": flat["failing"],
            "error": flat.get("error", ""),
            "failures": flat.get("failures", 0),
            "variants": flat.get("variants", []),
        }


def _check(kept: Mapping[str, Any], tool: str) -> None:
    """Check a failure streak as stored, its tool under `tool`."""
    expect(kept, {tool: str, "error": str, "failures": int, "variants": list, "spoke": bool})
    if kept.get("failures", 0) < 0:
        raise ValueError(f"failures must be a whole number from zero, got {kept['failures']!r}")
    variants = kept.get("variants", [])
    if not all(type(item) is str for item in variants):
        raise ValueError(f"variants must be a list of strings, got {variants!r}")
