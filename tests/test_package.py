"""The package's surface: what it exports, what importing it loads, its version."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from importlib.metadata import files, metadata, packages_distributions, requires, version
from pathlib import Path

import pytest

import repeat_reminder_langchain as package


def test_every_exported_name_is_there() -> None:
    assert sorted(package.__all__) == sorted(set(package.__all__))
    for name in package.__all__:
        assert getattr(package, name) is not None
    assert set(dir(package)) >= set(package.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Chain'"):
        package.Chain  # noqa: B018


def test_help_on_the_package_says_which_name_to_use_for_what() -> None:
    import pydoc

    said = pydoc.render_doc(package, renderer=pydoc.plaintext).split("FUNCTIONS")[0]
    said = " ".join(said.split())
    for name, use in [
        ("RepeatToolReminderMiddleware", "create_agent"),
        ("RepeatToolReminderNode()", "StateGraph"),
        ("RepeatToolReminderCallbackHandler", 'config["callbacks"]'),
        ("ReminderConfig", "settings"),
        ("stop_reason(result)", "the loop the guard stopped"),
        ("from_guard(message)", "whether the guard wrote a message"),
    ]:
        assert re.search(rf"`{re.escape(name)}`[^-]*?{re.escape(use)}", said), name
    # Every class a user builds is named there.
    classes = [
        n for n in package.__all__ if n.startswith("RepeatToolReminder") and "Warning" not in n
    ]
    assert [n for n in classes if f"`{n}" not in said] == []


def test_importing_the_handler_does_not_import_langchain_agents() -> None:
    script = (
        "import sys\n"
        "from repeat_reminder_langchain import RepeatToolReminderCallbackHandler\n"
        "print('langchain.agents' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_the_version_is_the_installed_one() -> None:
    assert package.__version__ == version("repeat-reminder-langchain")


ROOT = Path(__file__).resolve().parent.parent


def test_the_python_the_package_asks_for_is_the_one_it_advertises() -> None:
    # langchain-core 1.8 needs Python 3.11: an older floor would install nothing.
    meta = metadata("repeat-reminder-langchain")
    assert meta["Requires-Python"] == ">=3.11"
    versions = [
        line.rpartition("::")[2].strip()
        for line in meta.get_all("Classifier") or []
        if line.startswith("Programming Language :: Python :: 3.")
    ]
    assert min(versions, key=lambda v: tuple(map(int, v.split(".")))) == "3.11"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Python 3.11+" in readme
    assert not re.search(r"Python 3\.10\b|3\.10\+", readme)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_rebuilds_a_venv_another_interpreter_built(tmp_path: Path) -> None:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    stale = tmp_path / ".venv" / "bin" / "python"
    stale.parent.mkdir(parents=True)
    stale.write_text("#!/bin/sh\necho 3.10.0 /usr/old\n", encoding="utf-8")
    stale.chmod(0o755)
    (tmp_path / ".venv" / ".ready-base").touch()
    (tmp_path / ".venv" / ".ready").touch()

    def plan(python: str) -> str:
        done = subprocess.run(
            ["make", "-n", ".venv/.ready", f"PYTHON={python}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    assert f"{sys.executable} -m venv --clear .venv" in plan(sys.executable)
    # The same stand-in asked for as the interpreter: the stamps are fresh, nothing to do.
    assert "-m venv" not in plan(str(stale))


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_ci_script_parses_and_runs_what_the_readme_says() -> None:
    script = ROOT / ".ci" / "run"
    subprocess.run(["bash", "-n", str(script)], check=True, capture_output=True)
    commands = [
        line for line in script.read_text(encoding="utf-8").splitlines() if line[:1].isalpha()
    ]
    assert commands[-2:] == ["make test", "make test-lowest"]


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement)[0]


def _expanded(name: str, extras: dict[str, list[str]]) -> set[str]:
    """The distributions an extra pulls in, the project's own extras it names expanded."""
    found: set[str] = set()
    for requirement in extras[name]:
        distribution, _, rest = requirement.partition("[")
        if distribution == "repeat-reminder-langchain":
            for other in rest.rstrip("]").split(","):
                found |= _expanded(other, extras)
        else:
            found.add(_name(requirement))
    return found


