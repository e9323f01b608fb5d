"""Running the guard's detectors over saved conversations, through the package's own replay.

Nothing here counts: every figure comes from `replay`, which counts a conversation exactly as
the guard does at run time, so the evaluation measures the guard and not a copy of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain.replay import Replayed, replay
from repeat_reminder_langchain.tooling.audit import Conversation, read_logs

__all__ = [
    "CORPUS",
    "ERROR_PATTERN",
    "SHELL_ERRORS",
    "SWEEP",
    "TAU_BENCH_ERRORS",
    "Firing",
    "Outcome",
    "Replay",
    "Settings",
    "Sweep",
    "load",
    "replay_all",
    "sweep",
]

CORPUS = (
    "the development corpus is public conversations, not kept in this repository: "
    "sierra-research/tau-bench historical_trajectories/gpt-4o-airline.json at "
    "59a200c6d575d595120f1cb70fea53cef0632f6b (MIT; every other record, read as published) "
    "and gruckion/mini-swe-agent swebench_results/20251118_gemini-3-pro-74pct/trajs at "
    "d12a71affd95403b036b2bdbd827349b77bfffb9 (MIT; every other instance, converted to "
    "LangChain message dicts), expected as ../shared/corpus/*.json*"
)
"""Where the conversations `make evaluate` reads come from, for a clone that has none."""

SWEEP = (2, 3, 4, 5)
"""The thresholds the sweep shows, for the trade-off between firing early and firing right."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What the evaluation is run with.

    Attributes:
        stale_thresholds: The `stale` detector's thresholds.
        same_error_thresholds: The `same_error` detector's thresholds.
        error_pattern: The `error_pattern` that marks a call as failed by its result's text.
        exclude: Tools left out of counting, as the guard's `exclude`.
        not_user: The guard's `not_user`: a regular expression for the user-role messages
            that are not the user (a harness's feedback, such as mini-swe-agent's format
            errors), so that they reset nothing.
        detect: The detectors these settings turn on together (the evaluation also runs
            each detector alone, whatever this lists).
        profile: The guard's `profile`, for the fields not set here (`progress`, the stop).
    """

    stale_thresholds: tuple[int, ...] = (3,)
    same_error_thresholds: tuple[int, ...] = (3,)
    error_pattern: str | None = None
    exclude: tuple[str, ...] = ()
    not_user: str | None = None
    detect: tuple[str, ...] = ("repeat",)
    profile: str = "default"

    def config(self, detect: Sequence[str], **fields: object) -> ReminderConfig:
        """The guard's configuration with `detect` in use, other fields as overridden."""
        own = {"stale": self.stale_thresholds, "same_error": self.same_error_thresholds}
        detectors: dict[str, object] = {
            name: {"thresholds": thresholds} for name, thresholds in own.items() if name in detect
        }
        detectors.update(fields.pop("detectors", {}))  # type: ignore[call-overload]
        base: dict[str, object] = {
            "detect": tuple(detect),
            "detectors": detectors,
            "error_pattern": self.error_pattern,
            "exclude": self.exclude,
            "not_user": self.not_user,
            "profile": self.profile,
        }
        return ReminderConfig(**{**base, **fields})


@dataclass(frozen=True, slots=True)
class Firing:
    """One reminder the guard would have added.

    Attributes:
        conversation: The conversation's position in its file, from 0 (its line in JSON
            Lines is this plus one).
        id: The conversation's id, when the record has one.
        message: The position of the `AIMessage` that made the call.
        call: The call's position among the conversation's calls, from 0.
        detector: The detector that fired.
        count: What it counted: identical calls, results or failures in a row.
        tool: The tool called.
        args: The call's arguments.
        result: What the call returned.
    """

    conversation: int
    id: str | None
    message: int
    call: int
    detector: str
    count: int
    tool: str
    args: object
    result: object


@dataclass(frozen=True, slots=True)
class Replay:
    """One conversation replayed under one configuration: every call with what it reached."""

    conversation: Conversation
    calls: list[Replayed]

    def firings(self) -> list[Firing]:
        """The reminders the guard would have added, in order."""
        found = []
        for position, item in enumerate(self.calls):
            reminder = None if item.trace is None else item.trace.reminder
            if reminder is not None:
                found.append(
                    Firing(
                        self.conversation.index,
                        self.conversation.id,
                        item.message,
                        position,
                        reminder.detector,
                        reminder.count,
                        item.call.tool,
                        item.call.args,
                        item.call.result,
                    )
                )
        return found


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one configuration drew over a file."""

    firings: list[Firing] = field(default_factory=list)

    @property
    def conversations(self) -> int:
        """How many conversations drew at least one reminder."""
        return len({firing.conversation for firing in self.firings})

    @property
    def tools(self) -> Counter[str]:
        """Firings per tool."""
        return Counter(firing.tool for firing in self.firings)

    @property
    def detectors(self) -> Counter[str]:
        """Firings per detector (with several in use, the one that took the call)."""
        return Counter(firing.detector for firing in self.firings)


@dataclass(frozen=True, slots=True)
class Sweep:
    """Firings of one detector alone at one threshold."""

    threshold: int
    firings: int
    conversations: int


def load(path: str) -> list[Conversation]:
    """Every conversation of one file, numbered from 0 within it."""
    return list(read_logs([path]))


def replay_all(conversations: Iterable[Conversation], config: ReminderConfig) -> list[Replay]:
    """Every conversation replayed under `config`."""
    return [
        Replay(conversation, list(replay(conversation.messages, config)))
        for conversation in conversations
    ]


def sweep(replays: Sequence[Replay], thresholds: Sequence[int] = SWEEP) -> list[Sweep]:
    """Firings at each threshold, from replays of one detector alone with all of them set.

    With one detector in use and thresholds `(2, 3, 4, 5)`, a call fires exactly when its count
    is one of them, and counting does not depend on what fired: so the firings with count `t`
    are the ones a single threshold `t` would give, and one replay serves the whole sweep.
    """
    by_count: dict[int, list[Firing]] = {threshold: [] for threshold in thresholds}
    for item in replays:
        for firing in item.firings():
            by_count.setdefault(firing.count, []).append(firing)
    return [
        Sweep(t, len(by_count[t]), len({f.conversation for f in by_count[t]})) for t in thresholds
    ]


TAU_BENCH_ERRORS = r"\AError: "
"""τ-bench's tools report a failure as a result text starting `Error: `."""

SHELL_ERRORS = r"\A<returncode>[1-9]\d*</returncode>\n<(?:output>\n(?!</output>)|warning>)"
"""mini-swe-agent's shell: a non-zero return code with something said. An empty output with
return code 1 is left out: that is `grep` finding nothing, an answer and not a failure, and
every such answer has the same text, so different searches would look like one error."""

ERROR_PATTERN = f"{TAU_BENCH_ERRORS}|{SHELL_ERRORS}"
"""The evaluation's default `error_pattern`: either of the above."""

NOT_USER = r"\APlease always provide EXACTLY ONE action"
"""mini-swe-agent's answer to a reply with no command or several, sent as a user message: the
harness speaking, not the user (the evaluation's `not_user` for the recommended settings)."""
