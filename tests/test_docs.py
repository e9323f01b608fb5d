"""The README's code runs as written and prints what it says; the demo does what the README says."""

from __future__ import annotations

import ast
import json
import re
import runpy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from repeat_reminder_langchain import (
    ConfigError,
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)

README = Path(__file__).resolve().parent.parent / "README.md"


EXCERPT = "# Excerpt"  # how a block that does not run on its own says so, to the reader too


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def runnable_blocks() -> list[str]:
    return [block for block in python_blocks() if not block.lstrip().startswith(EXCERPT)]


def test_every_python_block_runs_or_says_it_is_an_excerpt() -> None:
    blocks = python_blocks()
    excerpts = [block for block in blocks if block.lstrip().startswith(EXCERPT)]
    assert len(runnable_blocks()) >= 3, "the README lost its runnable examples"
    for block in excerpts:  # an excerpt says what it needs, on its first line
        first = block.lstrip().splitlines()[0]
        assert first.startswith(f"{EXCERPT}: ") and len(first) > len(EXCERPT) + 10, first


@pytest.mark.parametrize("index", range(len(runnable_blocks())))
def test_each_runnable_block_runs_and_prints_what_it_promises(
    index: int, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    block = runnable_blocks()[index]
    script = tmp_path / f"readme_{index}.py"
    script.write_text(block, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    promised = [line.removeprefix("# ") for line in block.splitlines() if line.startswith("# ")]
    printed = capsys.readouterr().out.splitlines()
    assert printed, "a runnable example shows what it does"
    assert printed == promised[-len(printed) :]


SERVER_EXAMPLE = README.parent / "examples" / "langgraph_server"


def test_the_server_wiring_shown_is_the_one_the_server_test_serves() -> None:
    text = README.read_text(encoding="utf-8")
    shown = re.findall(r"```json\n(.*?)```", text, re.DOTALL)
    served = (SERVER_EXAMPLE / "langgraph.json").read_text(encoding="utf-8")
    assert json.loads(served) in [json.loads(block) for block in shown]
    source = (SERVER_EXAMPLE / "agents.py").read_text(encoding="utf-8")
    (excerpt,) = [b for b in python_blocks() if "examples/langgraph_server/agents.py" in b]
    # What the excerpt imports, the example imports; every other statement is the example's own.
    assert _imports(excerpt) <= _imports(source)
    for node in ast.parse(excerpt).body:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            assert ast.get_source_segment(excerpt, node) in source, ast.dump(node)[:80]


def _imports(code: str) -> set[tuple[str | None, str]]:
    return {
        (getattr(node, "module", None), alias.name)
        for node in ast.parse(code).body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }


def test_python_m_demo_runs_offline_from_a_fresh_interpreter() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "repeat_reminder_langchain", "demo"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    shown = re.search(r"```text\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert shown is not None, "the README lost the demo's transcript"
    lines = [line for line in shown[1].splitlines() if line.strip() != "..."]
    assert len(lines) > 10
    printed = result.stdout.splitlines()
    assert [line for line in lines if line not in printed] == []  # the README shows what it prints


CONFIGURATION_ERRORS: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: ReminderConfig(thresholds=[]), ConfigError, "thresholds: must not be empty"),
    (
        lambda: ReminderConfig(thresholds=[1, 3]),
        ConfigError,
        "thresholds: invalid threshold 1 — every threshold must be an integer >= 2",
    ),
    (
        lambda: ReminderConfig(thresholds=[3, 3]),
        ConfigError,
        "thresholds: must not contain duplicates, got [3, 3]",
    ),
    (
        lambda: ReminderConfig(thresholds="3,5"),
        ConfigError,
        "thresholds: must be a list of integers, got '3,5'",
    ),
    (
        lambda: ReminderConfig(repeat_every=0),
        ConfigError,
        "repeat_every: must be an integer >= 1, or None, got 0",
    ),
    (
        lambda: ReminderConfig(ignore_arguments=["description"]),
        ConfigError,
        "ignore_arguments: must map tool-name patterns to lists of argument patterns",
    ),
    (
        lambda: ReminderConfig(ignore_arguments={"run": ["options."]}),
        ConfigError,
        "ignore_arguments: invalid argument pattern 'options.' — every dotted segment must be "
        "non-empty",
    ),
    (
        lambda: ReminderConfig(include="grep"),
        ConfigError,
        "include: must be a list of tool-name patterns, got 'grep'",
    ),
    (
        lambda: ReminderConfig(exclude=["grep", 3]),
        ConfigError,
        "exclude: every pattern must be a non-empty string, got 3",
    ),
    (
        lambda: ReminderConfig(arguments_preview_chars=0),
        ConfigError,
        "arguments_preview_chars: must be an integer >= 1, got 0",
    ),
    (
        lambda: ReminderConfig(message_type="assistant"),
        ConfigError,
        "message_type: Input should be 'system' or 'human'",
    ),
    (
        lambda: ReminderConfig(mode="quiet"),
        ConfigError,
        "mode: Input should be 'remind' or 'observe'",
    ),
    (
        lambda: ReminderConfig(detect=["stal"]),
        ConfigError,
        "detect: unknown detector 'stal'; did you mean 'stale'?",
    ),
    (
        lambda: ReminderConfig(error_pattern="("),
        ConfigError,
        "error_pattern: invalid regular expression '('",
    ),
    (
        lambda: ReminderConfig(escalate_after=8),
        ConfigError,
        "escalate_after: must be greater than every threshold of the repeat detector (the last "
        "is 8), got 8",
    ),
    (
        lambda: ReminderConfig(exit_behavior="error"),
        ConfigError,
        "exit_behavior: applies only with escalate_after set",
    ),
    (
        lambda: RepeatToolReminderMiddleware(treshold=[3]),
        TypeError,
        "unknown ReminderConfig field 'treshold'; did you mean 'thresholds'?",
    ),
    (
        lambda: RepeatToolReminderCallbackHandler(ReminderConfig(), thresholds=[2]),
        TypeError,
        "pass either a ReminderConfig or its fields as keywords, not both",
    ),
    (
        lambda: RepeatToolReminderMiddleware({"thresholds": [3]}),
        TypeError,
        "config must be a ReminderConfig, got dict",
    ),
    (
        lambda: RepeatToolReminderNode(RepeatToolReminderCallbackHandler(), thresholds=[2]),
        TypeError,
        "the handler has its own configuration; pass it there",
    ),
    (
        lambda: RepeatToolReminderNode(ReminderConfig()),
        TypeError,
        "RepeatToolReminderNode takes a RepeatToolReminderCallbackHandler or none, got "
        "ReminderConfig",
    ),
    (
        lambda: RepeatToolReminderNode(escalate_after=9, exit_behavior="block"),
        TypeError,
        'exit_behavior="block" needs RepeatToolReminderMiddleware: only middleware sees a call '
        "before it runs",
    ),
]


@pytest.mark.parametrize(("build", "error", "message"), CONFIGURATION_ERRORS)
def test_the_readme_table_of_configuration_errors_is_what_happens(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        build()
    assert message in str(caught.value)
    assert f"`{error.__name__}`: {message}" in README.read_text(encoding="utf-8")
