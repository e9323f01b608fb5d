"""Execute the notebooks in place, so that they are stored with their outputs.

Usage: python notebooks/run.py [NOTEBOOK ...]   (every notebooks/*.ipynb when none is named)

Each notebook runs top to bottom in a fresh "python3" kernel whose working directory is
`notebooks/`, and is written back with its outputs. `make notebooks` runs this with
`REPEAT_REMINDER_SAVE_DOCS=1`, so that the quickstart also saves `docs/timeline.png`.

The kernels run without the providers' API keys (`API_KEYS` are removed from their
environment), so that the stored outputs are the offline ones, the same on every run: the cells
that call a real model print that they were skipped.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT = 120
"""Seconds one cell may run before the notebook fails."""
API_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The keys the notebooks' real-model cells look for; never passed to the kernels here."""


def execute(path: Path, cwd: Path | None = None) -> nbformat.NotebookNode:
    """Run the notebook at `path` in a fresh kernel and return it with its outputs.

    Args:
        path: The notebook file; it is read, not written.
        cwd: The kernel's working directory; the notebook's own folder when None.

    Raises:
        nbclient.exceptions.CellExecutionError: A cell raised.
        nbclient.exceptions.CellTimeoutError: A cell ran longer than `CELL_TIMEOUT`.

    """
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=CELL_TIMEOUT,
        record_timing=False,
        resources={"metadata": {"path": str(cwd or path.parent)}},
    )
    client.execute()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    return notebook


def merge_streams(outputs: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Outputs with each run of printed text joined into one, however the kernel sent it.

    The kernel flushes printed text in pieces whose boundaries vary from run to run; joined,
    a notebook run twice is stored the same.
    """
    merged: list[nbformat.NotebookNode] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            last is not None
            and output.output_type == last.output_type == "stream"
            and output.name == last.name
        ):
            last.text += output.text
        else:
            merged.append(output)
    return merged


def main(names: list[str]) -> None:
    """Execute the named notebooks (all of them when none) and write each back in place."""
    for variable in API_KEYS:
        os.environ.pop(variable, None)  # the kernels inherit this process's environment
    paths = [Path(name).resolve() for name in names] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        started = time.perf_counter()
        notebook = execute(path)
        nbformat.write(notebook, path)
        print(f"{path.name}: {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
