"""The notebooks run top to bottom offline, and are stored with their outputs."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
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
# inside only logs, so a run without reminders would raise nothing). Runs of spaces are compared
# as one, so that a promise does not depend on the padding of a table.
PROMISED = {
    "01_quickstart.ipynb": [
        "without the guard: 13 tool calls · 0 reminders",
        "with the guard:    6 tool calls · 2 reminders (1 gentle, 1 detailed)",
        "SystemMessage · detailed · repeat · job_status × 5",
        "docs/timeline.png not written",
    ],
    "02_create_agent.ipynb": [
        "exclude=[]: 5 tool calls · 0 reminders (0 gentle, 0 detailed)",
        "defaults (BOOKKEEPING_TOOLS): 5 tool calls · 1 reminders (1 gentle, 0 detailed)",
        "exclude=['write_*']: 5 tool calls · 1 reminders (1 gentle, 0 detailed)",
        "… (+592 more chars)",
        # The middleware stores a reminder in one form, and sends each model the form it takes.
        "profile=None, message_type='system': stored SystemMessage, sent HumanMessage",
        "profile={'mid_conversation_system_messages': True}, message_type='system': "
        "stored SystemMessage, sent SystemMessage",
        "profile=None, message_type='human': stored HumanMessage, sent HumanMessage",
        "thresholds: invalid threshold 1",
        "exclude: must be a list of tool-name patterns, got 'write_todos'",
        "→ ConfigError: detect: unknown detector 'stail'; did you mean 'stale'?",
        "→ ConfigError: escalate_after: must be greater than every threshold",
        "{'escalate_after': None, 'exit_behavior': 'error'} → ConfigError: exit_behavior: "
        "applies only with escalate_after set",
        "→ TypeError: unknown ReminderConfig field 'treshold'; did you mean 'thresholds'?",
        "as stored:          ValueError: Received multiple non-consecutive system messages.",
        "user: tool_result + text",
    ],
    "03_subagents_and_persistence.ipynb": [
        "longest streak: search × 3",
        "process 1, step 2: calls: 3 · stored count: 2 · reminders: [] · waiting before tools",
        "process 2, step 5: calls: 5 · stored count: 5 · "
        "reminders: ['check_deploy × 3', 'check_deploy × 5'] · finished",
        "in the output: False",
        # The state-kept node: its field is checkpointed, not in the output.
        "output keys: ['messages']",
        "reminders: ['SystemMessage', 'SystemMessage']",
        "5 tool calls · 2 reminders (1 gentle, 1 detailed) · longest streak: check_deploy × 5",
    ],
    "04_beyond_exact_repeats.ipynb": [
        # The default stop, then reminders instead of it.
        "defaults: gentle at call 3, detailed at call 5, detailed at call 8, escalated at call 10",
        "last message: I have only this: `tail_log` keeps saying",
        "repeat_every=2, escalate_after=None: gentle at call 3, detailed at call 5, "
        "detailed at call 8, detailed at call 10, detailed at call 12",
        "ignore_arguments={'run_shell': ['description']}: gentle at call 3, detailed at call 5",
        '- arguments: {"command":"pytest tests/test_api.py"}\n',
        "progress='none': gentle at call 3, detailed at call 5, detailed at call 8",
        "defaults: gentle at call 7, detailed at call 9",
        "seen by the model: {}",
        "would have sent:     {'tail_log': {'detailed': 1, 'gentle': 1}}",
        "'detector': 'repeat', 'summary': 'job_status × 3'",
        # The graph's custom stream.
        "during step 9: {'repeat_tool_reminder': {'tool': 'job_status', 'count': 3, "
        "'level': 'gentle', 'detector': 'repeat'",
        "during step 15: {'repeat_tool_reminder': {'tool': 'job_status', 'count': 5,",
        "repeat tool reminder sent: job_status × 5 (detailed, repeat)",
        "'undelivered': {}, 'detectors': {'repeat': {'delivered': 2, 'undelivered': 0}}, "
        "'escalations': {}",
        "'recovery_rate': 0.5}",
        "2 conversations · 19 tool calls · thresholds 2, 4",
        "job_status: {'calls': 17, 'longest': 12, 'streaks': 2, 'gentle': 2, 'detailed': 3, "
        "'escalated': 1, 'wasted': 11}",
        '0 — 19 job_status repeat 10 escalated — {"job_id":"nightly-build-7"}',
    ],
    "05_detectors_and_escalation.ipynb": [
        # stale
        "detect=['repeat']: 12 tool calls · 0 reminders (0 gentle, 0 detailed)",
        "detect=['repeat', 'stale']: 6 tool calls · 1 reminders (1 gentle, 0 detailed)",
        "by detector: {'stale': {'delivered': 1, 'undelivered': 0}}",
        "output changes after each edit no reminders",
        "edits change nothing stale gentle at call 5",
        "{'stale_thresholds': [2, 4]} stale gentle at call 3, stale detailed at call 7",
        # same_error
        "detect=['repeat']: no reminders",
        "defaults: same_error gentle at call 3",
        "statuses: ['error', 'error', 'error', 'error']",
        "failed with the same error, with 3 different argument sets",
        "The error: pylint: error: No module named 'astroid.nodes'",
        "TOOL_ERRORS: \\AError(?:: | invoking tool )",
        "error_pattern=None no reminders",
        "defaults same_error gentle at call 3",
        # the defaults stop a same-failure loop, and the model answers
        "same_error gentle at call 3, same_error escalated at call 10",
        "escalations: {'book_reservation': {'same_error': 1}}",
        "last message: I have only this: `book_reservation` keeps saying 'Error: payment amount",
        # bookkeeping tools
        "('think', 'write_todos',",
        "defaults repeat gentle at call 5",
        "exclude=[] recurring_error gentle at call 5",
        "profile='seed' no reminders",
        "profile='seed', exclude=list(BOOKKEEPING_TOOLS) repeat gentle at call 5",
        "profile='seed', detect=['repeat', 'stale'] stale gentle at call 5",
        # the evaluation on the excerpt in tests/data
        "== corpus_excerpt.jsonl: 4 conversations, 61 tool calls (61 tracked)",
        "stale 2 2 bash 2",
        "same_error 1 1 bash 1",
        "all 3 3 bash 3 [repeat 0, same_error 1, recurring_error 0, stale 2, cycle 0, "
        "same_output 0]",
        "check: 4 re-runs with a changed output, 0 with a stale count other than 1",
        "-- conversation 0, call 12: stale × 3",
        '>> 12 bash {"command":"cat astropy/io/ascii/rst.py"}',
        "exclude=(): 16 calls (16 tracked) · firings: repeat 0, same_error 0, recurring_error 1, "
        "stale 1, cycle 0, same_output 0",
        "call 13: book_reservation × 3 (recurring_error)",
        "exclude=('think',): 16 calls (12 tracked) · firings: repeat 1, same_error 1, "
        "recurring_error 1, stale 1, cycle 0, same_output 0",
        "call 13: book_reservation × 3 (repeat)",
        "0 8 38 book_reservation repeat 3 gentle",
        "--profile seed: note: excluding think would reveal 1 reminder in 1 conversation "
        "(--exclude think)",
        # the figures on the whole development corpus, with their file and settings
        "tau_bench_gpt4o_airline.dev.json (gpt-4o, τ-bench airline: 100 conversations, 577 calls)",
        "[defaults] repeat 0: no two identical calls in a row",
        "[--exclude think --error-pattern '\\AError: '] repeat 1: task 8, book_reservation, "
        "the same failing call 3 times",
        "mini_swe_gemini3pro.dev.jsonl (Gemini 3 Pro, mini-swe-agent: 250 conversations, "
        "9,745 calls)",
        "[defaults] repeat 0: the longest streak is 2",
        "[defaults] stale at 3: 6 firings in 6 conversations, about 40% of them genuine waste",
        "at 2: 189 firings in 119 conversations",
        "[defaults] stale on the 981 edit-then-re-run calls whose output changed: 0 firings",
        "[--error-pattern '\\A<returncode>[1-9]\\d*</returncode>'] same_error: "
        "2 firings at 3, 23 at 2",
        # escalation: finish (the default), end, the node's route and the custom stream,
        # interrupt, error
        "10 tool calls · 4 reminders (1 gentle, 2 detailed, 1 escalated)",
        "the guard's last words: Reply to the user with the latest result of `job_status`",
        "last message: AIMessage · nightly-7 finished at 02:14 with exit code 1.",
        "last message: AIMessage · escalated · job_status × 10",
        "escalations: {'job_status': {'repeat': 1}}",
        "repeat_reminder → __end__, repeat_reminder → agent",
        "repeat_tool_reminder: job_status × 8 (detailed)",
        "repeat_tool_escalation: job_status × 10 (finish)",
        "kind: repeat_tool_escalation",
        "choices: ['continue', 'end', '<any other text: sent to the agent as a user message>']",
        "25 user The job finished hours ago: read its log.",
        '26 assistant → read_log(job="nightly-7")',
        "WARNING repeat_reminder_langchain: repeat tool loop: a human is asked what to do "
        "(interrupt): job_status × 10",
        "RepeatToolLoopError: repeat tool loop stopped: job_status × 10 "
        "(repeat, escalate_after=10)",
        "{'tool': 'job_status', 'arguments': '{\"job\":\"nightly-7\"}', 'count': 10, "
        "'detector': 'repeat', 'thread_id': 'nightly-7-batch'}",
        "the checkpoint ends with: ToolMessage",
        "after a new user message: The migration 0042 failed",
    ],
}


def spaced(text: str) -> str:
    """`text` with every run of spaces made one."""
    return re.sub(r" {2,}", " ", text)


def printed(notebook: nbformat.NotebookNode) -> list[str]:
    """What each code cell printed (its stream outputs)."""
    return [
        "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")
        for cell in notebook.cells
        if cell.cell_type == "code"
    ]


SAVES_THE_PICTURE = "docs/timeline.png"  # in the text of the cell that saves it, or says why not
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")


def normalised(text: str) -> str:
    """`text` with what differs from run to run replaced: ids (of messages, runs and
    checkpoints) and times."""
    return TIME.sub("<time>", UUID.sub("<id>", text))


def shown(notebook: nbformat.NotebookNode) -> list[list[tuple[str, str]]]:
    """Every output of each code cell, normalised, as (kind, text) pairs; a picture only as
    there, and the cell that saves one left out."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        outputs: list[tuple[str, str]] = []
        for out in cell.outputs:
            if out.output_type == "stream":
                outputs.append((out.name, normalised(out.text)))
            elif out.output_type == "error":
                outputs.append(("error", normalised(f"{out.ename}: {out.evalue}")))
            else:
                for kind, value in sorted(out.data.items()):
                    text = "picture" if kind.startswith("image/") else normalised(str(value))
                    outputs.append((kind, text))
        if not any(SAVES_THE_PICTURE in text for _, text in outputs):
            cells.append(outputs)
    return cells


