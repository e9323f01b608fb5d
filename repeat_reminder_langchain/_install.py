"""The pip command that adds an extra to this installation, from where it was installed.

An error that says an optional package is missing names the command to run. Until the package is
on an index, `pip install 'repeat-reminder-langchain[EXTRA]'` fails for most users: the command
must name the checkout, wheel or repository this installation came from, which pip records in
the distribution's `direct_url.json` (PEP 610).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, distribution
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["install_command", "install_hint"]

_NAME = "repeat-reminder-langchain"


def install_hint(extra: str) -> str:
    """The pip command that adds `extra` to the installation this package was imported from.

    Example:
        >>> install_hint("otel").endswith("[otel]'")
        True
    """
    try:
        recorded = distribution(_NAME).read_text("direct_url.json")
    except PackageNotFoundError:  # imported from a folder no installer put it in
        recorded = None
    return install_command(extra, json.loads(recorded) if recorded else None)


def install_command(extra: str, direct_url: Mapping[str, Any] | None) -> str:
    """The pip command adding `extra`, for an installation `direct_url` (PEP 610) describes.

    No record is an installation from an index; a folder (a checkout) and a local archive (a
    wheel) are named by their path, with `-e` when the folder was installed editable; anything
    else (a repository, an archive on a server) by its URL.

    Example:
        >>> install_command("plot", None)
        "pip install 'repeat-reminder-langchain[plot]'"
        >>> install_command("plot", {"url": "file:///src/rr", "dir_info": {"editable": True}})
        "pip install -e '/src/rr[plot]'"
        >>> install_command("plot", {"url": "https://github.com/o/rr.git",
        ...                          "vcs_info": {"vcs": "git", "commit_id": "4c6166e"}})
        "pip install 'repeat-reminder-langchain[plot] @ git+https://github.com/o/rr.git@4c6166e'"
    """
    if direct_url is None:
        return f"pip install '{_NAME}[{extra}]'"
    url = str(direct_url["url"])
    parts = urlsplit(url)
    if parts.scheme == "file":
        editable = "-e " if direct_url.get("dir_info", {}).get("editable") else ""
        return f"pip install {editable}'{unquote(parts.path)}[{extra}]'"
    vcs = direct_url.get("vcs_info")
    if vcs is not None:
        url = f"{vcs['vcs']}+{url}@{vcs['commit_id']}"
    return f"pip install '{_NAME}[{extra}] @ {url}'"
