"""A detector added the way CONTRIBUTING.md shows: one class, one registry entry, its tests.

It has thresholds of its own and an option of its own, both reaching it by its name
(`detectors={"same_tool": {...}}`), and says one thing beside the count (`variants`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from pydantic import model_validator

import repeat_reminder_langchain
from repeat_reminder_langchain import ConfigError, ReminderConfig, RepeatToolReminderMiddleware
from repeat_reminder_langchain._detectors import DETECTORS, Detector, Seen, Settings, Words

from ..helpers import ask, assert_adjacent, call, probe, reminders, scripted, turn


class SameToolSettings(Settings):
    thresholds: tuple[int, ...] = (4,)  # its own default, over every detector's (3)
    count_failures: bool = True


@dataclass(slots=True)
class SameToolMemory:
    tool: str = ""
    keys: list[str] = field(default_factory=list)


class SameTool(Detector):
    """The same tool again and again, whatever the arguments."""

    name = "same_tool"
    settings = SameToolSettings
    memory = SameToolMemory
    says: ClassVar[Mapping[str, Any]] = {"variants": 2}  # what `details` gives, with a sample
    words = Words(
        gentle="You have called `{tool}` {count} times in a row ({variants} argument sets).",
        detailed="- tool: {tool}\n- calls_in_a_row: {count}\nTry another tool, or finish.",
        stopped="the same tool",
    )

    def see(self, memory: SameToolMemory, seen: Seen) -> int | None:
        if seen.failed and not self.options.count_failures:
            return None  # left out: it neither counts nor breaks the run
        if memory.tool != seen.tool:
            memory.tool, memory.keys = seen.tool, []
        memory.keys.append(seen.key[:8])
        return len(memory.keys)

    def details(self, memory: SameToolMemory, cut: Callable[[str], str]) -> Mapping[str, Any]:
        return {"variants": len(set(memory.keys))}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(DETECTORS, SameTool.name, SameTool)  # last: the lowest precedence


def run(guard: RepeatToolReminderMiddleware, queries: str) -> list[Any]:
    script = [turn(call("probe", {"q": q})) for q in queries]
    messages = create_agent(scripted(script), tools=[probe], middleware=[guard]).invoke(ask())
    assert_adjacent(messages["messages"])
    return list(messages["messages"])


def test_a_registered_detector_is_configured_by_its_name(registered: None) -> None:
    guard = RepeatToolReminderMiddleware(
        detect=["same_tool"], detectors={"same_tool": {"thresholds": [2, 3]}}
    )
    messages = run(guard, "abab")

    assert reminders(messages) == [("gentle", "probe", 2), ("detailed", "probe", 3)]
    gentle = next(m for m in messages if m.name == "repeat_tool_reminder")
    assert "You have called `probe` 2 times in a row (2 argument sets)." in gentle.text
    assert guard.stats.snapshot()["detectors"] == {"same_tool": {"delivered": 2, "undelivered": 0}}
    assert guard.config.detector_settings("same_tool") == SameToolSettings(
        thresholds=(2, 3), count_failures=True
    )


def test_a_registered_detector_keeps_its_own_defaults(registered: None) -> None:
    messages = run(RepeatToolReminderMiddleware(detect=["same_tool"]), "abcab")
    assert reminders(messages) == [("gentle", "probe", 4)]


class Urgent(Detector):
    """A call whose arguments say "urgent", whatever the run: it keeps no memory."""

    name = "urgent"
    reads = "calls"
    words = Words(gentle="`{tool}` is urgent.", detailed="`{tool}`, urgent.", stopped="urgency")

    def see(self, memory: None, seen: Seen) -> int | None:
        return 3 if '"urgent"' in seen.arguments else None


def test_a_detector_that_keeps_no_memory_is_shown_a_call_below_every_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only a detector that counts the run (`by_run`, repeat's) has nothing to say below a
    # tool's first threshold; another that keeps no memory is shown every call all the same.
    monkeypatch.setitem(DETECTORS, Urgent.name, Urgent)
    guard = RepeatToolReminderMiddleware(detect=["repeat", "urgent"])
    script = [turn(call("probe", {"q": "a"})), turn(call("probe", {"q": "urgent"}))]
    messages = create_agent(scripted(script), tools=[probe], middleware=[guard]).invoke(ask())
    assert_adjacent(messages["messages"])

    assert reminders(messages["messages"]) == [("gentle", "probe", 3)]


class Shown(Detector):
    """Counts nothing: keeps each call as a detector is shown it."""

    name = "shown"
    words = Words(gentle="`{tool}`.", detailed="`{tool}`.", stopped="nothing")
    calls: ClassVar[list[Seen]] = []

    def see(self, memory: None, seen: Seen) -> int | None:
        self.calls.append(seen)
        return None


def test_a_detector_is_shown_each_call_with_its_result_as_the_tool_returned_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(DETECTORS, Shown.name, Shown)
    monkeypatch.setattr(Shown, "calls", [])
    run(RepeatToolReminderMiddleware(detect=["shown"]), "aa")

    assert [(s.tool, s.streak, s.result, s.failed, s.text, s.arguments) for s in Shown.calls] == [
        ("probe", 1, "probed a", False, "probed a", '{"q":"a"}'),
        ("probe", 2, "probed a", False, "probed a", '{"q":"a"}'),
    ]


def test_a_registered_detectors_own_option_reaches_it(registered: None) -> None:
    # Every result fails by the pattern; the option leaves failures out of the count.
    settings = {"detect": ["same_tool"], "error_pattern": "^probed"}
    counted = RepeatToolReminderMiddleware(**settings)
    assert reminders(run(counted, "abcd")) == [("gentle", "probe", 4)]
    left_out = RepeatToolReminderMiddleware(
        **settings, detectors={"same_tool": {"count_failures": False}}
    )
    assert reminders(run(left_out, "abcd")) == []


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            {"detectors": {"same_tool": {"count_failures": "perhaps"}}},
            "detectors: same_tool.count_failures: Input should be a valid boolean, unable to "
            "interpret input, got 'perhaps'",
        ),
        (
            {"detectors": {"same_tool": {"count_failure": False}}},
            "detectors: same_tool: unknown setting 'count_failure'; did you mean 'count_failures'?",
        ),
        (
            {"detectors": {"same_tool": {"thresholds": [1]}}},
            "detectors: same_tool.thresholds: invalid threshold 1",
        ),
        (
            {"detectors": {"same_tool": {"thresholds": [3, 6]}}, "escalate_after": 5},
            "pass detectors.same_tool.thresholds=[3] (reminders before the stop)",
        ),
        (
            {"words": {"same_tool": {"gentle": "{tool}: {error}"}}},
            "words: same_tool.gentle: unknown field {error}; the fields are tool, count, level, "
            "detector, arguments, variants",
        ),
    ],
)
def test_a_registered_detectors_settings_are_checked_at_construction(
    registered: None, fields: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(problem)):
        RepeatToolReminderMiddleware(detect=["same_tool"], **fields)


class TogetherSettings(SameToolSettings):
    @model_validator(mode="after")
    def _together(self) -> TogetherSettings:
        if not self.count_failures and self.thresholds == (4,):
            raise ValueError("count_failures=False needs thresholds of its own")
        return self


class SameToolTogether(SameTool):
    settings = TogetherSettings


def test_a_problem_of_a_detectors_settings_together_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A model-level validator's problem names no setting: said of the detector's settings.
    monkeypatch.setitem(DETECTORS, SameTool.name, SameToolTogether)
    problem = "detectors: same_tool: count_failures=False needs thresholds of its own"
    with pytest.raises(ConfigError, match=re.escape(problem)):
        ReminderConfig(detect=["same_tool"], detectors={"same_tool": {"count_failures": False}})


class SameToolCalls(SameTool):
    reads = "calls"  # it counts a call before the call runs: `block` can refuse it


def test_block_refuses_a_call_in_the_words_of_the_detector_that_reached_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(DETECTORS, SameTool.name, SameToolCalls)
    # Last in precedence, after a detector that reads calls and one that needs the result: a
    # call refused before it runs is counted by every detector that reads calls, in order.
    guard = RepeatToolReminderMiddleware(
        detect=["repeat", "stale", "same_tool"],
        thresholds=[3],
        escalate_after=5,
        exit_behavior="block",
    )
    messages = run(guard, "abcdef")

    refused = [m for m in messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert [m.text for m in refused][:1] == [
        "Not run: `probe` is looping (the same tool 5 times), and one more call will not "
        "change that. Choose a different action or different arguments, or finish with what "
        "you have."
    ]


def test_an_unregistered_detector_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown detector 'same_tool'"):
        RepeatToolReminderMiddleware(detect=["same_tool"])
    with pytest.raises(ConfigError, match="detectors: unknown detector 'same_tool'"):
        ReminderConfig(detectors={"same_tool": {}})


class PatternSettings(SameToolSettings):
    pattern: str = "(?!)"


class SameFailingTool(SameTool):
    """The same tool failing again and again: its results match its own pattern."""

    name = "same_failing_tool"
    settings = PatternSettings

    def __init__(self, settings: PatternSettings) -> None:
        # What a detector needs of its settings it compiles once, when the guard is built.
        super().__init__(settings)
        self.pattern = re.compile(settings.pattern)

    def see(self, memory: SameToolMemory, seen: Seen) -> int | None:
        if not self.pattern.search(seen.text):
            return None  # no failure: nothing to count
        return super().see(memory, seen)


def test_a_registered_detector_compiles_its_own_settings_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(DETECTORS, SameFailingTool.name, SameFailingTool)
    guard = RepeatToolReminderMiddleware(
        detect=["same_failing_tool"],
        detectors={"same_failing_tool": {"thresholds": [3], "pattern": "^probed [ab]"}},
    )
    # `c` did not match the pattern: the count went on from two to three at the last.
    assert reminders(run(guard, "abca")) == [("gentle", "probe", 3)]


def test_options_are_read_as_the_settings_model_declares_them(registered: None) -> None:
    # A list where a tuple is declared, "yes" where a bool is: as pydantic reads a model.
    config = ReminderConfig(
        detect=["same_tool"],
        detectors={"same_tool": {"thresholds": [5, 2], "count_failures": "no"}},
    )
    assert config.detector_settings("same_tool") == SameToolSettings(
        thresholds=(2, 5), count_failures=False
    )


# -- a detector shipped in the package: its module and its registry entry, nothing else --------

_SHIPPED = '''\
"""`same_tool`: one tool called again and again, whatever the arguments."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import StrictBool

