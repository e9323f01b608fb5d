"""A loop guard for LangChain and LangGraph agents.

It counts consecutive calls of the same tool with the same canonical arguments, per agent, and
at thresholds adds an advisory reminder after the tool results. By default it never blocks,
delays or rewrites a call or a result: the model decides.

The faces load lazily: importing the handler does not import `langchain.agents`.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .canonical import canonicalize
from .config import BOOKKEEPING_TOOLS, ConfigError, ReminderConfig, ReminderFields
from .escalation import RepeatToolLoopError
from .reminder import Escalation, Reminder, RepeatToolReminderWarning, from_guard, is_reminder

if TYPE_CHECKING:
    from .callbacks import RepeatToolReminderCallbackHandler
    from .graph import RepeatToolReminderNode, RepeatToolReminderState
    from .messages import prepare_messages
    from .middleware import RepeatToolReminderMiddleware
    from .prebuilt import RepeatToolReminderAgentState
    from .stats import Stats, StatsSnapshot

try:
    __version__ = version("repeat-reminder-langchain")
except PackageNotFoundError:  # pragma: no cover - running from a source tree not installed
    __version__ = "0.0.0"

_LAZY = {
    "RepeatToolReminderAgentState": "prebuilt",
    "RepeatToolReminderCallbackHandler": "callbacks",
    "RepeatToolReminderMiddleware": "middleware",
    "RepeatToolReminderNode": "graph",
    "RepeatToolReminderState": "graph",
    "Stats": "stats",
    "StatsSnapshot": "stats",
    "prepare_messages": "messages",
}

__all__ = [
    "BOOKKEEPING_TOOLS",
    "ConfigError",
    "Escalation",
    "Reminder",
    "ReminderConfig",
    "ReminderFields",
    "RepeatToolLoopError",
    "RepeatToolReminderAgentState",
    "RepeatToolReminderCallbackHandler",
    "RepeatToolReminderMiddleware",
    "RepeatToolReminderNode",
    "RepeatToolReminderState",
    "RepeatToolReminderWarning",
    "Stats",
    "StatsSnapshot",
    "__version__",
    "canonicalize",
    "from_guard",
    "is_reminder",
    "prepare_messages",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
