"""How the faces tell a user that the guard is wired where it cannot do its work."""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
import warnings
from types import FrameType
from typing import Any

from .config import ReminderConfig
from .reminder import RepeatToolReminderWarning

__all__ = ["Misplaced", "refuse_block", "warn_wiring"]


def warn_wiring(message: str) -> None:
    """Say, once, that the guard is wired so that it cannot do its work.

    As a Python warning, which is what a mistake the user can fix calls for: it shows with
    logging unconfigured, points at the user's line that ran the graph where that is on the
    stack, and can be made an error. (`logging.captureWarnings(True)` sends it to the log.)
    """
    warnings.warn(message, RepeatToolReminderWarning, stacklevel=_outside(sys._getframe(1)))


def _folders(*packages: str) -> tuple[str, ...]:
    """Where the packages' modules are (each folder, with a trailing separator)."""
    found = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        found += [folder + os.sep for folder in (spec and spec.submodule_search_locations) or ()]
    return tuple(found)


# Where the user's code is not: this package; the libraries that run a graph, and Python's own.
_OURS = _folders("repeat_reminder_langchain")
_LIBRARIES = (
    *_folders("langchain_core", "langgraph", "langchain"),
    sysconfig.get_paths()["stdlib"] + os.sep,
)


def _outside(frame: FrameType | None) -> int:
    """The `stacklevel` of the first frame outside these, or outside this package at least."""
    level, fallback = 2, None  # level 2: warn_wiring's caller
    while frame is not None:
        where = frame.f_code.co_filename
        if not where.startswith(_OURS):
            if not where.startswith(_LIBRARIES):
                return level
            fallback = fallback or level
        frame, level = frame.f_back, level + 1
    return fallback or 2


class Misplaced:
    """An attribute that the wrong place reads first: an error that names the right one.

    `create_agent` reads a middleware's hooks from its class, LangChain's callback manager a
    handler's flags; a guard given to the one that is not its own fails there, clearly.
    """

    def __init__(self, message: str) -> None:
        self.message = message

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        raise AttributeError(self.message)


def refuse_block(config: ReminderConfig) -> None:
    """Refuse `exit_behavior="block"` on a face that cannot see a call before it runs."""
    if config.escalate_after is not None and config.exit_behavior == "block":
        raise TypeError(
            'exit_behavior="block" needs RepeatToolReminderMiddleware: only middleware sees '
            "a call before it runs"
        )
