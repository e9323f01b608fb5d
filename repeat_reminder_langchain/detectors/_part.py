"""What a detector is to the counter: one small protocol, and what it sees of a call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

if TYPE_CHECKING:
    from ..config import ReminderConfig


class Seen(NamedTuple):
    """One tracked call, as every detector sees it.

    Attributes:
        tool: The tool's name.
        key: The fingerprint of the call's canonical arguments.
        streak: How many identical calls in a row it makes (the counter's run).
        result: The call's result; None when unknown.
        error: Whether the result was marked as an error.
        text: The result's text ("" when unknown).
        outcome: The fingerprint of the result ("" when unknown or not needed).
    """

    tool: str
    key: str
    streak: int
    result: object = None
    error: bool = False
    text: str = ""
    outcome: str = ""


class Words(NamedTuple):
    """What a detector says: its reminder at each level, and what a loop it stopped was."""

    gentle: str
    detailed: str
    stopped: str


class Part(ABC):
    """A detector: the counter builds one per configuration and runs it on every tracked call.

    Its class attributes tell the counter what it needs; the memory it keeps of an agent
    between turns (its `fields` of the record) it reads and writes alone. A part overrides
    `see`, and the rest where it keeps a memory or says more than the count.
    """

    name: ClassVar[str]
    """The name `detect=` gives it."""
    words: ClassVar[Words]
    """What it says."""
    thresholds: ClassVar[str | None] = None
    """The `ReminderConfig` field of its thresholds; None: each tool's own rules."""
    fields: ClassVar[tuple[str, ...]] = ()
    """The record fields it keeps."""
    outlives_user: ClassVar[bool] = False
    """Whether its memory outlives a new user message."""
    needs_result: ClassVar[bool] = True
    """Whether a call whose result is unknown tells it nothing."""
    before_run: ClassVar[bool] = False
    """Whether it counts a call before the call runs (so that `block` can refuse it)."""

    def __init__(self, config: ReminderConfig) -> None:  # noqa: B027 - a default, not a hook
        """Compile what it needs of the configuration (most need nothing of it)."""

    def start(self, record: Mapping[str, Any]) -> Any:
        """Its memory of an agent, read from the record, for one turn."""
        return None

    @abstractmethod
    def see(self, memory: Any, seen: Seen) -> int | None:
        """Its count for the call; None when the call tells it nothing."""

    def keep(self, memory: Any, record: dict[str, Any]) -> None:  # noqa: B027 - a default
        """Write its memory back into the record (a part without memory writes nothing)."""

    def details(self, memory: Any, cut: Callable[[str], str]) -> Mapping[str, Any]:
        """What its reminder says besides the count (`Reminder` fields); `cut` previews text."""
        return {}
