"""The package's surface: what it exports, what importing it loads, its version."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib.metadata import metadata, version
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
