"""How the guard tells the developer: the logger it writes to, and its warning.

The warning says that a guard is set up so that part of it cannot work. Nothing here knows
LangChain.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
import warnings
from types import FrameType

__all__ = ["LOGGER_NAME", "RepeatToolReminderWarning", "warn"]

LOGGER_NAME = "repeat_reminder_langchain"


class RepeatToolReminderWarning(RuntimeWarning):
    """The guard is set up or wired so that part of it cannot do its work.

    Its reminders reach no model (no node after the tools node), its node runs before the
    results it counts, outside its handler's sight, or on a state without its field; it would
    ask a human with no checkpointer to resume from; or words are set for a detector that is
    not in `detect`. Each is said once per guard, as this warning, pointing at the user's line
    that built the guard or ran the graph where it is on the stack; `-W error::...` or
    `warnings.simplefilter("error", RepeatToolReminderWarning)` turns it into an error, and
    `logging.captureWarnings(True)` sends it to the log.
    """


def warn(message: str) -> None:
    """Say that the guard is set up so that it cannot do part of its work.

    As a Python warning, which is what a mistake the user can fix calls for: it shows with
    logging unconfigured, points at the user's line where that is on the stack, and can be
    made an error.
    """
    warnings.warn(message, RepeatToolReminderWarning, stacklevel=_outside(sys._getframe(1)))


def _folders(*packages: str) -> tuple[str, ...]:
    """Where the packages' modules are (each folder, with a trailing separator)."""
    found = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        found += [folder + os.sep for folder in (spec and spec.submodule_search_locations) or ()]
    return tuple(found)


# Where the user's code is not: this package; the libraries that build and run a guard, and
# Python's own. (Found by name, not imported: the core imports nothing of LangChain.)
_OURS = _folders("repeat_reminder_langchain")
_LIBRARIES = (
    *_folders("langchain_core", "langgraph", "langchain", "langsmith", "pydantic"),
    sysconfig.get_paths()["stdlib"] + os.sep,
)


def _outside(frame: FrameType | None) -> int:
    """The `stacklevel` of the first frame outside these, or outside this package at least."""
    level, fallback = 2, None  # level 2: warn's caller
    while frame is not None:
        where = frame.f_code.co_filename
        if not where.startswith(_OURS):
            if not where.startswith(_LIBRARIES):
                return level
            fallback = fallback or level
        frame, level = frame.f_back, level + 1
    return fallback or 2
