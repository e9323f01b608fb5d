"""Evaluating the detectors over one file: every figure the report prints, in one value."""

from __future__ import annotations

from dataclasses import dataclass, field

from repeat_reminder_langchain import ReminderConfig
from repeat_reminder_langchain.tooling.audit import Conversation, detectors

from .reruns import Rerun, reruns
from .run import SWEEP, Outcome, Replay, Settings, Sweep, load, replay_all, sweep

__all__ = ["ALONE", "FileReport", "evaluate"]

ALONE: tuple[str, ...] = detectors()
"""Every detector, each run alone, in the order they take precedence."""
"""The detectors run one at a time, each with the others off (then all together)."""


@dataclass(frozen=True, slots=True)
class FileReport:
    """What the detectors drew over one file.

    Attributes:
        path: The file.
        settings: What they ran with.
        conversations: The file's conversations, as read.
        calls: Tool calls in it.
        tracked: Of those, the ones the guard counts (the others are excluded).
        outcomes: Per detector alone and `all` together.
        sweeps: For each detector with thresholds of its own, the firings at each threshold
            of `SWEEP`.
        reruns: Every re-run of a call, sorted by kind (see `evaluation.reruns`).
        replays: The replays with only `stale` in use, to show a firing in context.
    """

    path: str
    settings: Settings
    conversations: list[Conversation]
    calls: int
    tracked: int
    outcomes: dict[str, Outcome]
    sweeps: dict[str, list[Sweep]]
    reruns: list[Rerun]
    replays: dict[str, list[Replay]] = field(default_factory=dict)


def evaluate(path: str, settings: Settings) -> FileReport:
    """Run every detector over the file at `path` (one `replay` per configuration)."""
    conversations = load(path)
    replays: dict[str, list[Replay]] = {}
    outcomes: dict[str, Outcome] = {}
    for detector in ALONE:
        replays[detector] = replay_all(conversations, settings.config([detector]))
    replays["all"] = replay_all(conversations, settings.config(ALONE))
    for name, replayed in replays.items():
        outcomes[name] = Outcome([f for item in replayed for f in item.firings()])
    sweeps: dict[str, list[Sweep]] = {
        detector: sweep(
            replay_all(
                conversations,
                settings.config([detector], detectors={detector: {"thresholds": SWEEP}}),
            )
        )
        for detector in ALONE
        # `repeat`'s thresholds are each tool's: not swept
        if hasattr(ReminderConfig().detector_settings(detector), "thresholds")
    }
    calls = [item for replayed in replays["repeat"] for item in replayed.calls]
    return FileReport(
        path=path,
        settings=settings,
        conversations=conversations,
        calls=len(calls),
        tracked=sum(item.trace is not None for item in calls),
        outcomes=outcomes,
        sweeps=sweeps,
        reruns=[rerun for replayed in replays["stale"] for rerun in reruns(replayed)],
        replays=replays,
    )
