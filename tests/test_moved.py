"""A program written for 0.2.0 imports what it imported: today's object, and a warning that says
what to import instead; a name that is gone says what replaced it."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from langchain_core._api import LangChainDeprecationWarning

import repeat_reminder_langchain as package
from repeat_reminder_langchain._moved import MOVED, guide

ROOT = Path(__file__).parent.parent

# 0.2.0's public names: the `__all__` of each of its modules with no underscore in its path
# (`git show 0.2.0's commit 023ecdf`), relative to the package ("" is the package itself).
NAMES_0_2_0 = {
    "": "BOOKKEEPING_TOOLS ConfigError Escalation Reminder ReminderConfig ReminderFields "
    "RepeatToolLoopError RepeatToolReminderAgentState RepeatToolReminderCallbackHandler "
    "RepeatToolReminderMiddleware RepeatToolReminderNode RepeatToolReminderState Stats "
    "StatsSnapshot __version__ canonicalize is_reminder prepare_messages",
    "callbacks": "RepeatToolReminderCallbackHandler",
    "canonical": "canonicalize digest",
    "config": "ConfigError ReminderConfig ReminderFields resolve_config",
    "conversation": "Turn continues is_user_message latest_turn predict_escalation read_messages "
    "read_state tally_conversation",
    "escalation": "InterruptRequest RepeatToolLoopError interrupt_request read_answer",
    "events": "ESCALATION_EVENT REMINDER_EVENT Delivery EscalationEvent ReminderEvent areport "
    "current_run_config escalation_event reminder_event report",
    "graph": "RepeatToolReminderNode RepeatToolReminderState",
    "messages": "as_user_turn blocked_result escalation_message keeps_system_messages "
    "prepare_messages reminder_message reminder_messages",
    "middleware": "RepeatToolReminderMiddleware RepeatToolReminderMiddlewareState",
    "policy": "POLICY_KEY Rules ToolPolicies ToolPolicy parse_tool_policy",
    "prebuilt": "RepeatToolReminderAgentState",
    "reminder": "DETECTORS LOGGER_NAME SOURCE Detector Escalation ExitBehavior Level Reminder "
    "ReminderTag is_reminder preview wrap",
    "stats": "Stats StatsSnapshot",
    "steps": "Action Asked StateStore act",
    "streaks": "STALE_MEMORY Call CallTrace Streaks StreaksData Tally count_turn result_text",
    "tooling.audit": "Audit Auditor ConversationAudit Finding Revealed TimelineCall ToolAudit "
    "audit exceeds format_audit settings",
    "tooling.cli": "main",
    "tooling.demo": "QUESTION SCENARIOS PollingModel RetestingModel build_agent format_stats "
    "run_command run_demo",
    "tooling.logs": "ID_KEYS Conversation LogError LogReader to_messages",
    "tooling.progress": "LARGE ProgressBar",
    "tooling.report": "SHOWN report_html",
    "tooling.transcript": "Replayed Row Step Summary format_transcript replay steps summarize "
    "transcript_rows",
    "tooling.viz": "plot_steps plot_timeline transcript_html",
}
OLD = [(module, name) for module, names in NAMES_0_2_0.items() for name in names.split()]

# The names that are gone: machinery the redesigned core no longer has, and the demo's unused
# table. Each says what replaced it, if anything did (docs/migration.md lists them).
GONE = {
    "conversation": {"continues", "latest_turn", "predict_escalation", "tally_conversation"},
    "events": {"areport"},
    "messages": {"reminder_messages"},
    "reminder": {"DETECTORS", "Detector"},
    "steps": {"Action", "Asked", "act"},
    "streaks": {"Streaks", "StreaksData", "count_turn"},
    "tooling.demo": {"SCENARIOS"},
}
USE = re.compile(r"Use `from ([\w.]+) import (\w+)` instead\.$")


def _path(module: str) -> str:
    return ".".join(filter(None, (package.__name__, module)))


@pytest.mark.parametrize(("module", "name"), OLD, ids=[f"{m}.{n}".lstrip(".") for m, n in OLD])
def test_every_name_of_0_2_0_imports_or_says_what_replaced_it(module: str, name: str) -> None:
    old = importlib.import_module(_path(module))
    if name in GONE.get(module, ()):
        with pytest.raises(ImportError) as raised:
            exec(f"from {_path(module)} import {name}", {})
        assert f"`{_path(module)}.{name}` was removed in repeat-reminder-langchain 0.4.0" in str(
            raised.value
        )
        assert str(raised.value).endswith(f". See the migration guide: {guide()}")
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(old, name)
    if name in getattr(old, "__all__", ()):  # still public where it was: nothing to say
        assert caught == []
        return
    [warning] = caught
    assert issubclass(warning.category, DeprecationWarning)
    assert warning.filename == __file__  # attributed to the line that imported it
    said = str(warning.message)
    assert said.startswith(
        f"`{_path(module)}.{name}` was deprecated in repeat-reminder-langchain 0.4.0 and will "
        "be removed in 0.6.0. "
    )
    use = USE.search(said)
    if use is None:  # no public name any more: it says so, and the object is today's
        assert "It is internal" in said
        return
    # The import it names gives the very object the old one did.
    assert getattr(importlib.import_module(use[1]), use[2]) is value


def test_the_table_covers_0_2_0_and_nothing_else() -> None:
    # Every name of 0.2.0 that is not public where it was has its entry, and every entry is one.
    kept = {
        (module, name)
        for module, name in OLD
        if name in getattr(importlib.import_module(_path(module)), "__all__", ())
    }
    assert {(module, name) for module, names in MOVED.items() for name in names} == set(OLD) - kept
    gone = {
        (module, name)
        for module, names in MOVED.items()
        for name, now in names.items()
        if now.where is None
    }
    assert gone == {(module, name) for module, names in GONE.items() for name in names}


def test_a_0_2_0_import_warns_by_default() -> None:
    # The user sees the warning without a filter of their own: langchain-core shows its
    # deprecation warnings, and this is one.
    done = subprocess.run(
        [sys.executable, "-c", "from repeat_reminder_langchain.config import ReminderConfig"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stderr.splitlines() == [
        "<string>:1: LangChainDeprecationWarning: `repeat_reminder_langchain.config.ReminderConfig`"
        " was deprecated in repeat-reminder-langchain 0.4.0 and will be removed in 0.6.0. Use"
        " `from repeat_reminder_langchain import ReminderConfig` instead."
    ]


def _removed(module: str, name: str) -> str:
    """What importing a removed name of 0.2.0 raises."""
    with pytest.raises(ImportError) as raised:
        exec(f"from {_path(module)} import {name}", {})
    return str(raised.value)


def test_a_removed_name_says_in_a_sentence_what_replaced_it_and_where_the_guide_is() -> None:
    # Where its user can open it: in a checkout, docs/ (a wheel carries it: test_package).
    assert guide() == ROOT / "docs" / "migration.md"
    where = guide()
    said = _removed("messages", "reminder_messages")
    assert said == (
        "`repeat_reminder_langchain.messages.reminder_messages` was removed in "
        "repeat-reminder-langchain 0.4.0: the guard now writes all the reminders of a turn as "
        f"one message. See the migration guide: {where}"
    )
    with pytest.raises(ImportError) as raised:
        exec(f"from {_path('steps')} import act", {})
    assert raised.value.name == "repeat_reminder_langchain.steps"  # the module, as Python names it
    assert _removed("steps", "act") == (
        "`repeat_reminder_langchain.steps.act` was removed in repeat-reminder-langchain 0.4.0: "
        f"it has no replacement. See the migration guide: {where}"
    )
    # The guide shows that error as it is.
    text = (ROOT / "docs" / "migration.md").read_text(encoding="utf-8")
    shown = text.split("ImportError: ", 1)[1].split("```", 1)[0]
    wheel = "…/site-packages/repeat_reminder_langchain/migration.md"
    assert " ".join(shown.split()) == said.replace(str(where), wheel)


@pytest.mark.parametrize(
    ("module", "name", "said"),
    [
        ("", "is_reminder", "It is internal; use `repeat_reminder_langchain.from_guard` instead."),
        (
            "events",
            "REMINDER_EVENT",
            'It is internal; use the event name `"repeat_tool_reminder"` instead.',
        ),
        (
            "events",
            "Delivery",
            "It is internal; read the event's dict instead, as the observing guide describes it.",
        ),
        (
            "tooling.viz",
            "plot_steps",
            "It is internal; use `repeat_reminder_langchain.tooling.viz.plot_timeline` instead.",
        ),
    ],
)
def test_an_internal_name_says_in_a_sentence_what_to_use_instead(
    module: str, name: str, said: str
) -> None:
    with pytest.warns(LangChainDeprecationWarning, match="was deprecated") as caught:
        getattr(importlib.import_module(_path(module)), name)
    assert str(caught[0].message).endswith(f"will be removed in 0.6.0. {said}")


def test_every_replacement_is_a_clause_the_messages_complete() -> None:
    # Each `instead` completes "It is internal; ..." and "... was removed: ...": a lower-case
    # clause that says what to do or what does the job now, never a bare noun phrase.
    for names in MOVED.values():
        for now in names.values():
            if now.instead is not None:
                assert now.instead[0].islower() and not now.instead.endswith("."), now.instead
                assert now.instead.startswith(("use ", "read ", "the guard now ")), now.instead


def test_a_name_0_2_0_did_not_have_is_still_no_attribute() -> None:
    from repeat_reminder_langchain import config

    assert not hasattr(config, "Chain")
    assert not hasattr(package, "Chain")
    # Python's own words, as for any module: what a user's `getattr` or traceback shows.
    with pytest.raises(AttributeError) as missing:
        config.Chain  # noqa: B018 - the attribute read is the test
    assert (
        str(missing.value) == "module 'repeat_reminder_langchain.config' has no attribute 'Chain'"
    )
    with pytest.raises(ImportError, match="cannot import name 'Chain'"):
        exec("from repeat_reminder_langchain.tooling.demo import Chain", {})


def test_the_migration_guide_names_every_moved_name_and_its_replacement() -> None:
    text = (ROOT / "docs" / "migration.md").read_text(encoding="utf-8")
    rows = {row.split("|")[1].strip(): row for row in text.splitlines() if row.startswith("| `")}
    missing = []
    for module, names in MOVED.items():
        for name, now in names.items():
            row = rows.get(f"`{_path(module)}.{name}`", "")
            if now.public:
                where, _, attribute = (now.where or "").partition(":")
                wanted = f"`{'.'.join(filter(None, (_path(where), attribute)))}`"
            else:
                wanted = now.instead or "—"
            if wanted not in row:
                missing.append((f"{module}.{name}", wanted))
    assert missing == []
