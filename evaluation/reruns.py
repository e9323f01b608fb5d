"""The "edit then re-run" pattern: a call made again after something was changed.

A coding agent edits a file and runs the same test again; the output changes because the
edit changed it. That is progress, and the `stale` detector must stay silent on it: it counts
only identical results. This module finds every re-run and sorts it, so that the evaluation
can show that it does.

Definitions, per conversation:

* a **re-run** is a tracked call whose tool and canonical arguments (the guard's key) equal
  those of an earlier call in the same conversation; its **previous run** is the latest such
  earlier call;
* an **edit** is a call that changes something the re-run may read: a shell command that
  writes files (see `evaluation.edits`), or a call to a tool whose name says it writes
  (`WRITE_TOOLS`: `update_*`, `book_*`, `cancel_*`, ...);
* the re-run is **after an edit** when at least one edit came between it and its previous
  run, and its **output changed** when its result differs from the previous run's.

A re-run whose output changed has a `stale` count of 1 by construction; the evaluation checks
it. One whose output did not change counts on from the previous run, unless a user message
came between (the guard starts over when the user speaks).

A re-run that is itself an edit by its own text (a file written again with the same text, a
`sed -i` applied again, a `git checkout` of a file) is put apart: its output is the writer's,
not the state it checks. Running a script that writes counts as an edit made between runs,
but its re-run is not put apart: such a script is as often a reproduction that writes
scratch files as a fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from repeat_reminder_langchain import canonicalize

from .edits import Edits
from .run import Replay

__all__ = ["KINDS", "WRITE_TOOLS", "Kind", "Rerun", "reruns"]

WRITE_TOOLS = re.compile(
    r"(?:\w+_)?(?:update|book|cancel|send|create|delete|remove|write|edit|modify|set|add|"
    r"apply|patch|move|rename|insert|replace)(?:_\w+)?"
)
"""Tool names that say the tool changes state: a write verb as one of the name's words."""

Kind = Literal["edit_changed", "edit_same", "plain_changed", "plain_same", "is_edit"]

KINDS: dict[Kind, str] = {
    "edit_changed": "after an edit, output changed (edit then re-run)",
    "edit_same": "after an edit, output unchanged",
    "plain_changed": "no edit between, output changed",
    "plain_same": "no edit between, output unchanged",
    "is_edit": "the re-run is itself an edit",
}
"""Every kind of re-run, in the order they are reported, with its description."""


@dataclass(frozen=True, slots=True)
class Rerun:
    """One call made again.

    Attributes:
        conversation: The conversation's position in its file, from 0.
        call: The re-run's position among the conversation's calls.
        previous: The previous run's position.
        tool: The tool called.
        args: The arguments.
        kind: Which kind of re-run it is (see `KINDS`).
        edits: How many edits came between the two runs.
        changed: Whether its result differs from the previous run's.
        stale: The `stale` detector's count on the re-run (identical results in a row).
        fired: Whether the re-run drew a `stale` reminder.
    """

    conversation: int
    call: int
    previous: int
    tool: str
    args: object
    kind: Kind
    edits: int
    changed: bool
    stale: int
    fired: bool


def _command(args: object) -> str | None:
    """The shell command a call runs, for a tool taking `{"command": ...}`; else None."""
    if isinstance(args, Mapping):
        command = args.get("command")
        if isinstance(command, str):
            return command
    return None


def reruns(replayed: Replay) -> list[Rerun]:
    """Every re-run of one conversation, from its replay with the `stale` detector in use."""
    edits = Edits()
    found: list[Rerun] = []
    latest: dict[tuple[str, str], int] = {}  # key -> position of its latest run
    edited: list[int] = []  # running count of edits made before each call
    for position, item in enumerate(replayed.calls):
        call = item.call
        command = _command(call.args)
        if command is not None:
            edit = edits(command)
        else:
            edit = "writes" if WRITE_TOOLS.fullmatch(call.tool) else ""
        edited.append((edited[-1] if edited else 0) + bool(edit))
        if item.trace is None:
            continue  # untracked: the guard does not see it, so it is no re-run of its own
        key = (call.tool, canonicalize(call.args))
        previous = latest.get(key)
        latest[key] = position
        if previous is None:
            continue
        between = edited[position - 1] - edited[previous]
        changed = call.result != replayed.calls[previous].call.result
        kind: Kind
        if edit == "writes":
            kind = "is_edit"
        elif between:
            kind = "edit_changed" if changed else "edit_same"
        else:
            kind = "plain_changed" if changed else "plain_same"
        reminder = item.trace.reminder
        found.append(
            Rerun(
                replayed.conversation.index,
                position,
                previous,
                call.tool,
                call.args,
                kind,
                between,
                changed,
                item.trace.counts.get("stale", 0),
                reminder is not None and reminder.detector == "stale",
            )
        )
    return found