def test_the_stored_outputs_are_compared_whole() -> None:
    # A stored output that a run changes is found wherever it is: a returned value as well as
    # printed text; ids and times are not compared.
    cell = nbformat.v4.new_code_cell("state")
    cell.outputs = [
        nbformat.v4.new_output("execute_result", {"text/plain": "{'digest': 'e3b0'}"}),
        nbformat.v4.new_output("stream", name="stdout", text="saved at 2026-12-03T08:37:29Z\n"),
        nbformat.v4.new_output(
            "stream", name="stdout", text="run 1f1eef5b-87ed-6f46-800f-4511452b6c76\n"
        ),
        nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo="}),
        nbformat.v4.new_output("error", ename="ValueError", evalue="no"),
    ]
    notebook = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("text")])
    assert shown(notebook) == [
        [
            ("text/plain", "{'digest': 'e3b0'}"),
            ("stdout", "saved at <time>\n"),
            ("stdout", "run <id>\n"),
            ("image/png", "picture"),
            ("error", "ValueError: no"),
        ]
    ]
    saving = nbformat.v4.new_code_cell("save()")
    saving.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="saved docs/timeline.png")
    ]
    assert shown(nbformat.v4.new_notebook(cells=[saving])) == []


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
    # A figure a cell both returns and leaves to the inline backend is shown twice.
    for cell in code:
        pictures = [
            data
            for out in cell.outputs
            for kind, data in out.get("data", {}).items()
            if kind.startswith("image/")
        ]
        assert len(pictures) == len(set(pictures)), f"{name}: a cell shows one figure twice"


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
    text = spaced("".join(printed(notebook)))
    assert "Skipped: set OPENAI_API_KEY or ANTHROPIC_API_KEY" in text
    missing = [promise for promise in PROMISED[name] if spaced(promise) not in text]
    assert not missing, f"{name} did not print: {missing}"
    # The stored notebook is what a run shows today, every output of every cell, ids and times
    # aside (but for the cell that saves the picture, which the test does not let write):
    # re-run the notebooks after a change that shows.
    stored = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert shown(notebook) == shown(stored), (
        f"{name} is stored with outdated outputs: run `make notebooks`"
    )
    after = sorted(os.listdir(NOTEBOOKS)), picture.exists() and picture.stat().st_mtime_ns
    assert after == before, "the notebook wrote into the repository"


