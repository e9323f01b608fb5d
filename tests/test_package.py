"""The package's surface: what it exports, what importing it loads, its version."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

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
