"""A loop guard for LangChain and LangGraph agents.

It counts consecutive calls of the same tool with the same canonical arguments, per agent, and
at thresholds adds an advisory reminder after the tool results; it also reminds of the same
failure repeated, and a loop that outlasts its reminders is ended with the model's own answer
(the tenth call). A reminder never blocks, delays or rewrites a call or a result: the model
decides. `profile="seed"` is the original plugin's rule alone, advice only.

Which to use:

- `RepeatToolReminderMiddleware`: an agent of `langchain.agents.create_agent` (deepagents
  too), in `middleware=[...]`; its counts live in the checkpoint.
- `RepeatToolReminderNode()` and `RepeatToolReminderState`: your own `StateGraph`, the node
  after the tools node, its counts in the graph's state (`RepeatToolReminderAgentState` for
  `create_react_agent`'s `pre_model_hook`).
- `RepeatToolReminderCallbackHandler` and `RepeatToolReminderNode(handler)`: a graph whose
  state you keep as it is; the handler, in `config["callbacks"]`, keeps the counts.
- `ReminderConfig`: the settings all three take (as keywords, or `ReminderConfig.from_file`).
- `stop_reason(result)`: after a run, the loop the guard stopped, if any (`escalate_after`).
- `from_guard(message)`: whether the guard wrote a message; `prepare_messages`, reminders
  made safe for a provider you call yourself.
- The `repeat-reminder` command (`python -m repeat_reminder_langchain`): the demo, the audit
  of saved conversations and checkpointer threads, the lab.

The faces load lazily: importing the handler does not import `langchain.agents`.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from ._canonical import canonicalize
from ._config import BOOKKEEPING_TOOLS, TOOL_ERRORS, ConfigError, ReminderConfig, ReminderFields
from ._conversation import from_guard
from ._escalation import RepeatToolLoopError
from ._log import RepeatToolReminderWarning
from ._normalise import normalise_result
from ._reminder import Escalation, Reminder

if TYPE_CHECKING:
    from ._callbacks import RepeatToolReminderCallbackHandler
    from ._graph import RepeatToolReminderNode, RepeatToolReminderState
    from ._messages import prepare_messages, stop_reason
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
    "stop_reason": "_messages",
}

__all__ = [
    "BOOKKEEPING_TOOLS",
    "TOOL_ERRORS",
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
    "normalise_result",
    "prepare_messages",
    "stop_reason",
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
