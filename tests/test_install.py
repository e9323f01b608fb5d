"""The install hints: a pip command that works from where the package was installed."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import pytest

from repeat_reminder_langchain import _install
from repeat_reminder_langchain._install import install_command, install_hint

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("direct_url", "wanted"),
    [
        (None, "pip install 'repeat-reminder-langchain[otel]'"),
        ({"url": "file:///src/rr", "dir_info": {"editable": True}},
         "pip install -e '/src/rr[otel]'"),
        ({"url": "file:///src/my%20rr", "dir_info": {}}, "pip install '/src/my rr[otel]'"),
        (
            {"url": "file:///dist/repeat_reminder_langchain-0.1.0-py3-none-any.whl",
             "archive_info": {}},
            "pip install '/dist/repeat_reminder_langchain-0.1.0-py3-none-any.whl[otel]'",
        ),
        (
            {"url": "https://github.com/o/rr.git",
             "vcs_info": {"vcs": "git", "commit_id": "4c6166e", "requested_revision": "main"}},
            "pip install 'repeat-reminder-langchain[otel] @ git+https://github.com/o/rr.git@4c6166e'",
        ),
        (
            {"url": "https://example.com/rr-0.1.0.tar.gz", "archive_info": {}},
            "pip install 'repeat-reminder-langchain[otel] @ https://example.com/rr-0.1.0.tar.gz'",
        ),
    ],
)  # fmt: skip
def test_the_command_names_where_the_package_came_from(
    direct_url: dict[str, Any] | None, wanted: str
) -> None:
    assert install_command("otel", direct_url) == wanted


def test_this_installation_is_named_as_it_was_installed() -> None:
    recorded = distribution("repeat-reminder-langchain").read_text("direct_url.json")
    hint = install_hint("checkpointers")
    assert hint == install_command("checkpointers", json.loads(recorded) if recorded else None)
    if recorded and json.loads(recorded)["url"] == ROOT.as_uri():
        # Installed from this checkout, as `make test` does: the command names it.
        assert hint == f"pip install -e '{ROOT}[checkpointers]'"


def test_a_package_no_installer_put_there(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(_install, "distribution", missing)
    assert install_hint("plot") == "pip install 'repeat-reminder-langchain[plot]'"
