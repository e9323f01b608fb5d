"""The guard's configuration: its fields, their fail-loud validation, and the rules per tool."""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from os import PathLike, fspath
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from ._checks import (
    check_paths,
    check_patterns,
    check_repeat_every,
    check_thresholds,
    check_words,
    compile_patterns,
    did_you_mean,
    is_int,
    validation_problems,
)
from ._detectors import DETECTORS
from ._exits import ExitBehavior
from ._files import Beside
from ._log import warn
from ._normalise import Normalise, normaliser, with_patterns
from ._policy import Rules, ToolPolicy, compile_paths
from ._reminder import sample_words, word_fields
from ._settings_file import read_settings, settings_text

__all__ = [
    "ConfigError",
    "ReminderConfig",
    "ReminderFields",
    "file_text",
    "resolve_config",
    "short_forms",
]

_UNKNOWN = object()
# What a function given as `normalise_results` is tried on when the configuration is built.
_SAMPLE_RESULT = "job 7: pending (request_id=a1b2c3d4e5, checked 2026-12-05T02:35:14Z)"


def short_forms() -> dict[str, str]:
    """The short forms of the detectors' thresholds, each with its detector, in their order.

    `stale_thresholds=[4]` is `detectors={"stale": {"thresholds": [4]}}` said short: every
    detector in the registry that takes thresholds has one (`repeat`'s are `thresholds`).
    """
    return {
        f"{name}_thresholds": name
        for name, detector in DETECTORS.items()
        if "thresholds" in detector.settings.model_fields
    }


BOOKKEEPING_TOOLS: tuple[str, ...] = (
    "think",
    "write_todos",
    "read_todos",
    "todo_write",
    "todo_read",
    "TodoWrite",
    "TodoRead",
    "update_plan",
    "update_todos",
)
"""Tools agents call between attempts to plan or take notes, not to act: transparent by default
(`exclude`), so that a loop of real calls with a bookkeeping call between each is still seen."""

TOOL_ERRORS = r"\AError(?:: | invoking tool )"
"""What `ToolNode` writes for a tool that failed, does not exist or was called with bad
arguments (`Error: ...`, `Error invoking tool ...`): the default `error_pattern`, so that a
failure is seen where the `status="error"` mark was lost (a conversation saved in a provider's
format, a tool that returns its error as text)."""

STOP_AT = 10
"""The default `escalate_after`. On the 350 conversations of the development corpora no count of
a default detector passes 3 (the longest run of identical calls in a conversation with no
labelled loop is 2); 10 leaves the three reminders (3, 5, 8) and two more calls before the stop."""

PROFILES: Mapping[str, Mapping[str, Any]] = {
    "default": {},
    # 0.4.0's defaults: the original plugin's rule alone (identical consecutive calls), advice
    # only, every tool counted, a failure only where it is marked.
    "seed": {
        "exclude": (),
        "progress": "none",
        "detect": ("repeat",),
        "error_pattern": None,
        "escalate_after": None,
        "exit_behavior": "end",
    },
}
"""The fields each `profile` sets when they are not given; `default` keeps the fields' own."""


class ConfigError(ValueError):
    """A configuration that breaks a rule: one line per problem, each naming its field."""


class ReminderFields(TypedDict, total=False):
    """The fields of `ReminderConfig`, as keywords of the handler, node and middleware."""

    thresholds: Sequence[int]
    include: Sequence[str]
    exclude: Sequence[str]
    arguments_preview_chars: int
    message_type: Literal["system", "human"]
    repeat_every: int | None
    ignore_arguments: Mapping[str, Sequence[str]]
    progress: Literal["none", "result", "auto"]
    mode: Literal["remind", "observe"]
    detect: Sequence[str]
    detectors: Mapping[str, Mapping[str, Any]]
    # The short forms of the shipped detectors' thresholds (`short_forms`), typed for the
    # keywords: a test holds them to the registry. A detector added to it is not typed here (a
    # type checker knows no name a registry adds): its short form works at run time, and
    # `detectors={name: {"thresholds": [...]}}` types it.
    stale_thresholds: Sequence[int]
    same_error_thresholds: Sequence[int]
    recurring_error_thresholds: Sequence[int]
    cycle_thresholds: Sequence[int]
    same_output_thresholds: Sequence[int]
    error_pattern: str | None
    not_user: str | Callable[[Any], bool] | None
    escalate_after: int | None
    exit_behavior: ExitBehavior
    words: Mapping[str, Mapping[str, str | Callable[[Any], str]]]
    log_arguments: bool
    normalise_results: bool | Callable[[str], str]
    profile: Literal["default", "seed"]


