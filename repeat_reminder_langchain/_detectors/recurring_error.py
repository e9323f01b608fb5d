"""`recurring_error`: one call failing the same way each time it is made, whatever lies between.

An agent retries a call that failed after doing something else — a search, a question to the
user — as if that had changed anything: the booking is refused with the same message a fourth
time. `same_error` ends at the other tool and `stale` at the user; this one remembers each
failing call until that call succeeds.

It also remembers each refusal by its cause (`by="cause"`, the default; `"call"`: the call
alone): one tool refused with the same error while the model changes what it sends — "total
price is 1002, but paid 957", then "…but paid 1047" — the numbers the error echoes from the
call's own arguments set aside, the rest (the total, the item it names) the same. It counts the
model coming back to the refusal after doing something else; a success of the tool forgets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator

from .._canonical import digest
from ._detector import Detector, Seen, Settings, Words

CALLS = 16
"""How many failing calls (or causes) an agent's `recurring_error` remembers; the least recent
goes first."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _entry(entry: list[Any]) -> list[Any]:
    """A remembered call or cause, checked: `[error, failures]`."""
    if not (len(entry) == 2 and type(entry[0]) is str and type(entry[1]) is int and entry[1] > 0):
        raise ValueError("a call must be [error, failures]")
    return entry


@dataclass(slots=True)
class _Failing:
    """The failing calls and causes remembered, oldest first, and the cause seen last.

    Each is `[error, failures]` by its fingerprint; `last` is the cause of the call seen last,
    when it failed (`by="cause"`).
    """

    calls: dict[str, Annotated[list[Any], AfterValidator(_entry)]] = field(default_factory=dict)
    last: str = ""
    text: str = field(default="", init=False)  # the error text of the call seen last


class _Settings(Settings):
    by: Literal["call", "cause"] = "cause"
    """What a failure is remembered by: the call, or also its cause."""


class RecurringError(Detector):
    """Counts the failures of one call (tool and arguments) with one error since it last succeeded.

    A result fails as `same_error` says: marked as an error, or matched by `error_pattern`.
    Other calls and user messages between the attempts change nothing; a success of the call,
    or another error, starts its count over. By cause, it counts the tool's failures with one
    error (numbers echoed from the arguments aside) it came back to; the larger count is said.
    """

    name = "recurring_error"
    settings = _Settings
    says: ClassVar[Mapping[str, Any]] = {"error": "the error"}
    counts = "failures of one call with one error"
    memory = _Failing
    reads = "failures"
    words = Words(
        gentle=(
            "`{tool}` has now failed {count} times with the same error, with other steps in "
            "between: {error}\n"
            "What happened between the attempts did not change the outcome, so it will fail "
            "again. Deal with the cause the error names, change the call, or tell the user "
            "what is blocking you."
        ),
        detailed=(
            "Recurring tool failure detected.\n"
            "- tool: {tool}\n"
            "- failures_since_last_success: {count}\n"
            "- arguments: {arguments}\n"
            "- error: {error}\n"
            "This call keeps failing the same way whatever is done between attempts. Do not "
            "make it again as it is: address what the error says, use another approach, or "
            "report the problem."
        ),
        stopped="the same call failing with the same error",
    )

    def __init__(self, settings: _Settings) -> None:
        super().__init__(settings)
        self.by_cause = settings.by == "cause"

    def see(self, memory: _Failing, seen: Seen) -> int | None:
        call = digest(f"{seen.tool}\x00{seen.key}")[:16]
        before = memory.calls.pop(call, None)
        cause = self._cause(memory, seen) if self.by_cause else 0
        if not seen.failed:
            return None  # it succeeded: what it failed with before is forgotten
        error = digest(seen.compared)[:16]
        failures = before[1] + 1 if before is not None and before[0] == error else 1
        memory.calls[call] = [error, failures]
        while len(memory.calls) > CALLS:
            del memory.calls[next(iter(memory.calls))]
        memory.text = seen.text
        return max(failures, cause)

    def _cause(self, memory: _Failing, seen: Seen) -> int:
        """The tool's failures with this error, the numbers the call itself sent set aside.

        A success of the tool forgets them.
        """
        tool = "~" + digest(seen.tool)[:7]  # not a hex digit: no call's key starts so
        if not seen.failed:
            for key in [k for k in memory.calls if k.startswith(tool)]:
                del memory.calls[key]
            memory.last = ""
            return 0
        sent = set(_numbers(_parsed(seen.arguments)))
        cause = digest(_NUMBER.sub(lambda m: "#" if float(m[0]) in sent else m[0], seen.compared))
        key = tool + cause[:8]
        before = memory.calls.pop(key, None)
        # Right after the same failure, another variation is `same_error`'s; counted here is
        # the model coming back to it after doing something else.
        failures = 1 if before is None else before[1] + (memory.last != key)
        memory.calls[key] = [cause[:16], failures]
        memory.last = key
        return failures

    @classmethod
    def after_user(cls, kept: dict[str, Any]) -> dict[str, Any]:
        return kept  # asking the user and trying the same call again still fails

    def details(self, memory: _Failing, cut: Callable[[str], str]) -> Mapping[str, Any]:
        return {"error": cut(memory.text)}


def _parsed(arguments: str) -> Any:
    """The canonical arguments as data; None when they are not JSON (nothing to set aside)."""
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: nothing read
        return None


def _numbers(value: Any) -> Iterator[float]:
    """Every number in the arguments, as a float: numbers, and strings that are one.

    Walked with a list, not by recursion: arguments may nest as deep as the parser allows.
    """
    waiting = [value]
    while waiting:
        item = waiting.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, (int, float)):
            yield float(item)
        elif isinstance(item, str):
            if _NUMBER.fullmatch(item):
                yield float(item)
        elif isinstance(item, dict):
            waiting.extend(item.values())
        elif isinstance(item, list):
            waiting.extend(item)
