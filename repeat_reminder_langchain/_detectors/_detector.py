"""What a detector is to the counter: a class that declares what it takes, keeps and says.

A detector declares its settings as a pydantic model (`Settings`, or a subclass of it for
options of its own) and its memory of an agent as one dataclass (`memory`): the configuration
checks and coerces its settings by the model, and the record stores, checks and reads back its
memory by the dataclass's fields. It writes `see`, and `details` (with `says`) when its
reminder says more than the count.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, ClassVar, Literal, NamedTuple, get_type_hints

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from typing_extensions import TypedDict

from .._checks import check_thresholds

Reads = Literal["calls", "results", "failures"]


class Seen(NamedTuple):
    """One tracked call, as every detector sees it.

    Attributes:
        tool: The tool's name.
        key: The fingerprint of the call's canonical arguments.
        streak: How many identical calls in a row it makes (the counter's run).
        result: The call's result; None when unknown.
        failed: Whether the call failed: its result was marked as an error, or its text
            matches `error_pattern`.
        text: The result's text ("" when unknown), as it came: what a reminder quotes.
        outcome: The fingerprint of the result as compared ("" when unknown).
        arguments: The call's canonical arguments, whole.
        compared: The result's text as compared: normalised (`ReminderConfig.normalise_results`),
            so that a timestamp or a request id does not make it new.
    """

    tool: str
    key: str
    streak: int
    result: object = None
    failed: bool = False
    text: str = ""
    outcome: str = ""
    arguments: str = ""
    compared: str = ""


class Words(NamedTuple):
    """A detector's words: its reminder at each level, and what a loop it stopped was."""

    gentle: str
    detailed: str
    stopped: str


class Settings(BaseModel):
    """The settings every detector takes, by its name (`detectors={"stale": {...}}`).

    A detector with other defaults, or options of its own, declares a subclass: its fields are
    checked and coerced as pydantic checks any model (a list where a tuple is declared, `1`
    where a float is), and an unknown name is refused.

    Attributes:
        thresholds: The counts that draw its reminders: the first a gentle one, every later
            one a detailed one.
        remind: False: it counts, logs and sends its events, and neither reminds the model
            nor escalates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    thresholds: tuple[int, ...] = (3,)
    remind: StrictBool = True

    @field_validator("thresholds", mode="before")
    @classmethod
    def _check_thresholds(cls, value: Any) -> tuple[int, ...]:
        return check_thresholds(value)


class Detector(ABC):
    """A detector: the counter builds one per configuration and shows it every tracked call.

    What it remembers of an agent between turns is an instance of its `memory` dataclass,
    made from what the record kept (`start`) and written back to it (`keep`): the fields a
    dataclass takes when built are kept, those left at their default are left out of the
    record, and those it does not take (`field(init=False)`) last one turn. No other detector
    sees it.
    """

    name: ClassVar[str]
    """The name `detect=` gives it."""
    words: ClassVar[Words]
    """What it says."""
    settings: ClassVar[type[BaseModel]] = Settings
    """Its settings: `Settings`, or a model of its own (a subclass, unless, like `repeat`, it
    takes no thresholds)."""
    memory: ClassVar[type[Any] | None] = None
    """The dataclass of what it remembers of an agent between turns; None: nothing (then it
    sees only what the counter shows it of each call)."""
    says: ClassVar[Mapping[str, Any]] = {}
    """What its reminder says beside the count: each name `details` gives, with a sample value
    (words are tried with it when a guard is built)."""
    counts: ClassVar[str] = "calls"
    """What its count counts, as the command line's help says it."""
    reads: ClassVar[Reads] = "results"
    """What it reads of a call: the call alone (`"calls"`: it counts a call before the call
    runs, so that `block` can refuse it), its result (a call whose result is unknown tells it
    nothing), or failures only (on logs where none can be recognised it counts nothing, and
    the audit says so; a success can only make it forget, so it is not shown one while it
    remembers nothing of the agent)."""
    legacy: ClassVar[tuple[str, ...]] = ()
    """The fields that held its memory in a record of a development build before 0.4.0."""
    by_run: ClassVar[bool] = False
    """Its count is the run of identical calls (`Seen.streak`), under each tool's own
    thresholds: a call whose run is below the first of them and below `escalate_after` draws
    nothing from it, and is not shown to it (most calls, under the defaults)."""

    # Derived from `memory` when it is built (and `check`, below): a detector writes none.
    start: Callable[[Mapping[str, Any]], Any]
    """Its memory of an agent for one turn, from what the record kept (empty at first); the
    containers copied, so that the stored record is not changed by the turn."""
    keep: Callable[[Any], dict[str, Any] | None]
    """What the record keeps of its memory: the fields not at their default; None: none."""

    def __init__(self, settings: Any) -> None:
        """Keep its settings (an instance of its `settings` model, defaults filled in)."""
        self.options = settings
        self.start, self.keep = _compiled(self.memory)

    @abstractmethod
    def see(self, memory: Any, seen: Seen) -> int | None:
        """Its count for the call; None when the call tells it nothing."""

    def details(self, memory: Any, cut: Callable[[str], str]) -> Mapping[str, Any]:
        """What its reminder says besides the count (the names of `says`); `cut` previews text."""
        return {}

    @classmethod
    def after_user(cls, kept: dict[str, Any]) -> dict[str, Any] | None:
        """What it keeps of its memory once the user spoke: nothing, unless it says so."""
        return None

    @classmethod
    def upgrade(cls, flat: Mapping[str, Any]) -> dict[str, Any] | None:
        """Its memory from the `legacy` fields of a record stored before 0.4.0; None: none there.

        Raises:
            TypeError, ValueError: Those fields are not what such a build wrote.
        """
        return None

    @classmethod
    def check(cls, kept: object) -> None:
        """Whether a stored memory is one it writes: each field of the type it declares.

        Raises:
            ValueError: It is not, naming the field.
        """
        try:
            _stored(cls.memory).validate_python(kept, strict=True)  # type: ignore[arg-type]
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(map(str, problem["loc"]))
            message = str(problem["msg"]).removeprefix("Value error, ")
            raise ValueError(
                f"{where + ': ' if where else ''}{message}, got {problem['input']!r}"
            ) from None


def _compiled(memory: Any) -> tuple[Callable[[Mapping[str, Any]], Any], Callable[[Any], Any]]:
    """`start` and `keep` for a memory dataclass, written out field by field once.

    As `dataclasses` writes a class's `__init__`: a turn under every detector starts and keeps
    five memories, and a loop over the fields costs more than the work itself. Measured on
    0.5.0: the five started and kept in 2.6 µs written out, 5.3 µs by a loop over the fields
    (4.2 passing them by position); the hooks benchmark's every-detector `before_model`, the
    two alternated, least of 30 rounds: 21.3 µs a turn written out against 23.7 by the loop at
    20 messages, 22.6 against 24.2 at 2,000.
    """
    if memory is None:
        return (lambda kept: None), (lambda made: None)
    fields = _kept_fields(memory)
    defaults = {f"default_{i}": value for i, value in enumerate(fields.values())}
    made = ", ".join(
        f"{name}=get({name!r}, default_{i})"
        + (".copy()" if isinstance(value, (list, dict)) else "")
        for i, (name, value) in enumerate(fields.items())
    )
    kept = "".join(
        f"    if made.{name} != default_{i}: kept[{name!r}] = made.{name}\n"
        for i, name in enumerate(fields)
    )
    source = (
        f"def start(stored):\n    get = stored.get\n    return Memory({made})\n"
        f"def keep(made):\n    kept = {{}}\n{kept}    return kept or None\n"
    )
    namespace: dict[str, Any] = {"Memory": memory, **defaults}
    exec(source, namespace)  # the source names only the dataclass's own fields
    return namespace["start"], namespace["keep"]


def _kept_fields(memory: Any) -> dict[str, Any]:
    """The fields of a memory the record keeps, with their defaults."""
    return {
        field.name: field.default_factory()
        if field.default_factory is not dataclasses.MISSING
        else field.default
        for field in dataclasses.fields(memory)
        if field.init
    }


@cache
def _stored(memory: Any) -> TypeAdapter[Any]:
    """A memory's kept fields as stored, each of its declared type (checked strictly).

    A record holds what the guard wrote; a field it lacks is at its default.
    """
    hints = get_type_hints(memory, include_extras=True)
    fields = {name: hints[name] for name in _kept_fields(memory)}
    return TypeAdapter(TypedDict(memory.__name__, fields, total=False))  # type: ignore[operator]


def expect(kept: Mapping[str, Any], types: Mapping[str, type]) -> None:
    """Check fields of a record stored before 0.4.0 against their types (one it lacks is fine).

    Raises:
        TypeError: A field of another type, naming it.
    """
    for name, kind in types.items():
        if name in kept and type(kept[name]) is not kind:
            raise TypeError(f"{name} must be a {kind.__name__}, got {kept[name]!r}")
