"""The notebooks run top to bottom offline, and are stored with their outputs."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest

# Optional peers (the notebooks extra): `make test-lowest` runs without them and skips this module.
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")  # notebooks/run.py runs them with it

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NAMES = sorted(path.name for path in NOTEBOOKS.glob("*.ipynb"))

# What each notebook must print when run offline: the guard really reminded (a guard that fails
# inside only logs, so a run without reminders would raise nothing).
PROMISED = {
    "01_quickstart.ipynb": [
        "without the guard: 13 tool calls · 0 reminders",
        "with the guard:    6 tool calls · 2 reminders (1 gentle, 1 detailed)",
        "docs/timeline.png not written",
    ],
    "02_create_agent.ipynb": [
        "exclude=['write_*']: 5 tool calls · 1 reminders (1 gentle, 0 detailed)",
        "… (+592 more chars)",
        "as stored:          ValueError: Received multiple non-consecutive system messages.",
        "user: tool_result + text",
    ],
    "03_subagents_and_persistence.ipynb": [
        "longest streak: search × 3",
        "process 2, step 5: calls: 5 · stored count: 5 · "
        "reminders: ['check_deploy × 3', 'check_deploy × 5'] · finished",
    ],
    "04_beyond_exact_repeats.ipynb": [
        "repeat_every=2: gentle at call 3, detailed at call 5, detailed at call 8, "
        "detailed at call 10, detailed at call 12",
        "ignore_arguments={'run_shell': ['description']}: gentle at call 3, detailed at call 5",
        '- arguments: {"command":"pytest tests/test_api.py"}\n',
        "progress='result': gentle at call 7, detailed at call 9",
        "would have sent:     {'tail_log': {'detailed': 1, 'gentle': 1}}",
        "repeat tool reminder sent: job_status × 5 (detailed, remind)",
        "'recovery_rate': 0.5}",
        "2 conversations · 19 tool calls · thresholds 2, 4",
    ],
}


def load_runner() -> ModuleType:
    """notebooks/run.py, loaded from its path (notebooks/ is no package)."""
    spec = importlib.util.spec_from_file_location("notebooks_run", NOTEBOOKS / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_notebooks() -> None:
    assert sorted(PROMISED) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_the_stored_notebook_has_its_outputs(name: str) -> None:
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]

    assert code
    assert all(cell.execution_count is not None for cell in code), "not run top to bottom"
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert sum(bool(cell.outputs) for cell in code) >= len(code) // 2
    outputs = [out for cell in code for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    shown = {kind for out in outputs for kind in out.get("data", {})}
    assert "text/html" in shown  # the transcript tables
    if name == "01_quickstart.ipynb":
        assert "image/png" in shown  # the timeline


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", NAMES)
def test_the_notebook_runs_offline_from_a_fresh_kernel(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("REPEAT_REMINDER_SAVE_DOCS", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    # A copy outside the repository: nothing the notebook writes lands in the working tree.
    copy = tmp_path / name
    shutil.copy(NOTEBOOKS / name, copy)
    picture = ROOT / "docs" / "timeline.png"
    before = sorted(os.listdir(NOTEBOOKS)), picture.exists() and picture.stat().st_mtime_ns

    notebook = load_runner().execute(copy, cwd=tmp_path)

    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code)
    printed = "".join(
        out.get("text", "") for cell in code for out in cell.outputs if out.output_type == "stream"
    )
    assert "Skipped: set OPENAI_API_KEY or ANTHROPIC_API_KEY" in printed
    for promise in PROMISED[name]:
        assert promise in printed
    after = sorted(os.listdir(NOTEBOOKS)), picture.exists() and picture.stat().st_mtime_ns
    assert after == before, "the notebook wrote into the repository"
