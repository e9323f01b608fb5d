"""`recurring_error`: one call failing the same way each time it is made, whatever lies between.

An agent retries a call that failed after doing something else — a search, a question to the
user — as if that had changed anything: the booking is refused with the same message a fourth
time. `same_error` ends at the other tool and `stale` at the user; this one remembers each
failing call until that call succeeds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from typing_extensions import override

from .._canonical import digest
from ._part import Part, Seen, Words, expect

CALLS = 16
"""How many failing calls an agent's `recurring_error` remembers; the least recent goes first."""


class _Failing:
    """The failing calls remembered, oldest first: each `[error, failures]` by its fingerprint."""

    __slots__ = ("calls", "text")

    def __init__(self, kept: Mapping[str, Any]) -> None:
        self.calls: dict[str, list[Any]] = dict(kept.get("calls", {}))
        self.text = ""  # the error text of the call seen last


class RecurringError(Part):
    """Counts the failures of one call (tool and arguments) with one error since it last succeeded.

    A result fails as `same_error` says: marked as an error, or matched by `error_pattern`.
    Other calls and user messages between the attempts change nothing; a success of the call,
    or another error, starts its count over.
    """

    name = "recurring_error"
    says: ClassVar[Mapping[str, Any]] = {"error": "the error"}
    counts = "failures of one call with one error"
    remembers = True
    words = Words(
        gentle=(
            "`{tool}` has now failed {count} times with these same arguments and the same "
            "error, with other steps in between: {error}\n"
            "What happened between the attempts did not change the outcome, so the same call "
            "will fail again. Deal with the cause the error names, change the call, or tell "
            "the user what is blocking you."
        ),
        detailed=(
            "Recurring tool failure detected.\n"
            "- tool: {tool}\n"
            "- failures_since_last_success: {count}\n"
            "- arguments: {arguments}\n"
            "- error: {error}\n"
            "This exact call keeps failing the same way whatever is done between attempts. Do "
            "not make it again unchanged: address what the error says, use another approach, "
            "or report the problem."
        ),
        stopped="the same call failing with the same error",
    )

    @override
    def start(self, kept: Mapping[str, Any]) -> _Failing:
        return _Failing(kept)

    @override
    def see(self, memory: _Failing, seen: Seen) -> int | None:
        call = digest(f"{seen.tool}\x00{seen.key}")[:16]
        before = memory.calls.pop(call, None)
        if not seen.failed:
            return None  # it succeeded: what it failed with before is forgotten
        error = digest(seen.text)[:16]
        failures = before[1] + 1 if before is not None and before[0] == error else 1
        memory.calls[call] = [error, failures]
        if len(memory.calls) > CALLS:
            del memory.calls[next(iter(memory.calls))]
        memory.text = seen.text
        return failures

    @override
    def keep(self, memory: _Failing) -> dict[str, Any] | None:
        return {"calls": memory.calls} if memory.calls else None

    @override
    @classmethod
    def after_user(cls, kept: dict[str, Any]) -> dict[str, Any]:
        return kept  # asking the user and trying the same call again still fails

    @override
    def details(self, memory: _Failing, cut: Callable[[str], str]) -> Mapping[str, Any]:
        return {"error": cut(memory.text)}

    @override
    @classmethod
    def check(cls, kept: object) -> None:
        super().check(kept)
        expect(kept, {"calls": dict})  # type: ignore[arg-type]
        for entry in kept.get("calls", {}).values():  # type: ignore[attr-defined]
            if not (
                type(entry) is list
                and len(entry) == 2
                and type(entry[0]) is str
                and type(entry[1]) is int
                and entry[1] > 0
            ):
                raise ValueError(f"a call must be [error, failures], got {entry!r}")
