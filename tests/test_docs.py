"""The documentation is true: its code runs and prints what it says, its commands run (or are
listed with the reason they are not run here), its links lead somewhere, and the demo and the
configuration errors are what it shows.

The documentation is the README, CONTRIBUTING.md and every page under docs/. The site itself is
built in tests/test_site.py, which needs the docs extra.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from pydantic.fields import FieldInfo

import repeat_reminder_langchain as package
from repeat_reminder_langchain import (
    ConfigError,
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
)
from repeat_reminder_langchain import _config as config_module
from repeat_reminder_langchain._config import short_forms
from repeat_reminder_langchain._detectors import DETECTORS
from repeat_reminder_langchain._moved import MOVED

from .conftest import PEERS_OPTIONAL
from .helpers import SHIPPED, field_docs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
DOCS = ROOT / "docs"
PAGES = [README, CONTRIBUTING, *sorted(DOCS.rglob("*.md"))]


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


EXCERPT = "# Excerpt"  # how a block that does not run on its own says so, to the reader too
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def blocks(path: Path, *languages: str) -> list[str]:
    """The fenced blocks of `path` in one of `languages`, in order."""
    return [body for language, body in FENCE.findall(text(path)) if language in languages]


def python_blocks(path: Path) -> list[str]:
    return blocks(path, "python")


def runnable_blocks() -> dict[str, str]:
    """Every Python block that runs on its own, each once, by where it first appears."""
    found: dict[str, str] = {}
    for path in PAGES:
        for index, block in enumerate(python_blocks(path)):
            if not block.lstrip().startswith(EXCERPT) and block not in found.values():
                found[f"{name(path)}:{index}"] = block
    return found


RUNNABLE = runnable_blocks()


def test_every_python_block_runs_or_says_it_is_an_excerpt() -> None:
    # The README shows one runnable example per face.
    assert len([b for b in python_blocks(README) if not b.startswith(EXCERPT)]) >= 3
    for path in PAGES:
        for block in python_blocks(path):
            if block.lstrip().startswith(EXCERPT):  # an excerpt says what it needs, first
                first = block.lstrip().splitlines()[0]
                assert first.startswith(f"{EXCERPT}: "), (name(path), first)
                assert len(first) > len(EXCERPT) + 10, (name(path), first)


# What a block or a command needs beyond the project and its test extra, by a word it holds.
PEERS = {
    "opentelemetry": "opentelemetry.sdk",
    "--only metrics": "opentelemetry.sdk",
    "bench": "able_harness_kit",  # the benchmarks measure the peers beside the guard
}


def skip_without_peers(text: str) -> None:
    """Where the optional peers are optional (`make test-lowest`), skip what needs a missing one."""
    if PEERS_OPTIONAL:
        for word, module in PEERS.items():
            if word in text:
                pytest.importorskip(module)


class ScriptedModel(GenericFakeChatModel):
    """A chat model for a block written for a real one: it polls the job three times (the guard
    reminds it), then answers as the block says a model does."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


def scripted_model(monkeypatch: pytest.MonkeyPatch, block: str) -> list[str]:
    """`init_chat_model` giving the scripted model, offline; the model names it was asked for."""
    asked: list[str] = []
    answer = block.splitlines()[-1].removeprefix("# ")
    call = {"name": "job_status", "args": {"job": "nightly-7"}}
    turns = [AIMessage("", tool_calls=[{**call, "id": f"c{n}"}]) for n in range(3)]

    def init_chat_model(model: str, **kwargs: Any) -> ScriptedModel:
        asked.append(model)
        return ScriptedModel(messages=iter([*turns, AIMessage(answer)]))

    monkeypatch.setattr("langchain.chat_models.init_chat_model", init_chat_model)
    return asked


