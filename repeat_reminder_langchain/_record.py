"""The guard's record of one agent: its fields, reading one back (checked), and writing it.

All the guard remembers of an agent is its `Record`: the run of identical calls, each
detector's memory under its name, and what the guard asked of the model. A face keeps it where
it keeps things (a state field, the handler's memory) and hands it back on the next turn; the
counter advances it (`counted`, `with_memories`, `lasting`, `followed_up`), the guard notes
what it asked (`asking_answer`, `noting_system`). Every field is written here, and nowhere
else; a record read back from a store is checked here (`read_record`). Nothing here knows
LangChain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast, get_origin, get_type_hints

from ._detectors import DETECTORS
from ._reminder import Escalation

__all__ = [
    "Record",
    "RecordError",
    "answer_requested",
    "asking_answer",
    "counted",
    "followed_up",
    "lasting",
    "noting_system",
    "read_record",
    "with_memories",
]


class Record(TypedDict, total=False):
    """All the guard remembers about one agent, as kept in a checkpoint. Every field optional.

    Attributes:
        turn: The model turn whose calls were counted last.
        tool: The last tracked call's tool ("" before any).
        key: The fingerprint of that call's canonical arguments.
        count: How many times in a row that call was made.
        result: The fingerprint of that call's result, where results are progress.
        reminded: Whether that call drew a reminder the model saw (so the next call, or the
            model answering, tells whether it changed course).
        detectors: What each detector that keeps a memory remembers of the agent, under its
            name, as it writes it (`repeat` keeps none: its count is the run above).
        system: Whether reminders were stored as system messages: a request to a model that
            takes no system message mid-conversation is then searched for them, and sends
            them as user turns. (A note of where each one is would grow with the thread, and
            go wrong when the conversation is rewritten; the search runs in C, a small share
            of what the model's client spends on the same messages.)
        finishing: The loop the model was asked to end with its answer, with no tool to
            call (`exit_behavior="finish"`), until the user speaks again: its escalation's tag
            (`Escalation.from_tag`), so that a call made all the same is refused, and the run
            ended, in the name of that loop.
    """

    turn: str
    tool: str
    key: str
    count: int
    result: str
    reminded: bool
    detectors: dict[str, dict[str, Any]]
    system: bool
    finishing: dict[str, Any]


def answer_requested(record: Record) -> Escalation | None:
    """The loop the model was asked to end with its answer (`finishing`); None: none was."""
    asked = record.get("finishing")
    return Escalation.from_tag(asked) if asked else None


class RecordError(ValueError):
    """A stored record that is not what the guard writes; the conversation is counted again."""


# Each field's type, as `Record` declares it: what a stored record is checked against.
_TYPES: dict[str, type] = {
    name: get_origin(kind) or kind for name, kind in get_type_hints(Record).items()
}


def read_record(data: object) -> Record:
    """The record a face stored, checked field by field (a field it does not know is left as is).

    Each detector checks its own memory. A record stored by an earlier version is read into
    the record of today: 0.2.0's names the call's arguments `digest` (today's `key`, the same
    value); development builds after it kept the detectors' memories in flat fields
    (`failing`, `seen`, ...).

    Raises:
        RecordError: `data` is not what the guard writes, naming the field.
    """
    if type(data) is not dict:
        if not isinstance(data, Mapping):
            raise RecordError(f"a stored record must be a mapping, got {type(data).__name__}")
        data = dict(data)
    if not _EARLIER.isdisjoint(data):
        data = _upgraded(data)
    for name, value in data.items():
        kind = _TYPES.get(name)
        if kind is not None and type(value) is not kind:
            raise RecordError(f"stored {name} must be a {kind.__name__}, got {value!r}")
    if data.get("count", 0) < 0:
        raise RecordError(f"stored counts must be whole numbers from zero, got {data!r}")
    asked = data.get("finishing")
    if asked is not None and Escalation.from_tag(asked) is None:
        raise RecordError(f"stored finishing must be an escalation's tag, got {asked!r}")
    for name, kept in data.get("detectors", {}).items():
        detector = DETECTORS.get(name)
        if detector is not None:  # one it does not know (a newer version's) is left as is
            try:
                detector.check(kept)
            except ValueError as problem:
                raise RecordError(f"stored {name} memory is not valid: {problem}") from None
    return data  # type: ignore[return-value]


# What outlives a user message besides the detectors' memories: the turn counted, and whether
# reminders were stored in the conversation as system messages (they stay in it).
_LASTING = ("turn", "system")

# The fields in which development builds before 0.4.0 kept the detectors' memories, each
# detector's own; and 0.2.0's name of the arguments' key.
_LEGACY = frozenset(field for detector in DETECTORS.values() for field in detector.legacy)
_KEY_0_2 = "digest"
_EARLIER = _LEGACY | {_KEY_0_2}


def _upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A record stored before 0.4.0, as the record of today: each detector reads its old fields."""
    data = dict(data)
    if _KEY_0_2 in data:
        data.setdefault("key", data.pop(_KEY_0_2))
    flat = {name: data.pop(name) for name in _LEGACY & data.keys()}
    detectors: dict[str, Any] = {}
    for detector in DETECTORS.values():
        try:
            kept = detector.upgrade(flat)
        except (TypeError, ValueError) as problem:
            raise RecordError(f"stored {detector.name} memory is not valid: {problem}") from None
        if kept is not None:
            detectors[detector.name] = kept
    if detectors:
        data["detectors"] = {**detectors, **data.get("detectors", {})}
    return data


def counted(  # noqa: PLR0917 - a record's fields, as a turn left them
    record: Record, turn: str, tool: str, key: str, count: int, result: str, reminded: bool
) -> Record:
    """The record after a turn's calls were counted.

    The run they reached, and whether the reminders they drew reach the model (so that its
    next call is a follow-up).
    """
    return {
        **record,
        "turn": turn,
        "tool": tool,
        "key": key,
        "count": count,
        "result": result,
        "reminded": reminded,
    }


def followed_up(record: Record) -> Record:
    """The record once the model answered, without a call, a reminder it saw."""
    return {**record, "reminded": False}


def with_memories(record: Record, memories: Mapping[str, dict[str, Any]]) -> None:
    """Keep each detector's memory in `record`, a record being written (none: the field goes)."""
    if memories:
        record["detectors"] = dict(memories)
    else:
        record.pop("detectors", None)


def lasting(record: Record, memories: Mapping[str, dict[str, Any]]) -> Record:
    """What of `record` outlives a user message.

    The turn counted, whether reminders were stored as system messages, and the detectors'
    `memories` that last.
    """
    kept = cast("Record", {name: value for name, value in record.items() if name in _LASTING})
    if memories:
        kept["detectors"] = dict(memories)
    return kept


def asking_answer(record: Record, escalation: Escalation) -> Record:
    """The record once the model was asked for its answer to end `escalation`'s loop."""
    return {**record, "finishing": dict(escalation.tag())}


def noting_system(record: Record) -> Record:
    """The record once a reminder was stored as a system message.

    A model that takes none mid-conversation has its requests searched for them from then on.
    """
    return record if record.get("system") else {**record, "system": True}
