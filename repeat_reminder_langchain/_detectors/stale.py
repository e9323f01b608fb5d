"""`stale`: the same call returning the same result again since the user spoke."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator, NonNegativeInt

from .._canonical import digest
from ._detector import Detector, Seen, Words, expect

STALE_MEMORY = 64
"""How many distinct calls an agent's `stale` detector remembers; the least recent goes first."""


def _entry(entry: list[Any]) -> list[Any]:
    """A remembered call, checked: `[result, times, changes]`."""
    if not (
        len(entry) == 3
        and type(entry[0]) is str
        and type(entry[1]) is int
        and type(entry[2]) is int
        and entry[1] > 0
    ):
        raise ValueError("a call must be [result, times, changes]")
    return entry


@dataclass(slots=True)
class _Calls:
    """The calls remembered, oldest first, and how many times one returned something new.

    Each call's fingerprint maps to `[result, times, since]`: the fingerprint of its latest
    result, how many times in a row it returned that, and the count of changes when it last
    did.
    """

    calls: dict[str, Annotated[list[Any], AfterValidator(_entry)]] = field(default_factory=dict)
    changes: NonNegativeInt = 0


class Stale(Detector):
    """Counts how many times in a row one call returned one result, whatever came between."""

    name = "stale"
    counts = "identical results of one call"
    memory = _Calls
    legacy = ("seen", "changes")
    words = Words(
        gentle=(
            "`{tool}` has now returned exactly the same result {count} times for the same "
            "arguments, with other steps in between. Calling it again will not tell you "
            "anything new: work with the result you have, and call it again only after "
            "something it depends on has changed."
        ),
        detailed=(
            "Tool call with no new information detected.\n"
            "- tool: {tool}\n"
            "- identical_results: {count}\n"
            "- arguments: {arguments}\n"
            "This call keeps returning the same result. Do not make it again until something "
            "it depends on has changed; use the result you already have, choose a different "
            "action, or finish."
        ),
        stopped="the same call returning the same result",
    )

    def see(self, memory: _Calls, seen: Seen) -> int | None:
        # An empty result is no evidence that nothing changed (a write says nothing).
        if not seen.text.strip():
            return None
        calls = memory.calls
        call, result = digest(f"{seen.tool}\x00{seen.key}")[:16], seen.outcome[:16]
        before = calls.pop(call, None)
        times = 1
        if before is not None:
            last, number, since = before
            if last != result:
                # The agent saw something change: anything it read before may read otherwise
                # now, so reading it again is a check, not a loop, and every count starts over.
                memory.changes += 1
            elif since == memory.changes:
                times = number + 1
        # A result other calls return too ("Updated 1 path from the index", a shell's empty
        # output) acknowledges a command: it is no evidence that nothing changed.
        if times > 1 and any(entry[0] == result for entry in calls.values()):
            times = 1
        calls[call] = [result, times, memory.changes]
        if len(calls) > STALE_MEMORY:
            del calls[next(iter(calls))]
        return times

    @classmethod
    def upgrade(cls, flat: Mapping[str, Any]) -> dict[str, Any] | None:
        # Builds before 0.4.0 wrote each call as "result:times:changes"; one that reads
        # otherwise was not written there, and is a call not seen.
        seen, changes = flat.get("seen"), flat.get("changes", 0)
        if seen is None and not changes:
            return None
        expect(flat, {"seen": dict, "changes": int})
        calls = {}
        for call, entry in seen.items() if seen else ():
            result, _, rest = entry.partition(":") if type(entry) is str else ("", "", "")
            times, _, since = rest.partition(":")
            if times.isdigit() and since.isdigit() and int(times) > 0:
                calls[call] = [result, int(times), int(since)]
        return {"calls": calls, "changes": changes} if changes else {"calls": calls}
