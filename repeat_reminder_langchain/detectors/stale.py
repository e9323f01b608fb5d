"""`stale`: the same call returning the same result again since the user spoke."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import override

from ..canonical import digest
from ._part import Part, Seen, Words

STALE_MEMORY = 64
"""How many distinct calls an agent's `stale` detector remembers; the least recent goes first."""


class _Seen:
    """The calls remembered, and how many times a remembered call returned something new."""

    __slots__ = ("changes", "seen")

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.seen: dict[str, str] = dict(record.get("seen", {}))
        self.changes: int = record.get("changes", 0)


class Stale(Part):
    """Counts how many times in a row one call returned one result, whatever came between.

    Each remembered call maps to `result:times:changes`: the fingerprint of its latest
    result, how many times in a row it returned that, and the `changes` count when it last did.
    """

    name = "stale"
    thresholds = "stale_thresholds"
    fields = ("seen", "changes")
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

    @override
    def start(self, record: Mapping[str, Any]) -> _Seen:
        return _Seen(record)

    @override
    def see(self, memory: _Seen, seen: Seen) -> int | None:
        # An empty result is no evidence that nothing changed (a write says nothing).
        if not seen.text.strip():
            return None
        calls = memory.seen
        call, result = digest(f"{seen.tool}\x00{seen.key}")[:16], seen.outcome[:16]
        before = calls.pop(call, None)
        times, since = 1, str(memory.changes)
        if type(before) is str:  # an entry that reads otherwise was not written here: not seen
            last, _, rest = before.partition(":")
            number, _, then = rest.partition(":")
            if last != result:
                # The agent saw something change: anything it read before may read otherwise
                # now, so reading it again is a check, not a loop, and every count starts over.
                memory.changes += 1
                since = str(memory.changes)
            elif number.isdigit() and then == since:
                times = int(number) + 1
        if times > 1:
            # A result other calls return too ("Updated 1 path from the index", a shell's
            # empty output) acknowledges a command: it is no evidence that nothing changed.
            prefix = result + ":"
            if any(type(entry) is str and entry.startswith(prefix) for entry in calls.values()):
                times = 1
        calls[call] = f"{result}:{times}:{since}"
        if len(calls) > STALE_MEMORY:
            del calls[next(iter(calls))]
        return times

    @override
    def keep(self, memory: _Seen, record: dict[str, Any]) -> None:
        record["seen"] = memory.seen
        if memory.changes:
            record["changes"] = memory.changes
