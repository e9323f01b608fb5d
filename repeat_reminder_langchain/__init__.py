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

from ._canonical import canonicalize
from ._config import BOOKKEEPING_TOOLS, ConfigError, ReminderConfig, ReminderFields
from ._escalation import RepeatToolLoopError
from ._reminder import Escalation, Reminder, RepeatToolReminderWarning, from_guard

if TYPE_CHECKING:
    from ._callbacks import RepeatToolReminderCallbackHandler
    from ._graph import RepeatToolReminderNode, RepeatToolReminderState
    from ._messages import prepare_messages
    from ._middleware import RepeatToolReminderMiddleware
    from ._prebuilt import RepeatToolReminderAgentState
    from ._stats import Stats, StatsSnapshot

try:
    __version__ = version("repeat-reminder-langchain")
except PackageNotFoundError:  # pragma: no cover - running from a source tree not installed
    __version__ = "0.0.0"

_LAZY = {
    "RepeatToolReminderAgentState": "_prebuilt",
    "RepeatToolReminderCallbackHandler": "_callbacks",
    "RepeatToolReminderMiddleware": "_middleware",
    "RepeatToolReminderNode": "_graph",
    "RepeatToolReminderState": "_graph",
    "Stats": "_stats",
    "StatsSnapshot": "_stats",
    "prepare_messages": "_messages",
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
    "prepare_messages",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:  # a name 0.2.0 exported, with its warning; or AttributeError
        return importlib.import_module("._moved", __name__).moved(__name__, stacklevel=3)(name)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
