"""The README's code runs as written and prints what it says; the demo does what the README says."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

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
    assert "With the guard: 6 tool calls · 2 reminders (1 gentle, 1 detailed)" in result.stdout