@pytest.mark.parametrize("where", sorted(RUNNABLE))
def test_each_runnable_block_runs_and_prints_what_it_promises(
    where: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = RUNNABLE[where]
    skip_without_peers(block)
    # Written for a real model: run on a scripted one.
    real = "from langchain.chat_models import init_chat_model" in block
    asked = scripted_model(monkeypatch, block.rstrip()) if real else []
    script = tmp_path / "example.py"
    script.write_text(block, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    promised = [line.removeprefix("# ") for line in block.splitlines() if line.startswith("# ")]
    printed = capsys.readouterr().out.splitlines()
    assert printed, "a runnable example shows what it does"
    assert printed == promised[-len(printed) :]
    assert asked == (["openai:gpt-4.1"] if real else [])


def test_the_first_example_is_short_and_uses_a_real_model() -> None:
    first = python_blocks(README)[0]
    assert "init_chat_model(" in first
    code = [line for line in first.splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) <= 10


def test_the_detector_contributing_shows_is_the_one_the_tests_register() -> None:
    (shown,) = [b for b in python_blocks(ROOT / "CONTRIBUTING.md") if "class SameTool" in b]
    code = shown.split("\n", 1)[1]  # the excerpt's first line says where it is from
    assert code in text(ROOT / "tests" / "detectors" / "test_example.py")
    assert len(code.splitlines()) <= 40  # settings, words, memory and what it says: one screen


SERVER_EXAMPLE = ROOT / "examples" / "langgraph_server"
SERVER_GUIDE = DOCS / "guides" / "server.md"


def test_the_server_wiring_shown_is_the_one_the_server_test_serves() -> None:
    shown = blocks(SERVER_GUIDE, "json")
    served = text(SERVER_EXAMPLE / "langgraph.json")
    assert json.loads(served) in [json.loads(block) for block in shown]
    source = text(SERVER_EXAMPLE / "agents.py")
    guide = python_blocks(SERVER_GUIDE)
    (excerpt,) = [b for b in guide if "examples/langgraph_server/agents.py" in b]
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
    shown = blocks(README, "text")
    assert shown, "the README lost the demo's transcript"
    lines = [line for line in shown[0].splitlines() if line.strip() != "..."]
    assert len(lines) > 10
    printed = result.stdout.splitlines()
    assert [line for line in lines if line not in printed] == []  # the README shows what it prints


# The shell commands of the documentation: every line of a ```bash, ```sh or ```console block
# (`$ ` lines in a console block; the lines after one are its output), and every inline `make
# ...`, `repeat-reminder ...`, `python -m ...` and `pip ...` of the text. Each is run by
# test_each_command_runs_offline, in a scratch folder that sees the checkout's files, with this
# interpreter's bin directory first on the PATH, unless it is listed here with the reason. A
# command that is neither listed nor able to run offline here fails: the rule is that a command
# the docs show either works as shown or says, here, why it is not run.
NOT_RUN = {
    # Installs: into the environment running the tests, or from an index.
    "pip install .": "installs the checkout into the running environment",
    "pip install '.[audit,plot]'": "installs the checkout into the running environment",
    "pip wheel --no-deps -w dist .": "needs the build backend from the package index",
    "pip install 'dist/repeat_reminder_langchain-*.whl'": "installs a wheel built by the above",
    "python -m build": "needs the build package and the build backend from the package index",
    "pip install repeat-reminder-langchain": "the package is not on an index yet: once released",
    "pip install 'langgraph-cli[inmem]' .": "installs into the running environment",
    # A server that runs until stopped: tests/test_langgraph_server.py starts it and drives it.
    "cd examples/langgraph_server && LANGGRAPH_CLI_NO_ANALYTICS=1 langgraph dev --no-browser": (
        "a server that runs until stopped; tests/test_langgraph_server.py serves the example"
    ),
    # The make targets that build a venv, run for long, or run this very suite.
    "make test": "the whole suite, this test included (installs the dev extra)",
    "make test-lowest": "builds .venv-lowest from the package index, then runs the suite",
    "make lint": "installs the dev extra; ruff and mypy run in make test",
    "make docs": "installs the dev extra; tests/test_site.py runs the same strict build",
    "make bench": "the benchmarks take tens of minutes on two cores",
    "make bench ARGS=--quick": "a smoke run of the benchmarks, still minutes on two cores",
    "python -m benchmarks --only hooks": "one section of the benchmarks, minutes on two cores",
    "python -m benchmarks --only metrics --only checkpointer": (
        "two sections of the benchmarks: minutes on two cores, with PostgreSQL"
    ),
    "make evaluate": "reads the development corpus, which lives outside the checkout",
    "make evaluate 'CORPUS=a.json b.jsonl'": "a form: a.json and b.jsonl stand for your files",
    "make mutate": "mutation testing of the core: hours on two cores",
    "make notebooks": "re-executes and rewrites the notebooks; tests/test_notebooks.py runs them",
    "make clean": "removes the venvs, this one included",
    # The loop lab on a real model: a provider's key and the network, or a local model server.
    # tests/tooling/test_lab.py runs it on a scripted model and over HTTP against a test server.
    "repeat-reminder lab --model openai:gpt-4.1-mini --runs 3 --output lab-out": (
        "a provider's model: its key and the network"
    ),
    "make lab 'ARGS=--model openai:gpt-4.1-mini'": "a provider's model: its key and the network",
    "llama-server -m qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --port 8080 --jinja": (
        "a llama.cpp server and a model file of the reader's own"
    ),
    "repeat-reminder lab --model qwen --base-url http://127.0.0.1:8080/v1 --temperature 0.7 "
    "--runs 5": "the llama.cpp server above",
    "repeat-reminder lab": "the subcommand's name, as the text says it",
    # Names of a command, in the text, not commands: each is shown with arguments elsewhere.
    "python -m repeat_reminder_langchain": "the command's name, as the text says it",
    "repeat-reminder audit": "the subcommand's name, as the text says it",
    # Forms, whose capitals or paths stand for the reader's own files.
    "repeat-reminder audit --not-user REGEX": "a form: REGEX stands for your pattern",
    "repeat-reminder audit 'logs/*.jsonl' --fail-on detailed": "a form: logs stand for your logs",
    "repeat-reminder audit --checkpointer": "the option's name, as the text says it",
    # A checkpointer of the reader's own: tests/tooling/test_audit_checkpointer.py audits real ones.
    "pip install '.[checkpointers]'": "installs the checkout into the running environment",
    "pip install '.[otel]'": "installs the checkout into the running environment",
    "pip install build": "installs from the package index",
    "python -m benchmarks --only checkpointer": "one section of the benchmarks, with PostgreSQL",
    "repeat-reminder audit --checkpointer '$AUDIT_DATABASE_URL' --since "
    "'$(date -u -d yesterday +%F)' --fail-on detailed --html loops.html": "your database's URL",
    "repeat-reminder audit --checkpointer postgresql://audit:PASSWORD@db/langgraph --since "
    "2026-11-01": "a form: a PostgreSQL server of your own",
    "repeat-reminder audit --checkpointer postgresql://audit@db.internal:5432/langgraph": (
        "a form: a PostgreSQL server of your own"
    ),
    "repeat-reminder audit --checkpointer sqlite:////var/lib/agent/threads.db": (
        "a form: a SQLite file of your own"
    ),
    "repeat-reminder audit --checkpointer sqlite:///checkpoints.sqlite": (
        "a form: a SQLite file of your own"
    ),
}


@dataclass
class Command:
    """A shell command of the documentation, where it is shown, and the output it shows."""

    line: str
    where: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The command as NOT_RUN spells it: each part quoted once, comments dropped."""
        return " && ".join(shlex.join(shlex.split(part, comments=True)) for part in self.parts)

    @property
    def parts(self) -> list[str]:
        return self.line.split(" && ")


INLINE = re.compile(r"`((?:make|repeat-reminder|python -m|pip) [^`]+)`")


def commands() -> dict[str, Command]:
    """Every shell command of the documentation, by its key."""
    found: dict[str, Command] = {}

    def add(line: str, where: str, output: list[str] | None = None) -> None:
        command = Command(" ".join(line.split()))
        command = found.setdefault(command.key, command)
        command.where.append(where)
        if output:
            command.output = output

    for path in PAGES:
        page = text(path)
        for language, body in FENCE.findall(page):
            if language == "console":
                for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
                    line, *output = chunk.splitlines()
                    add(line, name(path), output)
            elif language in ("bash", "sh"):
                cd = ""
                for line in body.replace("\\\n", " ").splitlines():  # continued lines joined
                    if not shlex.split(line, comments=True):
                        continue
                    if line.startswith("cd "):
                        cd = f"{line.strip()} && "
                    else:
                        add(cd + line, name(path))
        for span in INLINE.findall(FENCE.sub("", page)):
            add(span, name(path))
    return found


COMMANDS = commands()


def test_every_listed_command_is_still_shown() -> None:
    assert sorted(set(NOT_RUN) - set(COMMANDS)) == []
    assert len(set(COMMANDS) - set(NOT_RUN)) >= 10  # most of what the docs show runs here


# Folders a command shown writes into (`python -m benchmarks` writes its results.json there):
# copied into the scratch folder, so that what it writes stays there.
WRITTEN = {"benchmarks"}


def scratch(tmp_path: Path) -> Path:
    """A folder that sees the checkout's files, where what a command writes stays."""
    tmp_path.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in WRITTEN:
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(entry, tmp_path / entry.name, ignore=ignore)
        elif entry.name not in {".git", ".venv", ".venv-lowest", "site", "mutants"}:
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def checkout_state() -> str:
    """What git sees changed in the checkout, with each changed file's time of change."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    changed = (ROOT / line[3:] for line in status.splitlines())
    return status + "".join(f"{p}:{p.stat().st_mtime_ns}\n" for p in changed if p.is_file())


def shown_matches(shown: list[str], printed: list[str]) -> bool:
    """Each shown line is printed, in order; `...` skips lines, a final `…` cuts a line short."""
    rest = iter(printed)
    for line in (line.rstrip() for line in shown):
        if line.strip() == "...":
            continue
        cut = line.endswith("…")
        wanted = line.removesuffix("…")
        if not any((p.startswith(wanted) if cut else p.rstrip() == wanted) for p in rest):
            return False
    return True


@pytest.mark.timeout(180)
@pytest.mark.parametrize("key", sorted(set(COMMANDS) - set(NOT_RUN)))
def test_each_command_runs_offline(key: str, tmp_path: Path) -> None:
    command = COMMANDS[key]
    skip_without_peers(command.line)
    line = command.key  # as shown, without its comment
    if line.startswith("make "):
        if shutil.which("make") is None:
            pytest.skip("make is not installed")
        # The Makefile's own recipe, with this interpreter as the venv it would have built.
        stamp = tmp_path / "ready"
        stamp.touch()
        python = Path(sys.executable)
        line += f" PYTHON={python} BIN={python.parent} BASE={stamp} READY={stamp}"
    bin_dir = str(Path(sys.executable).parent)
    environment = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    cwd = scratch(tmp_path / "cwd")
    before = checkout_state()
    result = subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert result.returncode == 0, (command.where, result.stdout[-2000:], result.stderr[-2000:])
    assert not (cwd / ".venv").exists(), "make built a venv: the command was not run as meant"
    assert checkout_state() == before, "the command wrote into the checkout"
    if command.output:
        printed = result.stdout.splitlines()
        assert shown_matches(command.output, printed), (command.where, result.stdout[-3000:])


def test_the_install_page_lists_every_extra_for_users() -> None:
    extras = tomllib.loads(text(ROOT / "pyproject.toml"))["project"]["optional-dependencies"]
    listed = re.findall(r"^\| `(\w+)` \|", text(DOCS / "install.md"), re.MULTILINE)
    # dev and test are the contributors' (CONTRIBUTING.md), bench the benchmarks' peers.
    assert sorted(listed) == sorted(set(extras) - {"dev", "test", "bench"})


def test_no_install_command_shown_needs_a_package_index() -> None:
    # The package is on no index yet: an extra is installed from the checkout (".[extra]").
    # The errors name the command for where it was installed from (tests/test_install.py).
    for key, command in COMMANDS.items():
        assert "repeat-reminder-langchain[" not in key, command.where


@pytest.mark.parametrize("path", [README, CONTRIBUTING], ids=name)
def test_every_relative_link_leads_to_a_file(path: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", text(path)):
        if not target.startswith(("http://", "https://", "#")):
            assert (path.parent / target.split("#")[0]).exists(), (name(path), target)


def test_the_readme_is_for_users() -> None:
    assert len(text(README).splitlines()) <= 350
    # Every guide is linked from it, or from the site's home page it links to.
    linked = set(re.findall(r"\]\((docs/[^)#]+)", text(README)))
    linked |= {f"docs/{t}" for t in re.findall(r"\]\(([^)#:]+\.md)", text(DOCS / "index.md"))}
    guides = {name(path) for path in (DOCS / "guides").glob("*.md")}
    assert guides <= linked


def test_the_quickstart_gives_the_demo_and_the_tests() -> None:
    quickstart = text(README).split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = [
        line.split("#")[0].strip() for b in FENCE.findall(quickstart) for line in b[1].splitlines()
    ]
    assert {"make demo", "make test"} <= set(commands)


def _public_modules() -> set[str]:
    """Every module of the package a user may import: no part of its name starts with `_`."""
    root = Path(package.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            found.add(".".join(parts))
    return found


def test_the_api_reference_lists_exactly_the_public_surface() -> None:
    documented = re.findall(r"^::: ([\w.]+)$", text(DOCS / "reference.md"), re.MULTILINE)
    by_module: dict[str, set[str]] = {}
    for path in documented:
        module, _, attribute = path.rpartition(".")
        by_module.setdefault(module, set()).add(attribute)
    # The package's own names are documented where they live, in a private module.
    exported = {
        attribute: module
        for module, names in by_module.items()
        if module.split(".")[1].startswith("_")
        for attribute in names
    }
    assert sorted(exported) == sorted(set(package.__all__) - {"__version__"})
    for name_, module in exported.items():
        assert getattr(importlib.import_module(module), name_) is getattr(package, name_)
    # Every other public module exports exactly what the reference lists of it, and a module
    # without a documented name is no public module at all.
    public = {
        module: names for module, names in by_module.items() if module not in exported.values()
    }
    modules = _public_modules() - {package.__name__, f"{package.__name__}.tooling"}
    # 0.2.0's module paths, kept for this release, have no name of their own: no surface.
    kept = {module for module in modules if not importlib.import_module(module).__all__}
    assert {module.removeprefix(f"{package.__name__}.") for module in kept} <= set(MOVED)
    assert sorted(public) == sorted(modules - kept)
    for module, names in public.items():
        assert sorted(importlib.import_module(module).__all__) == sorted(names), module
    assert "`repeat_reminder_langchain.__version__`" in text(DOCS / "reference.md")


CONFIGURATION = DOCS / "guides" / "configuration.md"


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
        lambda: ReminderConfig(escalate_after=5),
        ConfigError,
        "escalate_after: must be greater than every threshold of the repeat detector (the last "
        "is 8), got 5; pass thresholds=[3] (reminders before the stop) or escalate_after ≥ 9",
    ),
    (
        lambda: ReminderConfig(words={"repeat": {"gentle": "{tool:d}"}}),
        ConfigError,
        "words: repeat.gentle: cannot be said (Unknown format code 'd' for object of type 'str')",
    ),
    (
        lambda: ReminderConfig(words={"repeat": {"gentle": ""}}),
        ConfigError,
        "words: repeat.gentle: must not be empty",
    ),
    (
        lambda: ReminderConfig(log_arguments="yes"),
        ConfigError,
        "log_arguments: must be True or False, got 'yes'",
    ),
    (
        lambda: ReminderConfig(exit_behavior="error", escalate_after=None),
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
def test_the_table_of_configuration_errors_is_what_happens(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        build()
    assert message in str(caught.value)
    assert f"`{error.__name__}`: {message}" in text(CONFIGURATION)


def settings_table(path: Path) -> list[list[str]]:
    """The cells of each row of the settings table of `path` (field, default, meaning, rule)."""
    lines = text(path).split("| field | default | meaning | rule |\n|---|---|---|---|\n")[1]
    rows = itertools.takewhile(lambda line: line.startswith("| `"), lines.splitlines())
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def default_cell(field: FieldInfo) -> str:
    """A field's default, as a table writes it: a constant by its name, a value as Python."""
    default = field.default
    for constant in ("BOOKKEEPING_TOOLS", "TOOL_ERRORS"):
        if default is getattr(config_module, constant):
            return f"`{constant}`"
    if default is None or isinstance(default, bool):
        return f"`{default!r}`"
    plain = list(default) if isinstance(default, tuple) else default
    return f"`{json.dumps(dict(plain) if isinstance(plain, Mapping) else plain)}`"


@pytest.mark.parametrize("path", [README, DOCS / "guides" / "configuration.md"], ids=name)
def test_each_settings_table_is_the_fields_as_declared(path: Path) -> None:
    # The tables are written for their readers; what they say of a field that its declaration
    # also says (its name, its place, its default, its choices) is held to the declaration.
    rows = settings_table(path)
    fields = ReminderConfig.model_fields
    short = [row for row in rows if row[0].endswith("…")]  # the guide's row of short forms
    for row in short:
        assert set(re.findall(r"`(\w+)`", row[0])) <= set(short_forms())
    rows = [row for row in rows if row not in short]
    assert [row[0] for row in rows] == [f"`{name}`" for name in fields]
    numbers = {2: "two", 3: "three", 5: "five"}
    for (cell, default, _, rule), declared in zip(rows, fields.values(), strict=True):
        assert default == default_cell(declared), cell
        if get_origin(declared.annotation) is Literal:
            assert f"one of the {numbers[len(get_args(declared.annotation))]}" in rule, cell


def test_the_detectors_the_docs_name_are_the_shipped_ones_in_precedence_order() -> None:
    # Listed as those that ship, never as every detector: one added by the guide is in the
    # registry alone, and nothing here has to name it.
    configuration = DOCS / "guides" / "configuration.md"
    rows = [
        row
        for path in (README, configuration)
        for row in text(path).splitlines()
        if row.startswith("| `detect` |")
    ]
    assert len(rows) == 2
    for listed in (*rows, field_docs(ReminderConfig)["detect"]):
        shipped = re.split(r"\bships?\b", listed, maxsplit=1)[1]
        names = re.findall(r'`"?(\w+)"?`', shipped)
        assert names == list(SHIPPED), listed
        assert all(name in DETECTORS for name in names)
