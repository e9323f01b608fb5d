"""0.2.0's module paths, kept until 0.6.0: each of their names is found where it lives now.

0.2.0 published its implementation modules (`repeat_reminder_langchain.config`, `.events`,
`.tooling.logs`, ...); 0.4.0 made them private. A name imported from one of those paths still
works until 0.6.0: it is today's object, and the import warns with what to import instead
(`LangChainDeprecationWarning`, a `DeprecationWarning` that langchain-core shows by default). A
name that no longer exists raises `ImportError`, saying what replaced it and where the migration
guide is. `MOVED` is the table the guide (docs/migration.md) prints.

Each old module stays a file of its own (six lines calling `moved`), not one made on import by
a finder here: a type checker and an editor find modules as files, and a program's old import
is to pass its type check, as it runs, until the path is removed.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core._api import LangChainDeprecationWarning

PACKAGE, DISTRIBUTION = "repeat_reminder_langchain", "repeat-reminder-langchain"
SINCE, REMOVAL = "0.4.0", "0.6.0"


def guide() -> Path:
    """The migration guide on this machine, where its user can open it.

    A wheel carries it in the package (pyproject.toml's `force-include`); a checkout, and an
    editable install of one, in docs/. The project has no public address to give instead.
    """
    here = Path(__file__).resolve().parent
    return (
        here / "migration.md"
        if (here / "migration.md").is_file()
        else here.parent / "docs/migration.md"
    )


class Now(NamedTuple):
    """Where a name of 0.2.0 lives now, and what a user imports or does instead.

    Attributes:
        where: `module:name`, the module relative to the package (`""`: the package itself);
            None: the name is gone.
        instead: For a name that is no public one any more, what to do in its place, as a
            clause that completes "It is internal; ..." or "... was removed: ..." ("use X
            instead", "X does this now"), or None when there is nothing. A public name is its
            own replacement.
    """

    where: str | None
    instead: str | None = None

    @property
    def public(self) -> bool:
        return self.where is not None and not any(
            part.startswith("_") for part in self.where.replace(":", ".").split(".")
        )


def _at(module: str, *names: str, instead: str | None = None) -> dict[str, Now]:
    """`names`, each under its own name in `module` (`""`: the package)."""
    return {name: Now(f"{module}:{name}", instead) for name in names}


def _gone(*names: str, instead: str | None) -> dict[str, Now]:
    return {name: Now(None, instead) for name in names}


_REPLAY = "use `repeat_reminder_langchain.replay.replay` instead, which counts a whole conversation"
_EVENTS = "read the event's dict instead, as the observing guide describes it"
_FROM_GUARD = "use `repeat_reminder_langchain.from_guard` instead"
_DETECTORS = (
    "use `repeat_reminder_langchain.tooling.audit.detectors()` instead, which names every detector"
)

# Each of 0.2.0's public modules (relative to the package; "" is the package) and what became
# of every name of its `__all__`.
MOVED: dict[str, dict[str, Now]] = {
    "": _at("_conversation", "is_reminder", instead=_FROM_GUARD),
    "callbacks": _at("", "RepeatToolReminderCallbackHandler"),
    "canonical": {**_at("", "canonicalize"), **_at("_canonical", "digest")},
    "config": {
        **_at("", "ConfigError", "ReminderConfig", "ReminderFields"),
        **_at("_config", "resolve_config", instead="use `ReminderConfig(**fields)` instead"),
    },
    "conversation": {
        **_at("_conversation", "is_user_message", "read_messages", "read_state"),
        **_at("_counter", "Turn"),
        **_gone("continues", "latest_turn", "predict_escalation", instead=None),
        **_gone("tally_conversation", instead=_REPLAY),
    },
    "escalation": {
        **_at("", "RepeatToolLoopError"),
        **_at("_escalation", "InterruptRequest", "interrupt_request", "read_answer"),
    },
    "events": {
        **_at(
            "_events",
            "REMINDER_EVENT",
            instead='use the event name `"repeat_tool_reminder"` instead',
        ),
        **_at(
            "_events",
            "ESCALATION_EVENT",
            instead='use the event name `"repeat_tool_escalation"` instead',
        ),
        **_at("_events", "Delivery", "EscalationEvent", "ReminderEvent", instead=_EVENTS),
        **_at("_events", "escalation_event", "reminder_event", "report"),
        **_at("_guard", "current_run_config"),
        **_gone("areport", instead=None),
    },
    "graph": _at("", "RepeatToolReminderNode", "RepeatToolReminderState"),
    "messages": {
        **_at("", "prepare_messages"),
        **_at("_messages", "as_user_turn", "blocked_result", "escalation_message"),
        **_at("_messages", "keeps_system_messages", "reminder_message"),
        **_gone(
            "reminder_messages",
            instead="the guard now writes all the reminders of a turn as one message",
        ),
    },
    "middleware": {
        **_at("", "RepeatToolReminderMiddleware"),
        **_at("_middleware", "RepeatToolReminderMiddlewareState"),
    },
    "policy": {
        **_at("_policy", "POLICY_KEY", instead='use the metadata key `"repeat_reminder"` instead'),
        **_at("_policy", "Rules", "ToolPolicies", "ToolPolicy", "parse_tool_policy"),
    },
    "prebuilt": _at("", "RepeatToolReminderAgentState"),
    "reminder": {
        **_at("", "Escalation", "Reminder"),
        **_at("_conversation", "is_reminder", instead=_FROM_GUARD),
        **_at(
            "_log",
            "LOGGER_NAME",
            instead='use the logger name `"repeat_reminder_langchain"` instead',
        ),
        **_at("_reminder", "Level", "ReminderTag", "preview"),
        **_at("_conversation", "SOURCE"),
        **_at("_messages", "wrap"),
        **_at("_exits", "ExitBehavior"),
        **_gone("DETECTORS", "Detector", instead=_DETECTORS),
    },
    "stats": _at("", "Stats", "StatsSnapshot"),
    "steps": {
        **_at("_guard", "StateStore"),
        **_gone("Action", "Asked", "act", instead=None),
    },
    "streaks": {
        **_at("replay", "Call", "CallTrace"),
        **_at("_metrics", "Tally"),
        **_at("_canonical", "result_text"),
        **_at("_detectors.stale", "STALE_MEMORY"),
        **_gone("Streaks", "StreaksData", "count_turn", instead=_REPLAY),
    },
    "tooling.cli": _at(
        "tooling._cli",
        "main",
        instead="use the `repeat-reminder` command instead",
    ),
    "tooling.demo": {
        "RetestingModel": Now("tooling.demo:_RetestingModel"),
        "format_stats": Now("tooling.demo:_format_stats"),
        "run_command": Now("tooling.demo:_run_command"),
        **_gone("SCENARIOS", instead="use the demo's `--scenario` option instead"),
    },
    "tooling.logs": {
        **_at("tooling.audit", "Conversation"),
        **_at("tooling._logs", "ID_KEYS", "LogError", "LogReader", "to_messages"),
    },
    "tooling.progress": _at("tooling._progress", "LARGE", "ProgressBar"),
    "tooling.report": {
        **_at("tooling._report", "SHOWN"),
        **_at("tooling._report", "report_html", instead="use the audit's `--html` option instead"),
    },
    "tooling.transcript": {
        **_at("replay", "Replayed", "replay"),
        "Row": Now("tooling.transcript:_Row"),
        "transcript_rows": Now("tooling.transcript:_transcript_rows"),
    },
    "tooling.viz": {
        "plot_steps": Now(
            "tooling.viz:_plot_steps",
            "use `repeat_reminder_langchain.tooling.viz.plot_timeline` instead",
        )
    },
}


def moved(module: str, *, stacklevel: int = 2) -> Callable[[str], Any]:
    """The `__getattr__` of one of 0.2.0's modules: its names as they are now, with a warning.

    `stacklevel` attributes the warning to the line that imported the name (3 when called by
    another `__getattr__`).
    """
    names = MOVED[module.removeprefix(PACKAGE).lstrip(".")]

    def __getattr__(name: str) -> Any:
        now = names.get(name)
        if now is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        old = f"{module}.{name}"
        if now.where is None:
            # An ImportError, not an AttributeError: `from m import x` would replace the latter
            # with "cannot import name", losing the way out.
            raise ImportError(
                f"`{old}` was removed in {DISTRIBUTION} {SINCE}: "
                + f"{now.instead or 'it has no replacement'}. See the migration guide: {guide()}",
                name=module,
            )
        where, _, attribute = now.where.partition(":")
        home = ".".join(filter(None, (PACKAGE, where)))
        if now.public:
            instead = f"Use `from {home} import {attribute}` instead."
        elif now.instead:
            instead = f"It is internal; {now.instead}."
        else:
            instead = "It is internal, with no public replacement."
        warnings.warn(
            f"`{old}` was deprecated in {DISTRIBUTION} {SINCE} and will be removed in {REMOVAL}."
            f" {instead}",
            LangChainDeprecationWarning,
            stacklevel=stacklevel,
        )
        return getattr(importlib.import_module(home), attribute)

    return __getattr__