def test_the_evaluation_cell_finds_its_package_in_the_checkout_with_the_package_installed(
    tmp_path: Path,
) -> None:
    # As `pip install ".[notebooks]"` leaves it: the package in site-packages, the checkout
    # (which holds `evaluation`) not on the path, Jupyter started in the checkout's notebooks/.
    site = tmp_path / "site"
    shutil.copytree(ROOT / "repeat_reminder_langchain", site / "repeat_reminder_langchain")
    notebook = nbformat.read(NOTEBOOKS / "05_detectors_and_escalation.ipynb", as_version=4)
    cell = next(c.source for c in notebook.cells if "from evaluation" in c.source)
    run = (
        "import sys\n"
        "from pathlib import Path\n"
        f"sys.path[:] = [{str(site)!r}] + [p for p in sys.path if p and Path(p).resolve() != "
        f"Path({str(ROOT)!r})]\n"
        f"{cell}\n"
        "import evaluation\n"
        "print(Path(evaluation.__file__).parent.parent, repeat_reminder_langchain.__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", run],
        cwd=NOTEBOOKS,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONSAFEPATH": "1"},
    )
    assert done.returncode == 0, done.stderr
    checkout, package = done.stdout.splitlines()[-1].split()
    assert (Path(checkout), Path(package).parent.parent) == (ROOT, site)
