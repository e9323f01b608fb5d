"""What a detector is to the counter: one small protocol, and what it sees of a call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple, Protocol


class Settings(Protocol):
    """What a detector may read of the configuration: a `ReminderConfig` is one.

    (Named here, not imported: the configuration imports the detectors, to check `detect`.)
    """

    @property
    def error_pattern(self) -> str | None:
        """A pattern that marks a result as a failure."""


class Seen(NamedTuple):
    """One tracked call, as every detector sees it.

    Attributes:
        tool: The tool's name.
        key: The fingerprint of the call's canonical arguments.
        streak: How many identical calls in a row it makes (the counter's run).
        result: The call's result; None when unknown.
        failed: Whether the call failed: its result was marked as an error, or its text
            matches `error_pattern`.
        text: The result's text ("" when unknown).
        outcome: The fingerprint of the result ("" when unknown).
        arguments: The call's canonical arguments, whole.
    """

    tool: str
    key: str
    streak: int
    result: object = None
    failed: bool = False
    text: str = ""
    outcome: str = ""
    arguments: str = ""


class Words(NamedTuple):
    """What a detector says: its reminder at each level, and what a loop it stopped was."""

    gentle: str
    detailed: str
    stopped: str


class Part(ABC):
    """A detector: the counter builds one per configuration and runs it on every tracked call.

    Its settings (`settings`: its thresholds, and any option of its own) reach it by its name
    (`ReminderConfig(detectors={name: {...}})`); what its reminder says beside the count is
    one mapping (`details`), whose names its words use (`says`). What it remembers of an agent
    between turns is its own: it reads it (`start`) and writes it (`keep`) as a mapping of
    plain values, which the record keeps under its name; no other part sees it. A part
    overrides `see`, and the rest where it keeps a memory or says more than the count.
    """

    name: ClassVar[str]
    """The name `detect=` gives it."""
    words: ClassVar[Words]
    """What it says."""
    settings: ClassVar[Mapping[str, Any]] = {"thresholds": (3,)}
    """Its settings and their defaults: `thresholds`, the counts that draw its reminders (none:
    each tool's own rules), `remind` when it does not remind by default (every detector takes
    it: `True` unless declared), and any option of its own, checked by `check_setting`."""
    says: ClassVar[Mapping[str, Any]] = {}
    """What its reminder says beside the count: each name `details` gives, with a sample value
    (words are tried with it when a guard is built)."""
    counts: ClassVar[str] = "calls"
    """What its count counts, as the command line's help says it."""
    remembers: ClassVar[bool] = False
    """Whether it keeps a memory of the agent between turns (then it sees every call)."""
    needs_result: ClassVar[bool] = True
    """Whether a call whose result is unknown tells it nothing."""
    failures_only: ClassVar[bool] = False
    """Whether it counts failures only: on logs where none can be recognised it counts nothing
    (the audit says so)."""
    before_run: ClassVar[bool] = False
    """Whether it counts a call before the call runs (so that `block` can refuse it)."""
    legacy: ClassVar[tuple[str, ...]] = ()
    """The fields of a record stored by 0.3 that held its memory (read by `upgrade`)."""

    def __init__(self, config: Settings, settings: Mapping[str, Any]) -> None:  # noqa: B027
        """Compile what it needs of the configuration and of its own settings (most need none)."""

    @classmethod
    def check_setting(cls, name: str, value: Any) -> Any:
        """One of its own options as given, checked (`thresholds` is checked before this).

        Raises:
            ValueError: It is not what the option takes, saying why.
        """
        default = cls.settings[name]
        if type(value) is not type(default):
            raise ValueError(f"must be a {type(default).__name__}, got {value!r}")
        return value

    def start(self, kept: Mapping[str, Any]) -> Any:
        """Its memory of an agent for one turn, from what it kept (empty the first time)."""
        return None

    @abstractmethod
    def see(self, memory: Any, seen: Seen) -> int | None:
        """Its count for the call; None when the call tells it nothing."""

    def keep(self, memory: Any) -> dict[str, Any] | None:
        """What to keep of its memory until the next turn; None or empty: nothing."""
        return None

    @classmethod
    def after_user(cls, kept: dict[str, Any]) -> dict[str, Any] | None:
        """What it keeps of its memory once the user spoke: nothing, unless it says so."""
        return None

    def details(self, memory: Any, cut: Callable[[str], str]) -> Mapping[str, Any]:
        """What its reminder says besides the count (the names of `says`); `cut` previews text."""
        return {}

    @classmethod
    def check(cls, kept: object) -> None:
        """Whether a stored memory is one it wrote.

        Raises:
            TypeError, ValueError: It is not, saying why.
        """
        if type(kept) is not dict:
            raise TypeError(f"a mapping was expected, got {type(kept).__name__}")

    @classmethod
    def upgrade(cls, flat: Mapping[str, Any]) -> dict[str, Any] | None:
        """Its memory from the `legacy` fields of a record stored by 0.3; None: none there.

        Raises:
            TypeError, ValueError: Those fields are not what 0.3 wrote.
        """
        return None


def expect(kept: Mapping[str, Any], types: Mapping[str, type]) -> None:
    """Check a memory's fields against their types (a field it lacks is fine).

    Raises:
        TypeError: A field of another type, naming it.
    """
    for name, kind in types.items():
        if name in kept and type(kept[name]) is not kind:
            raise TypeError(f"{name} must be a {kind.__name__}, got {kept[name]!r}")
