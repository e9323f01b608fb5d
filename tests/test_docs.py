"""The README's code runs as written and prints what it says; the demo does what the README says."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def test_the_readme_quickstart_runs_and_prints_what_it_promises(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocks = [b for b in python_blocks() if "graph.invoke(" in b]
    assert blocks, "the README lost its quickstart"
    for block in blocks:
        script = tmp_path / "quickstart.py"
        script.write_text(block, encoding="utf-8")
        runpy.run_path(str(script), run_name="__main__")
        promised = [line.removeprefix("# ") for line in block.splitlines() if line.startswith("# ")]
        printed = capsys.readouterr().out.splitlines()
        assert printed == promised[-len(printed) :]
        assert printed


def test_python_m_demo_runs_offline_from_a_fresh_interpreter() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "repeat_reminder_langchain", "demo"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert "REMINDER   [gentle · job_status × 3]" in result.stdout
    assert "With the guard:  6 tool calls · 2 reminders (1 gentle, 1 detailed)" in result.stdout


CONFIGURATION_ERRORS: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: ReminderConfig(thresholds=[]), ValueError, "thresholds must not be empty"),
    (
        lambda: ReminderConfig(thresholds=[1, 3]),
        ValueError,
        "thresholds: invalid threshold 1 — every threshold must be an integer >= 2",
    ),
    (
        lambda: ReminderConfig(thresholds=[3, 3]),
        ValueError,
        "thresholds must not contain duplicates, got [3, 3]",
    ),
    (
        lambda: ReminderConfig(thresholds="3,5"),
        ValueError,
        "thresholds must be a list of integers, got '3,5'",
    ),
    (
        lambda: ReminderConfig(repeat_every=0),
        ValueError,
        "invalid repeat_every 0 — must be an integer >= 1, or None",
    ),
    (
        lambda: ReminderConfig(ignore_arguments=["description"]),
        ValueError,
        "must map tool-name patterns to lists of argument patterns",
    ),
    (lambda: ReminderConfig(mode="quiet"), ValueError, "Input should be 'remind' or 'observe'"),
    (
        lambda: ReminderConfig(include="grep"),
        ValueError,
        "must be a list of tool-name patterns, got 'grep'",
    ),
    (
        lambda: ReminderConfig(exclude=["grep", 3]),
        ValueError,
        "every pattern must be a non-empty string, got 3",
    ),
    (
        lambda: ReminderConfig(arguments_preview_chars=0),
        ValueError,
        "invalid arguments_preview_chars 0 — must be an integer >= 1",
    ),
    (
        lambda: ReminderConfig(message_type="assistant"),
        ValueError,
        "Input should be 'system' or 'human'",
    ),
    (
        lambda: RepeatToolReminderMiddleware(treshold=[3]),
        TypeError,
        "unknown ReminderConfig field 'treshold'; did you mean 'thresholds'?",
    ),
    (lambda: ReminderConfig(treshold=[3]), ValueError, "Extra inputs are not permitted"),
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
]


@pytest.mark.parametrize(("build", "error", "message"), CONFIGURATION_ERRORS)
def test_the_readme_table_of_configuration_errors_is_what_happens(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        build()
    assert message in str(caught.value)
    assert f"`{error.__name__}`: {message}" in README.read_text(encoding="utf-8")