class _FrozenMapping(Mapping[str, Any]):
    """A read-only, hashable mapping, so that a configuration is a value."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return repr(self._items)


class ReminderConfig(BaseModel):
    """How the guard counts repeated tool calls and what it reminds the model of.

    Every field is checked when the object is built: a bad value raises `ConfigError` (a
    `ValueError`) with one line per problem naming the field and the rule, an unknown field a
    `TypeError`; never a silent fallback. A configuration is immutable and hashable. Its
    fields are below, each where it is declared.

    A tool can declare its own policy in its metadata (the configuration guide, "Tools that
    bring their own policy"); a field set here explicitly wins over it, a field left at its
    default yields to it.

    Examples:
        >>> config = ReminderConfig(thresholds=[5, 2], exclude=["todo_*"])
        >>> config.thresholds
        (2, 5)
        >>> config.tracks("read_file"), config.tracks("todo_write")
        (True, False)

    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Each field is declared once, here: its type, its default, its one line of help (the
    # description) and, below it, what the reference says of it. The command line makes its
    # options from the types, least values (`ge`: the validators refuse less with their own
    # messages first) and the lines of help, a field named in backticks shown as its option;
    # ReminderFields and the tables of the README and the configuration guide are held to
    # these by tests. Typed as sequences so that lists type-check at the call site; stored as
    # tuples.
    thresholds: Sequence[int] = Field(
        (3, 5, 8), description="run lengths of identical calls that draw a reminder"
    )
    """Run lengths of identical calls at which a reminder is added. The first gets the gentle
    reminder, every later one the detailed reminder. Integers >= 2, no duplicates; given in any
    order, kept sorted."""
    include: Sequence[str] = Field((), description="tools to track (* matches anything)")
    """Tool-name patterns to track (`*` matches any run of characters, every other character is
    literal, whole-name and case-sensitive). Empty means every tool."""
    exclude: Sequence[str] = Field(
        BOOKKEEPING_TOOLS, description="tools the guard looks through, e.g. think"
    )
    """Tool-name patterns that are transparent to the guard: they neither count nor break a run.
    Exclude wins over include. Default: `BOOKKEEPING_TOOLS`, the tools agents take notes with
    (given, the list replaces it: add to it)."""
    arguments_preview_chars: int = Field(
        500, ge=1, description="how much of the arguments a detailed reminder quotes"
    )
    """How many characters of the canonical arguments (and of an error) a detailed reminder
    quotes before cutting them short."""
    message_type: Literal["system", "human"] = Field(
        "system",
        description="send reminders as system messages (default) or as tagged user messages",
    )
    """`"system"` for a `SystemMessage` reminder, `"human"` for a `HumanMessage` wrapped in
    `<system-reminder>` tags."""
    repeat_every: int | None = Field(
        None, ge=1, description="after the last threshold, remind again every N repeats"
    )
    """After the last threshold, a detailed reminder every this many further repeats. None (the
    default) stays silent after the last threshold."""
    ignore_arguments: Mapping[str, Sequence[str]] = Field(
        _FrozenMapping({}),
        description="arguments left out of the comparison, e.g. run_shell=description,timeout*",
    )
    """Tool-name patterns mapped to argument patterns left out of a call's key, so that varying
    them does not hide a repeat: `{"run_shell": ["description", "timeout*"]}`. An argument
    pattern is a key pattern, or a dotted path of them (`"options.retries"`; lists on the way
    are looked through)."""
    progress: Literal["none", "result", "auto"] = Field(
        "result", description="result: the same call with a new result starts a new run"
    )
    """`"result"` (the default): the same call with a result different from the previous one is
    progress and starts a new run, so a poll that moves is never stopped. `"none"`: every
    identical call counts. `"auto"`: `"result"` for tools that declare `readOnlyHint: true` (and
    not `idempotentHint: true`), `"none"` for the others."""
    mode: Literal["remind", "observe"] = Field(
        "remind", description="observe: count and report, add nothing to the conversation"
    )
    """`"remind"` (the default) adds reminders; `"observe"` counts and reports them (events,
    logs, stats) without adding anything to the conversation."""
    detect: Sequence[str] = Field(  # the registry's names: a detector may be added
        ("repeat", "same_error", "recurring_error"), description="the detectors to run"
    )
    """The detectors to run, by name: any of the registry's (`DETECTORS`), kept in its order,
    the order they take precedence in (default: `repeat`, `same_error`, `recurring_error`, the
    ones right at least 90% of the time on both development corpora). Those the package ships:
    `"repeat"` (the same call, consecutively), `"same_error"` (consecutive calls to one tool
    failing with the same error, whatever the arguments), `"recurring_error"` (one call failing
    with the same error each time it is made, whatever lies between, until it succeeds),
    `"stale"` (the same call returning the same result again since the user spoke, with no call
    returning something new between), `"cycle"` (a sequence of two to four calls repeated, every
    call returning what it returned the round before) and `"same_output"` (calls of one tool
    with new arguments returning one output of 50 characters or more)."""
    detectors: Mapping[str, Mapping[str, Any]] = Field(
        _FrozenMapping({}), description="each detector's settings, by its name"
    )
    """Each detector's settings, by its name: its `thresholds` (the counts that draw its
    reminders; the first draws a gentle one, every later one a detailed one), `remind` (False:
    it counts, logs and sends its events, and neither reminds the model nor escalates;
    `same_output`'s default) and any option of its own, e.g. `{"stale": {"thresholds": [4]}}`. A
    detector left out keeps its defaults (`thresholds` `[3]`). (`repeat`'s thresholds are
    `thresholds` and each tool's own rules.) Each other detector's thresholds have a short form,
    accepted wherever fields are: `stale_thresholds=[4]` is
    `detectors={"stale": {"thresholds": [4]}}`; give one or the other."""
    error_pattern: str | None = Field(
        TOOL_ERRORS,
        description="a result whose text this matches is a failure (besides status=error)",
    )
    """A regular expression; a tool result whose text it matches (searched) is a failure, as is
    every result with `status="error"`. Default: `TOOL_ERRORS`, the text `ToolNode` writes for a
    failure. None: status only."""
    not_user: str | Callable[[Any], bool] | None = Field(
        None,
        description="user-role messages whose text this matches are not the user (a "
        "harness's feedback): they reset nothing",
    )
    """The user-role messages that are not the user speaking (a harness's feedback, a
    format-error notice): a regular expression searched in the message's text, or a function
    that decides, of the text, or of the message itself when its parameter is annotated as a
    message (`def f(message: HumanMessage) -> bool`). They reset nothing. A message a harness
    marked as its own (langchain-core's `add_notification_metadata`: a string
    `additional_kwargs["lc_source"]`) is never the user. None: every other user-role message is
    the user."""
    escalate_after: int | None = Field(
        STOP_AT, ge=2, description="stop the loop at this count, as `exit_behavior` says"
    )
    """A count greater than every threshold of the detectors asked for, at which the guard stops
    the loop instead of reminding, in the way `exit_behavior` sets; None: advise only. Default:
    10, or two past the last threshold in use when that is higher (a detector the defaults turn
    on gives way to a limit given). `"end"`, `"finish"`, `"error"` and `"interrupt"` let that
    many identical calls run (a turn's whole batch runs, and is the count said); `"block"` lets
    one fewer run, since the call that would reach the limit is the one refused (a refused call
    counts)."""
    exit_behavior: ExitBehavior = Field("finish", description="how the guard stops a loop")
    """How the guard stops a loop: `"finish"` (the default): ask the model for its answer with
    what it has, in one more call with no tool to call (the middleware tells it `tool_choice`
    none, or withholds the tools; a model that calls a tool all the same is ended as `"end"`
    ends a run); `"end"` the run with a final message; raise `RepeatToolLoopError` (`"error"`);
    `interrupt()` for a human (`"interrupt"`); or, with the middleware only, `"block"` the
    repeated call: it gets an error result and the model decides; a model that reads the refusal
    and sends the same call again in a later turn is ended as `"end"` ends a run."""
    words: Mapping[str, Mapping[str, str | Callable[[Any], str]]] = Field(
        _FrozenMapping({}), description="reminder words of your own, by detector and level"
    )
    """Reminder words of your own, by detector (or `"*"` for every one) and level (`"gentle"`,
    `"detailed"`, or `"final"` for the last message of a run the guard ended): a format string
    naming only the reminder's fields (`tool`, `count`, `level`, `detector`, `arguments` and
    what its detector adds: `error`, `variants`, `varied`, `evidence`; the final words: `tool`,
    `count`, `detector`, `arguments`, `limit`, `what`) or a function of the `Reminder` (or
    `Escalation`) that returns the text. A level left out keeps the guard's words. Words that
    fail when said (a function that raises) give way to the guard's own for that message, with
    one warning logged."""
    log_arguments: bool = Field(
        False, description="whether the log lines quote the call's arguments beside their digest"
    )
    """Whether the log lines quote the call's arguments (cut to `arguments_preview_chars`)
    beside their digest, for debugging. Off by default: a log line, and the message of
    `RepeatToolLoopError`, carry the tool, the count, the detector, the limit and the digest,
    never the arguments, which may hold secrets. The events, `RepeatToolLoopError.arguments` and
    the reminders quote them always."""
    normalise_results: bool | Callable[[str], str] = Field(
        True,
        description="compare results with UUIDs, timestamps and request ids set aside (False: "
        "as they are; or a function of the text)",
    )
    """What a tool result's text is compared as, wherever results are compared (`stale`,
    `same_error`, `recurring_error`, `cycle`, `same_output`, `progress="result"`): True (the
    default), with UUIDs, ISO 8601 timestamps and request ids set aside (`normalise_result`), so
    that a status read again a minute later is the same result; False, as it is; or a function
    of the text that returns the text to compare, in place of the guard's. A tool's own patterns
    (`normalise_results` in its policy) are set aside after it. What a reminder quotes is the
    result as it came."""
    profile: Literal["default", "seed"] = Field(
        "default",
        description="seed: the original plugin's rule alone, advice only (0.4.0's defaults)",
    )
    """The defaults of the fields not given. `"default"`: the guard as described here. `"seed"`:
    0.4.0's defaults, the original plugin's rule alone, advice only (`detect=("repeat",)`,
    nothing excluded, no `error_pattern`, `progress="none"`, no `escalate_after`,
    `exit_behavior="end"`). A field given stands over its profile."""

    _include: re.Pattern[str] | None = PrivateAttr(default=None)
    _exclude: re.Pattern[str] | None = PrivateAttr(default=None)
    _ignore: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = PrivateAttr(default=())
    _normalise: Normalise | None = PrivateAttr(default=None)

    def __init__(self, **fields: Any) -> None:
        check_field_names(fields)
        fields, short, problems = _long_forms(fields)
        # The profile's values for the fields not given, validated as given but not explicit:
        # a tool's own policy still wins over them, and a file written keeps only the profile.
        named = fields.get("profile", "default")  # checked below: a list is no profile's name
        profile = PROFILES.get(named, {}) if isinstance(named, str) else {}
        filled = {name: value for name, value in profile.items() if name not in fields}
        try:
            # As `BaseModel.__init__`, told which short forms and fields were given: a message
            # names them.
            self.__pydantic_validator__.validate_python(
                {**filled, **fields},
                self_instance=self,
                context={"short": short, "given": frozenset(fields)},
            )
        except ValidationError as error:
            problems = [validation_problems(error), *problems]
        if problems:
            raise ConfigError("\n".join(problems)) from None
        object.__setattr__(self, "__pydantic_fields_set__", set(fields))
        for what, given in (("words", self.words), ("settings", self.detectors)):
            unused = [name for name in given if name != "*" and name not in self.detect]
            if unused:
                warn(
                    f"{what} for {', '.join(unused)}, which {'is' if len(unused) == 1 else 'are'}"
                    f" not detected: add {'it' if len(unused) == 1 else 'them'} to detect, or "
                    f"leave the {what} out"
                )

    @field_validator("thresholds", mode="before")
    @classmethod
    def _check_thresholds(cls, value: Any) -> tuple[int, ...]:
        return check_thresholds(value)

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _check_patterns(cls, value: Any) -> tuple[str, ...]:
        return check_patterns(value, "tool-name")

    @field_validator("repeat_every", mode="before")
    @classmethod
    def _check_repeat_every(cls, value: Any) -> int | None:
        return check_repeat_every(value)

    @field_validator("ignore_arguments", mode="before")
    @classmethod
    def _check_ignore(cls, value: Any) -> Mapping[str, tuple[str, ...]]:
        if not isinstance(value, Mapping):
            raise ValueError(
                "must map tool-name patterns to lists of argument patterns, e.g. "
                f'{{"run_shell": ["description"]}}; got {value!r}'
            )
        for tool in value:
            if not isinstance(tool, str) or not tool:
                raise ValueError(
                    f"every tool-name pattern must be a non-empty string, got {tool!r}"
                )
        return {tool: check_paths(paths) for tool, paths in value.items()}

    @field_validator("ignore_arguments", mode="after")
    @classmethod
    def _freeze_ignore(cls, value: Mapping[str, Sequence[str]]) -> Mapping[str, Sequence[str]]:
        return _FrozenMapping({tool: tuple(paths) for tool, paths in value.items()})

    @field_serializer("ignore_arguments")
    def _dump_ignore(self, value: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        return {tool: list(paths) for tool, paths in value.items()}

    @field_validator("arguments_preview_chars", mode="before")
    @classmethod
    def _check_preview(cls, value: Any) -> int:
        if not is_int(value) or value < 1:
            raise ValueError(f"must be an integer >= 1, got {value!r}")
        return int(value)

    @field_validator("detect", mode="before")
    @classmethod
    def _check_detect(cls, value: Any) -> tuple[str, ...]:
        # Read from the registry as it is now: a detector registered after import counts.
        known = tuple(DETECTORS)
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
            raise ValueError(
                f"must be a non-empty list of detector names ({', '.join(known)}), got {value!r}"
            )
        for name in value:
            if name not in known:
                raise ValueError(
                    f"unknown detector {name!r}{did_you_mean(name, known, 'detectors')}"
                )
        if len(set(value)) != len(value):
            raise ValueError(f"must not name a detector twice, got {list(value)}")
        return tuple(name for name in known if name in value)

    @field_validator("error_pattern", mode="before")
    @classmethod
    def _check_error_pattern(cls, value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise ValueError(f"must be a non-empty regular expression or None, got {value!r}")
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"invalid regular expression {value!r}: {error}") from None
        return value

    @field_validator("not_user", mode="before")
    @classmethod
    def _check_not_user(cls, value: Any) -> str | Callable[[Any], bool] | None:
        if value is None or callable(value):
            return None if value is None else _taking_one(value)
        if not isinstance(value, str) or not value:
            raise ValueError(
                "must be a regular expression, a function of a message or its text, or None, "
                f"got {value!r}"
            )
        return cls._check_error_pattern(value)

    @field_serializer("not_user")
    def _dump_not_user(self, value: str | Callable[[Any], bool] | None) -> str | None:
        return None if value is None else _named(value)

    @field_validator("words", mode="before")
    @classmethod
    def _check_words(cls, value: Any) -> Mapping[str, Mapping[str, Any]]:
        return check_words(value, tuple(DETECTORS), word_fields, sample_words)

    @field_validator("words", "detectors", mode="after")
    @classmethod
    def _freeze_by_detector(cls, value: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
        return _FrozenMapping({name: _FrozenMapping(given) for name, given in value.items()})

    @field_serializer("words", "detectors")
    def _dump_by_detector(
        self, value: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        return {
            name: {key: _plain(item) for key, item in given.items()}
            for name, given in value.items()
        }

    @field_validator("detectors", mode="before")
    @classmethod
    def _check_detectors(cls, value: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(value, Mapping):
            raise ValueError(f"must map detector names to their settings, got {value!r}")
        known = tuple(DETECTORS)  # the registry as it is now: a detector registered after import
        checked: dict[str, dict[str, Any]] = {}
        for name, given in value.items():
            if name not in known:
                raise ValueError(f"unknown detector {name!r}{did_you_mean(name, known, 'they')}")
            if not isinstance(given, Mapping):
                raise ValueError(f"{name}: must map settings to values, got {given!r}")
            model = DETECTORS[name].settings
            for setting in given:
                if setting not in model.model_fields:
                    hint = (
                        did_you_mean(setting, tuple(model.model_fields), "they")
                        if "thresholds" in model.model_fields
                        else "; it takes none: its thresholds are thresholds, and each tool's own"
                    )
                    raise ValueError(f"{name}: unknown setting {setting!r}{hint}")
            try:
                settings = model(**given)
            except ValidationError as error:
                problem = error.errors()[0]
                message = str(problem["msg"]).removeprefix("Value error, ")
                if problem["type"] != "value_error":  # pydantic's own words: say what was given
                    message += f", got {problem['input']!r}"
                # A setting's problem names it; a problem of the settings together (a
                # model-level validator of the detector's) names none.
                where = ".".join(map(str, (name, *problem["loc"][:1])))
                raise ValueError(f"{where}: {message}") from None
            # What was given, as the model read it (thresholds sorted, a list as a tuple).
            checked[name] = {setting: getattr(settings, setting) for setting in given}
        return checked

    @field_validator("log_arguments", mode="before")
    @classmethod
    def _check_log_arguments(cls, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be True or False, got {value!r}")
        return value

    @field_validator("normalise_results", mode="before")
    @classmethod
    def _check_normalise(cls, value: Any) -> bool | Callable[[str], str]:
        if isinstance(value, bool):
            return value
        if not callable(value):
            raise ValueError(f"must be True, False or a function of a result's text, got {value!r}")
        # Tried once here, so that a function that cannot work fails where it is given.
        try:
            said = value(_SAMPLE_RESULT)
        except Exception as error:
            raise ValueError(f"the function failed on a sample result: {error!r}") from None
        if not isinstance(said, str):
            raise ValueError(f"the function must return text, got {said!r}")
        return value  # type: ignore[no-any-return]

    @field_serializer("normalise_results")
    def _dump_normalise(self, value: bool | Callable[[str], str]) -> bool | str:
        return value if isinstance(value, bool) else _named(value)

    @field_validator("escalate_after", mode="before")
    @classmethod
    def _check_escalate_after(cls, value: Any) -> int | None:
        if value is not None and (not is_int(value) or value < 2):
            raise ValueError(f"must be an integer >= 2, or None, got {value!r}")
        return value  # type: ignore[no-any-return]

    @model_validator(mode="after")
    def _check_escalation(self, info: ValidationInfo) -> ReminderConfig:
        given = (info.context or {}).get("given", self.model_fields_set)
        if self.escalate_after is None:
            if "exit_behavior" in given:
                raise ValueError("exit_behavior: applies only with escalate_after set")
            return self
        # Said with the way out: LangChain's own limits stand alone, so a first try is often
        # a limit at or below a reminder's threshold.
        limit = self.escalate_after
        used = [(d, self.detector_thresholds(d)) for d in self.detect]
        over = [(d, thresholds) for d, thresholds in used if thresholds[-1] >= limit]
        if not over:
            return self
        if "escalate_after" not in given:
            # The default stop comes after every reminder asked for: two calls after the last.
            self.__dict__["escalate_after"] = max(own[-1] for _, own in used) + 2
            return self
        # A limit given stands over the detectors the profile turned on: their reminders at or
        # past it give way to the stop. Only the detectors asked for are a conflict.
        asked = {"repeat", *self.detectors, *(self.detect if "detect" in given else ())}
        over = [(d, own) for d, own in over if d in asked]
        if not over:
            return self
        detector, thresholds = over[0]
        short = (info.context or {}).get("short", ())  # none given to `model_validate`
        fewer = [
            f"{_thresholds_keyword(d, short)}={[t for t in own if t < limit]}" for d, own in over
        ]
        way = "" if any(own[0] >= limit for _, own in over) else " and ".join(dict.fromkeys(fewer))
        least = max(own[-1] for _, own in used) + 1
        way += " (reminders before the stop) or " if way else ""
        raise ValueError(
            f"escalate_after: must be greater than every threshold of the {detector} detector "
            f"(the last is {thresholds[-1]}), got {limit}; pass {way}escalate_after \u2265 {least}"
        )

    # At run time only (its branch is always taken): to a type checker, a typo is no field.
    if not TYPE_CHECKING:  # pragma: no branch

        def __getattr__(self, name: str) -> Any:
            # A short form reads what its detector takes: `config.stale_thresholds`.
            detector = short_forms().get(name)
            if detector is not None:
                return self.detector_thresholds(detector)
            return super().__getattr__(name)

    def detector_settings(self, detector: str) -> Any:
        """A detector's settings, as its `settings` model reads them (`detectors` over its own)."""
        return DETECTORS[detector].settings(**self.detectors.get(detector, {}))

    def detector_thresholds(self, detector: str) -> tuple[int, ...]:
        """A detector's thresholds: its settings', or `thresholds` for `repeat`."""
        return getattr(self.detector_settings(detector), "thresholds", tuple(self.thresholds))

    def model_post_init(self, __context: Any) -> None:
        """Compile the patterns once."""
        self._include = compile_patterns(self.include)
        self._exclude = compile_patterns(self.exclude)
        self._ignore = tuple(
            (compiled, tuple(paths))
            for pattern, paths in self.ignore_arguments.items()
            if (compiled := compile_patterns([pattern])) is not None
        )
        self._normalise = normaliser(self.normalise_results)

    # A configuration is a value: equal when its fields, and which were set explicitly (they
    # decide precedence over tools' own policies), are equal; the compiled patterns play no part.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReminderConfig):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.model_fields_set == other.model_fields_set

    def __hash__(self) -> int:
        return hash((tuple(self.__dict__.values()), frozenset(self.model_fields_set)))

    @classmethod
    def from_file(cls, path: str | PathLike[str], **fields: Any) -> ReminderConfig:
        """The configuration a TOML or JSON file holds, with `fields` over it.

        The file's top level holds the fields (in `pyproject.toml`, its
        `[tool.repeat-reminder]` table), checked as strictly as the keywords are:

        ```toml
        thresholds = [3, 5, 8]
        exclude = ["think"]
        detect = ["repeat", "stale", "same_error"]
        error_pattern = "^Error"

        [ignore_arguments]
        run_shell = ["description"]
        ```

        Raises:
            ConfigError: The file cannot be read, is not TOML or JSON, names something that
                is not a field, or holds a value that breaks its field's rule; the message
                names the file, and the line or the field.
        """
        try:
            stored = read_settings(path, [*cls.model_fields, *short_forms()])
        except ValueError as error:
            raise ConfigError(str(error)) from None
        check_field_names(fields)
        try:
            return cls(**{**stored, **fields})
        except ConfigError as error:
            problems = str(error).splitlines()
        # A problem is the file's, unless a keyword set its field, or the file is valid alone
        # (then the keywords made it: a threshold above the file's escalate_after, say).
        given = set(fields)
        if fields and _valid(cls, stored):
            named = f"keyword{'s' if len(given) > 1 else ''} {', '.join(sorted(given))}"
            source = f" (from the {named}: {fspath(path)} alone is valid)"
        else:
            source = ""
        raise ConfigError(
            "\n".join(
                p
                if p.split(":")[0] in given
                else (p + source if source else f"{fspath(path)}: {p}")
                for p in problems
            )
        )

    def to_file(self, path: str | PathLike[str]) -> None:
        """Write the fields set explicitly to a TOML or JSON file `from_file` reads back.

        The settings go into a file beside `path`, renamed over it once complete: a file that
        was there stays whole until then, whatever happens.

        Raises:
            ConfigError: `path` is neither `.toml` nor `.json`, `not_user` is a function (a
                file holds a pattern only), or a field set to None whose default is not None
                goes to TOML, which has no null (JSON has).
            OSError: The file cannot be written; one that was there is as it was.
        """
        text = file_text(self, path)
        with Beside(path) as written:
            written.commit(text)

    def tracks(self, tool: str, policy: ToolPolicy | None = None) -> bool:
        """Whether calls to `tool` count, given `include`, `exclude` and the tool's policy."""
        return self.rules(tool, policy) is not None

    def rules(self, tool: str, policy: ToolPolicy | None = None) -> Rules | None:
        """The rules calls to `tool` are counted by, or None when they are not counted.

        `policy` is the tool's own, if it declares one. Precedence: an `exclude` pattern
        matching the tool wins; then `include`, when given, decides alone; then the tool's own
        `exclude`. For thresholds, `repeat_every` and `progress`, a field set explicitly here
        wins over the tool's own; the tool's own wins over a field left at its default (and
        over `progress="auto"`). Argument patterns from both apply, and so do the normaliser
        and the tool's result patterns (compiled here: once per tool, as a counter asks).
        """
        if self._exclude is not None and self._exclude.fullmatch(tool) is not None:
            return None
        if self._include is not None:
            if self._include.fullmatch(tool) is None:
                return None
        elif policy is not None and policy.exclude:
            return None
        explicit = self.model_fields_set
        thresholds = tuple(self.thresholds)
        repeat_every = self.repeat_every
        progress = self.progress
        ignored = [path for rule, paths in self._ignore if rule.fullmatch(tool) for path in paths]
        normalise = self._normalise
        if policy is not None:
            if policy.thresholds is not None and "thresholds" not in explicit:
                thresholds = policy.thresholds
            if policy.repeat_every is not None and "repeat_every" not in explicit:
                repeat_every = policy.repeat_every
            if policy.progress is not None and ("progress" not in explicit or progress == "auto"):
                progress = policy.progress
            ignored += policy.ignore_arguments
            normalise = with_patterns(normalise, policy.normalise_results)
        if progress == "auto":
            result_aware = policy is not None and policy.read_only is True and not policy.idempotent
        else:
            result_aware = progress == "result"
        return Rules(thresholds, repeat_every, result_aware, compile_paths(ignored), normalise)


def file_text(config: ReminderConfig, path: str | PathLike[str]) -> str:
    """What `config.to_file(path)` writes: the fields set explicitly, as the file's kind says.

    Raises:
        ConfigError: As `to_file` says.
    """
    if callable(config.not_user):
        raise ConfigError("not_user: a function cannot be written to a file, only a pattern")
    if any(callable(w) for said in config.words.values() for w in said.values()):
        raise ConfigError("words: a function cannot be written to a file, only format strings")
    if callable(config.normalise_results):
        raise ConfigError(
            "normalise_results: a function cannot be written to a file, only True or False"
        )
    fields = config.model_dump(mode="json", include=set(config.model_fields_set))
    ordered = {name: fields[name] for name in type(config).model_fields if name in fields}
    # A field left out of the file reads back as its profile has it.
    profile = type(config)(profile=config.profile)
    try:
        return settings_text(ordered, path, {name: getattr(profile, name) for name in ordered})
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _valid(cls: type[ReminderConfig], fields: Mapping[str, Any]) -> bool:
    """Whether `fields` make a configuration (without saying so twice: no warnings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cls(**fields)
        except ConfigError:
            return False
    return True


def _thresholds_keyword(detector: str, short: Collection[str]) -> str:
    """Where a detector's thresholds are given, as a message names them: as they were given."""
    if "thresholds" not in DETECTORS[detector].settings.model_fields:
        return "thresholds"
    keyword = f"{detector}_thresholds"
    return keyword if keyword in short else f"detectors.{detector}.thresholds"


def _long_forms(fields: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...], list[str]]:
    """`fields` with each short form of a detector's thresholds given in `detectors`.

    Also the short forms given, and a problem for each that is not thresholds, or whose
    detector's thresholds `detectors` gives too (it is left out).
    """
    forms = short_forms()
    given = tuple(name for name in fields if name in forms)
    detectors = fields.get("detectors", {})
    # `detectors` that is no mapping is refused as it is: the short forms add nothing to say.
    if not given or not isinstance(detectors, Mapping):
        return fields, given, []
    fields, detectors, problems = dict(fields), dict(detectors), []
    for short in given:
        name, value = forms[short], fields.pop(short)
        own = detectors.get(name, {})
        if isinstance(own, Mapping) and "thresholds" in own:
            problems.append(f"{short} and detectors.{name}.thresholds: give one, not both")
            continue
        try:
            thresholds = check_thresholds(value)
        except ValueError as error:
            problems.append(f"{short}: {error}")
            continue
        detectors[name] = {**own, "thresholds": thresholds} if isinstance(own, Mapping) else own
    fields["detectors"] = detectors
    return fields, given, problems


def _plain(item: Any) -> Any:
    """A setting as plain JSON: thresholds as a list, a function of the user's words by name."""
    if isinstance(item, tuple):
        return list(item)
    return _named(item) if callable(item) else item


def _taking_one(function: Callable[..., Any]) -> Callable[[Any], bool]:
    """`function`, unless it cannot be called with one argument, as `not_user` is called.

    Found at run time, it would fail on every user message, and the guard would count nothing.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # no signature to read (a builtin): taken at its word
        return function
    try:
        signature.bind(None)
    except TypeError:
        name = getattr(function, "__name__", repr(function))
        raise ValueError(
            f"a function must take one argument, the message or its text; {name} takes "
            f"({', '.join(signature.parameters)})"
        ) from None
    return function


def _named(value: str | Callable[..., Any]) -> str:
    """A setting as text: itself, or the name of a function (which no file can hold)."""
    if isinstance(value, str):
        return value
    return f"<function {getattr(value, '__qualname__', repr(value))}>"


def check_field_names(fields: Mapping[str, Any]) -> None:
    """Raise `TypeError` for a keyword that names no `ReminderConfig` field."""
    known = [*ReminderConfig.model_fields, *short_forms()]
    for name in fields:
        if name not in known:
            hint = did_you_mean(name, known, "fields")
            raise TypeError(f"unknown ReminderConfig field {name!r}{hint}")


def resolve_config(config: ReminderConfig | None, fields: Mapping[str, Any]) -> ReminderConfig:
    """The configuration of a guard built with `config=...` or with the fields as keywords.

    Raises:
        TypeError: Both were given, `config` is not a `ReminderConfig`, or a keyword names no
            field (with the nearest field name when there is one).
        ConfigError: A field's value breaks its rule.

    """
    if config is not None and fields:
        raise TypeError("pass either a ReminderConfig or its fields as keywords, not both")
    if config is not None and not isinstance(config, ReminderConfig):
        raise TypeError(f"config must be a ReminderConfig, got {type(config).__name__}")
    return config if config is not None else ReminderConfig(**fields)