def test_each_extra_pulls_only_what_it_is_for() -> None:
    extras = _extras()

    assert _expanded("plot", extras) == {"matplotlib"}
    assert _expanded("audit", extras) == {"ijson"}
    assert _expanded("checkpointers", extras) == {
        "langgraph-checkpoint-postgres",
        "langgraph-checkpoint-sqlite",
        "psycopg",
    }
    assert _expanded("providers", extras) == {"langchain-openai", "langchain-anthropic"}
    assert _expanded("otel", extras) == {"opentelemetry-api"}
    notebooks = _expanded("notebooks", extras)
    assert {"ipykernel", "nbclient", "nbformat"} <= notebooks
    assert "matplotlib" in notebooks  # the quickstart draws plot_timeline
    assert "pytest" not in notebooks and "ijson" not in notebooks
    others = set().union(*(_expanded(name, extras) for name in extras if name != "dev"))
    assert others <= _expanded("dev", extras)
    for requirement in (r for listed in extras.values() for r in listed):
        if not requirement.startswith("repeat-reminder-langchain["):
            assert ">=" in requirement and ",<" in requirement, requirement


def test_the_notebooks_extra_holds_what_the_notebooks_import() -> None:
    # What a package brings in is read from its installed metadata: the extra must be there.
    pytest.importorskip("nbformat", reason="reading what the extra brings needs it installed")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {_name(r) for r in project["dependencies"]}
    wanted = runtime | _expanded("notebooks", _extras())
    # What those bring in themselves (IPython with ipykernel, langgraph-prebuilt with langgraph)
    # counts as brought.
    brought = wanted | {
        _name(r).lower() for name in wanted for r in requires(name) or [] if "extra ==" not in r
    }
    imported: set[str] = set()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                imported |= set(re.findall(r"^\s*(?:from|import) ([\w.]+)", source, re.M))
    owners = packages_distributions()
    missing = []
    for module in sorted(imported):
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or (ROOT / top).exists() or top == package.__name__:
            continue
        # A namespace shared by several distributions (langgraph): the one with the module.
        path = module.replace(".", "/")
        names = [
            name
            for name in owners[top]
            if len(owners[top]) == 1
            or any(str(f).startswith((f"{path}/", f"{path}.py")) for f in files(name) or [])
        ]
        if not any(name.lower() in brought for name in names):
            missing.append(f"{module} ({', '.join(names)})")
    assert missing == []


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel and the sdist, built from this checkout by the project's build backend."""
    pytest.importorskip("hatchling", reason="the build backend is in the dev extra")
    from hatchling.builders.sdist import SdistBuilder
    from hatchling.builders.wheel import WheelBuilder

    out = tmp_path_factory.mktemp("dist")
    return {
        "sdist": Path(next(SdistBuilder(str(ROOT)).build(directory=str(out)))),
        "wheel": Path(next(WheelBuilder(str(ROOT)).build(directory=str(out)))),
    }


def test_the_sdist_holds_what_its_tests_read(built: dict[str, Path]) -> None:
    with tarfile.open(built["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    # What the package tests read beside the code (the README, the Makefile, the CI script,
    # the metrics guide), and what the documentation tests read (CONTRIBUTING.md, the site's
    # configuration and pages).
    assert {".ci/run", "README.md", "Makefile", "pyproject.toml", "docs/guides/metrics.md"} <= names
    assert {"CONTRIBUTING.md", "mkdocs.yml", "docs/index.md", "docs/reference.md"} <= names
    assert {"tests/test_package.py", "tests/data/checkpoint-0.2.0.sqlite"} <= names


def test_the_release_passes_the_package_index_checks(built: dict[str, Path]) -> None:
    # What an index checks on upload (the metadata, the README rendering), strict.
    pytest.importorskip("twine", reason="the upload checker is in the dev extra")
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, built.values())],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_the_wheel_is_the_package_and_the_version_the_changelog_releases(
    built: dict[str, Path],
) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = set(wheel.namelist())
        info = next(name for name in names if name.endswith(".dist-info/METADATA"))
        meta = wheel.read(info).decode()
        entry_points = wheel.read(info.replace("METADATA", "entry_points.txt")).decode()
        # The migration guide an old import's ImportError names: a wheel has no docs/.
        guide = wheel.read("repeat_reminder_langchain/migration.md")
    assert guide == (ROOT / "docs" / "migration.md").read_bytes()
    # Every module of the package and its type marker, nothing of the tests.
    modules = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "repeat_reminder_langchain").rglob("*.py")
    }
    assert modules | {"repeat_reminder_langchain/py.typed"} <= names
    assert not any(name.startswith(("tests/", "benchmarks/", "evaluation/")) for name in names)
    assert f"\nVersion: {declared['version']}\n" in meta
    assert "Description-Content-Type: text/markdown" in meta
    assert "repeat-reminder = repeat_reminder_langchain.tooling._cli:run" in entry_points
    # The CHANGELOG's latest section is the version the package says it is.
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    latest = re.search(r"^## (\S+)", changelog, re.MULTILINE)
    assert latest is not None and latest[1] == declared["version"]
