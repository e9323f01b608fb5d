"""Precision and recall of the detectors against the labels read by hand (`evaluation/labels/`).

Two kinds of label are kept per corpus file, one JSON object a line (see `labels/README.md`):

* a **flag** is a reminder a detector alone would send: a replayed call whose trace has a
  reminder. It is keyed by (conversation, call, detector) and records under which settings and
  thresholds it fires (`fires`), so that one label serves every row of the table. Its label
  is `genuine` (the agent repeated work that gave it nothing new; a reminder would help) or
  `false`.
* a **loop** is a candidate found by `evaluation.scan`, independently of the detectors, keyed
  by (conversation, shape, calls). Its label is `loop` or `not`.

The table is recomputed from the labels and a fresh replay: a flag the code raises that has no
label is counted as unlabelled and shown, never taken as genuine or false, and so is a
candidate loop the scan finds that has no label.

* precision, per detector, setting and threshold: genuine flags / labelled flags there;
* recall: labelled loops (`loop`) that at least one of those flags falls in (the flag's call
  is one of the loop's calls) / labelled loops, a loop found by two shapes with the same calls
  counted once.

The `any` rows take every detector's flags together, and the `on` rows the flags of the detectors
the setting turns on (its `detect`): a call flagged by several counts once, genuine if any of its
labels is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from repeat_reminder_langchain import BOOKKEEPING_TOOLS, ReminderConfig
from repeat_reminder_langchain.tooling.audit import Conversation, suggest_settings

from .evaluate import ALONE
from .run import ERROR_PATTERN, NOT_USER, Replay, Settings, load, replay_all
from .scan import SHAPES, scan

__all__ = [
    "FLAG_LABELS",
    "LABELS",
    "LOOP_LABELS",
    "SETTINGS",
    "THRESHOLDS",
    "FlagKey",
    "Labels",
    "LoopKey",
    "Row",
    "every_setting",
    "flags",
    "labels_path",
    "loops",
    "read_labels",
    "score",
    "suggested",
    "table",
]

LABELS = Path(__file__).parent / "labels"
"""Where the labels are kept, one file per corpus file."""

_INSTALLED = ReminderConfig()

SETTINGS: dict[str, Settings] = {
    "seed": Settings(profile="seed"),
    "installed": Settings(
        error_pattern=_INSTALLED.error_pattern,
        exclude=tuple(_INSTALLED.exclude),
        detect=tuple(_INSTALLED.detect),
    ),
    "recommended": Settings(
        error_pattern=ERROR_PATTERN,
        exclude=BOOKKEEPING_TOOLS,
        not_user=NOT_USER,
        detect=("repeat", "same_error", "recurring_error", "stale"),
    ),
}
"""The settings labelled: 0.4.0's defaults (`profile="seed"`), the guard as installed
(`ReminderConfig()`), and the recommended configuration of
docs/guides/detectors.md (its detectors, bookkeeping tools excluded, an `error_pattern` and a
`not_user` pattern, here the evaluation's for both corpora's harnesses)."""

THRESHOLDS = (2, 3, 4)
"""Each detector alone is run at each of these, as its only threshold."""

FLAG_LABELS = ("genuine", "false")
LOOP_LABELS = ("loop", "not")

FlagKey = tuple[int, int, str]
"""(conversation, call, detector)."""

LoopKey = tuple[int, str, tuple[int, ...]]
"""(conversation, shape, calls)."""

Fires = tuple[tuple[str, int], ...]
"""(setting, threshold) pairs a flag fires under."""


def _config(settings: Settings, detector: str, threshold: int) -> ReminderConfig:
    if not hasattr(ReminderConfig().detector_settings(detector), "thresholds"):
        return settings.config([detector], thresholds=(threshold,))
    return settings.config([detector], detectors={detector: {"thresholds": (threshold,)}})


def suggested(conversations: Sequence[Conversation]) -> Settings:
    """The settings `audit --suggest` derives from these conversations alone."""
    config = suggest_settings(conversations)
    not_user = config.not_user if isinstance(config.not_user, str) else None
    return Settings(
        error_pattern=config.error_pattern,
        exclude=tuple(config.exclude),
        not_user=not_user,
        detect=tuple(config.detect),
    )


def every_setting(conversations: Sequence[Conversation]) -> dict[str, Settings]:
    """`SETTINGS`, and the settings suggested for these conversations (`suggested`)."""
    return {**SETTINGS, "suggested": suggested(conversations)}


def flags(
    conversations: Sequence[Conversation], settings: Mapping[str, Settings] = SETTINGS
) -> dict[FlagKey, Fires]:
    """Every flag of every detector alone, at every setting and threshold labelled.

    One replay per detector, setting and threshold: a flag is exactly what that configuration
    sends, with nothing inferred from another threshold's counts.
    """
    found: dict[FlagKey, list[tuple[str, int]]] = {}
    for name, setting in settings.items():
        for detector in ALONE:
            for threshold in THRESHOLDS:
                for replayed in replay_all(conversations, _config(setting, detector, threshold)):
                    for firing in replayed.firings():
                        key = (firing.conversation, firing.call, firing.detector)
                        found.setdefault(key, []).append((name, threshold))
    return {key: tuple(fires) for key, fires in sorted(found.items())}


def loops(replays: Iterable[Replay]) -> dict[LoopKey, str]:
    """Every candidate loop the scan finds, with its tool."""
    return {
        (item.conversation.index, loop.shape, loop.calls): loop.tool
        for item in replays
        for loop in scan(item.calls)
    }


@dataclass(frozen=True, slots=True)
class Labels:
    """The labels of one corpus file.

    Attributes:
        flags: Per flag, its label and reason.
        fires: Per flag, the settings and thresholds it fired under when it was labelled.
        loops: Per candidate loop, its label and reason.
    """

    flags: dict[FlagKey, tuple[str, str]]
    fires: dict[FlagKey, Fires]
    loops: dict[LoopKey, tuple[str, str]]


def labels_path(corpus: str | Path) -> Path:
    """The labels file of a corpus file: its name without `.json`/`.jsonl`, `.labels.jsonl`."""
    name = Path(corpus).name
    for suffix in (".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return LABELS / f"{name}.labels.jsonl"


def read_labels(path: str | Path) -> Labels:
    """The labels in `path`; a malformed line or a key given twice raises `ValueError`."""
    labelled: dict[FlagKey, tuple[str, str]] = {}
    fires: dict[FlagKey, Fires] = {}
    candidates: dict[LoopKey, tuple[str, str]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            where = f"{path}:{number}"
            label, reason = record.get("label"), record.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                raise ValueError(f"{where}: no reason")
            if record.get("kind") == "flag":
                if label not in FLAG_LABELS or record["detector"] not in ALONE:
                    raise ValueError(f"{where}: a flag is {FLAG_LABELS}, got {label!r}")
                key: FlagKey = (record["conversation"], record["call"], record["detector"])
                if key in labelled:
                    raise ValueError(f"{where}: flag {key} labelled twice")
                labelled[key] = (label, reason)
                fires[key] = tuple((name, threshold) for name, threshold in record["fires"])
            elif record.get("kind") == "loop":
                if label not in LOOP_LABELS or record["shape"] not in SHAPES:
                    raise ValueError(f"{where}: a loop is {LOOP_LABELS}, got {label!r}")
                loop: LoopKey = (record["conversation"], record["shape"], tuple(record["calls"]))
                if loop in candidates:
                    raise ValueError(f"{where}: loop {loop} labelled twice")
                candidates[loop] = (label, reason)
            else:
                raise ValueError(f"{where}: kind must be 'flag' or 'loop'")
    return Labels(labelled, fires, candidates)


@dataclass(frozen=True, slots=True)
class Row:
    """One detector (or `any`, or `on`) at one setting and threshold, against the labels.

    Attributes:
        detector: A detector alone, `any` for every detector together, or `on` for the ones
            the setting turns on.
        setting: The name of the setting (a key of `SETTINGS`).
        threshold: The threshold.
        flags: Flags raised (distinct calls, for `any`).
        genuine: Of those, labelled `genuine`.
        false: Of those, labelled `false`.
        unlabelled: Of those, with no label.
        found: Labelled loops at least one of the flags falls in.
        loops: Labelled loops (`loop`), distinct by conversation and calls.
        stray: Flags on conversations without a labelled loop.
        loopless: How many conversations have no labelled loop (0 when not known).
    """

    detector: str
    setting: str
    threshold: int
    flags: int
    genuine: int
    false: int
    unlabelled: int
    found: int
    loops: int
    stray: int = 0
    loopless: int = 0

    @property
    def precision(self) -> float | None:
        """Genuine flags over labelled flags; None with no labelled flag."""
        judged = self.genuine + self.false
        return self.genuine / judged if judged else None

    @property
    def recall(self) -> float | None:
        """Loops found over labelled loops; None with no labelled loop."""
        return self.found / self.loops if self.loops else None

    @property
    def stray_rate(self) -> float | None:
        """Flags per 10 conversations without a labelled loop; None when there are none."""
        return 10 * self.stray / self.loopless if self.loopless else None


def score(
    raised: Mapping[FlagKey, Fires],
    labels: Labels,
    detectors: Sequence[str] = (*ALONE, "any", "on"),
    settings: Mapping[str, Settings] = SETTINGS,
    conversations: int = 0,
) -> list[Row]:
    """Every row of the table: `raised` (from `flags`) judged by `labels`.

    `conversations`: how many the file holds, for the flags per 10 conversations without a
    labelled loop (0: not known).
    """
    # Two shapes can find the same calls (a failure repeated with the same arguments is both a
    # same call and a same failure): that is one loop to find, not two.
    real = sorted(
        {(c, calls) for (c, _, calls), (label, _) in labels.loops.items() if label == "loop"}
    )
    looping = {c for c, _ in real}
    loopless = max(conversations - len(looping), 0)
    rows = []
    for setting, given in settings.items():
        for detector in detectors:
            among = {"any": ALONE, "on": given.detect}.get(detector, (detector,))
            for threshold in THRESHOLDS:
                chosen = [
                    key
                    for key, fires in raised.items()
                    if (setting, threshold) in fires and key[2] in among
                ]
                verdicts: dict[tuple[int, int], set[str]] = {}
                for key in chosen:
                    label = labels.flags.get(key)
                    verdicts.setdefault(key[:2], set()).add("" if label is None else label[0])
                genuine = sum("genuine" in found for found in verdicts.values())
                # A call counts as false only when every flag on it was read and found false.
                unlabelled = sum(
                    "" in found and "genuine" not in found for found in verdicts.values()
                )
                calls = set(verdicts)
                hit = sum(any((c, call) in calls for call in loop) for c, loop in real)
                stray = sum(c not in looping for c, _ in calls)
                rows.append(
                    Row(
                        detector,
                        setting,
                        threshold,
                        len(verdicts),
                        genuine,
                        len(verdicts) - genuine - unlabelled,
                        unlabelled,
                        hit,
                        len(real),
                        stray,
                        loopless,
                    )
                )
    return rows


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def table(corpus: str, conversations: Sequence[Conversation] | None = None) -> str:
    """The precision and recall table of one corpus file, as the evaluation prints it.

    `conversations` are the file's, as `load` reads them with every message kept; read from
    `corpus` when not given.
    """
    path = labels_path(corpus)
    if not path.exists():
        return f"   labels: none for this file (no {path.name} in evaluation/labels/)"
    labels = read_labels(path)
    if conversations is None:
        conversations = load(corpus)
    every = every_setting(conversations)
    raised = flags(conversations, every)
    found = loops(replay_all(conversations, ReminderConfig()))
    real = {(c, calls) for (c, _, calls), (label, _) in labels.loops.items() if label == "loop"}
    lines = [
        f"   labels ({path.name}): {len(labels.flags)} flags, {len(labels.loops)} candidate "
        f"loops, {len(real)} of them loops; raised now and unlabelled: "
        f"{sum(key not in labels.flags for key in raised)} flags, "
        f"{sum(key not in labels.loops for key in found)} candidate loops; labelled and not "
        f"raised now: {sum(key not in raised for key in labels.flags)} flags",
        "   settings: " + "; ".join(f"{name} = {_describe(s)}" for name, s in every.items()),
        "   precision = genuine / labelled flags; recall = loops with a flag on one of their "
        "calls / labelled loops; stray = flags on conversations without a labelled loop, per 10 "
        "of those",
        f"   {'detector':<17}{'setting':<13}{'at':>3}{'flags':>7}{'genuine':>9}{'false':>7}"
        f"{'unlabelled':>12}{'precision':>11}{'recall':>12}{'stray':>8}",
    ]
    for row in score(raised, labels, settings=every, conversations=len(conversations)):
        recall = f"{row.found}/{row.loops} {_percent(row.recall)}"
        stray = "-" if row.stray_rate is None else f"{row.stray_rate:.2f}"
        lines.append(
            f"   {row.detector:<17}{row.setting:<13}{row.threshold:>3}{row.flags:>7}"
            f"{row.genuine:>9}{row.false:>7}{row.unlabelled:>12}"
            f"{_percent(row.precision):>11}{recall:>12}{stray:>8}"
        )
    return "\n".join(lines)


def _describe(settings: Settings) -> str:
    if settings == SETTINGS["seed"]:
        return "0.4.0's defaults (profile='seed')"
    if settings == SETTINGS["installed"]:
        return "the guard as installed (ReminderConfig())"
    if settings == SETTINGS["recommended"]:
        return (
            f"detect={settings.detect!r}, exclude=BOOKKEEPING_TOOLS, error_pattern=ERROR_PATTERN, "
            "not_user=NOT_USER"
        )
    return "audit --suggest's: " + ", ".join(
        f"{name}={getattr(settings, name)!r}"
        for name in ("detect", "exclude", "error_pattern", "not_user")
        if getattr(settings, name)
    )