from ._detector import Detector, Seen, Settings, Words


class _Settings(Settings):
    thresholds: tuple[int, ...] = (4,)
    count_failures: StrictBool = True


@dataclass(slots=True)
class _Run:
    tool: str = ""
    calls: int = 0


class SameTool(Detector):
    name = "same_tool"
    counts = "calls of one tool in a row"
    settings = _Settings
    memory = _Run
    words = Words(
        gentle="`{tool}` again, {count} times in a row.",
        detailed="- tool: {tool}\\n- calls_in_a_row: {count}",
        stopped="the same tool",
    )

    def see(self, memory: _Run, seen: Seen) -> int | None:
        if seen.failed and not self.options.count_failures:
            return None
        memory.calls = memory.calls + 1 if memory.tool == seen.tool else 1
        memory.tool = seen.tool
        return memory.calls
'''

_RUN = """\
import json, sys
from pathlib import Path

from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

import repeat_reminder_langchain
from repeat_reminder_langchain import ReminderConfig, RepeatToolReminderMiddleware
from repeat_reminder_langchain._config import short_forms
from tests.helpers import ask, assert_adjacent, call, probe, reminders, scripted, turn

settings = Path(sys.argv[1])
settings.write_text(
    'detect = ["repeat", "same_tool"]\\n[detectors.same_tool]\\nthresholds = [2, 3]\\n'
)
guard = RepeatToolReminderMiddleware(config=ReminderConfig.from_file(settings))
agent = create_agent(
    scripted([turn(call("probe", {"q": q})) for q in "abc"]),
    tools=[probe],
    middleware=[guard],
    checkpointer=InMemorySaver(),
)
thread = {"configurable": {"thread_id": "t"}}
messages = agent.invoke(ask(), thread)["messages"]
assert_adjacent(messages)
record = agent.get_state(thread).values["repeat_tool_reminder"][guard.name]
print(json.dumps({
    "package": repeat_reminder_langchain.__file__,
    "reminders": reminders(messages),
    "memory": record["detectors"]["same_tool"],
    "short": short_forms().get("same_tool_thresholds"),
    "default": ReminderConfig(detect=["same_tool"]).detector_thresholds("same_tool"),
}))
"""


# What a new detector must not break, run on the copy: every test that reads the registry — the
# detectors' (this file aside: its own detector is the copy's), the configuration's, the words',
# the labelled corpus's, the command line's, the audit's and the suggestion's — and what the
# documentation says of the detectors and the fields, its examples run.
_SUITE = [
    "tests/detectors",
    "--ignore=tests/detectors/test_example.py",
    "tests/test_config.py",
    "tests/test_words.py",
    "tests/test_labels.py",
    "tests/tooling/test_cli.py",
    "tests/tooling/test_audit.py",
    "tests/tooling/test_suggest.py",
    *(
        f"tests/test_docs.py::test_{name}"
        for name in (
            "the_detectors_the_docs_name_are_the_shipped_ones_in_precedence_order",
            "each_settings_table_is_the_fields_as_declared",
            "the_table_of_configuration_errors_is_what_happens",
            "each_runnable_block_runs_and_prints_what_it_promises",
        )
    ),
]


def test_a_detector_shipped_in_the_package_is_its_module_and_a_registry_entry(
    tmp_path: Path,
) -> None:
    root = Path(__file__).parents[2]
    site = tmp_path / "site"
    shutil.copytree(root / "tests", site / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "docs", site / "docs")
    for name in ("README.md", "CONTRIBUTING.md", "pyproject.toml"):
        shutil.copy(root / name, site / name)
    package = Path(repeat_reminder_langchain.__file__).parent
    copy = site / "repeat_reminder_langchain"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "_detectors" / "same_tool.py").write_text(_SHIPPED)
    registry = copy / "_detectors" / "__init__.py"
    text = registry.read_text()
    text = text.replace("from .stale import", "from .same_tool import SameTool\nfrom .stale import")
    text = text.replace("Cycle, SameOutput)", "Cycle, SameOutput, SameTool)")
    assert text.count("SameTool") == 2  # the import, and the entry: nothing else
    registry.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", _RUN, str(tmp_path / "settings.toml")],
        env=env,
        cwd=tmp_path,  # not the checkout: `python -c` imports from where it runs first
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["package"] == str(copy / "__init__.py")
    # Configured by its name from the file; its memory kept in the checkpoint.
    assert found["reminders"] == [["gentle", "probe", 2], ["detailed", "probe", 3]]
    assert found["memory"] == {"tool": "probe", "calls": 3}
    # Its thresholds' short form and its default come from its declarations alone.
    assert found["short"] == "same_tool"
    assert found["default"] == [4]
    # And nothing else had to change: the tests that read the registry pass on the copy.
    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_SUITE],
        env=env,
        cwd=site,
        capture_output=True,
        text=True,
        check=False,
    )
    assert suite.returncode == 0, suite.stdout[-3000:]
