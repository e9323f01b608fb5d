"""The documentation site builds, strict: a broken link, a missing anchor, a page left out of the
navigation or a reference to nothing fails the build, and so this test.

It needs the docs extra (MkDocs, Material for MkDocs, mkdocstrings): `make test-lowest` has none
of it and skips this module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import repeat_reminder_langchain as package

pytest.importorskip("mkdocs")
pytest.importorskip("material")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as `make docs` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    assert time.monotonic() - started < 60, "the docs build is to stay fast"
    return out


def test_the_site_builds_strict(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "timeline.png").is_file()
    for page in sorted((ROOT / "docs").rglob("*.md")):
        built = page.relative_to(ROOT / "docs").with_suffix("")
        if built.name != "index":
            built /= "index"
        assert (site / built.with_suffix(".html")).is_file(), page


def test_the_api_reference_renders_every_exported_name(site: Path) -> None:
    # tests/test_docs.py checks that docs/reference.md names each exported object by its path,
    # and each supported name of the tooling and of `replay`.
    source = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    paths = re.findall(r"^::: ([\w.]+)$", source, re.MULTILINE)
    supported = ("repeat_reminder_langchain.tooling.", "repeat_reminder_langchain.replay.")
    exported = [path for path in paths if not path.startswith(supported)]
    assert {path.rpartition(".")[2] for path in exported} == set(package.__all__) - {"__version__"}
    assert "repeat_reminder_langchain.tooling.viz.plot_timeline" in paths
    rendered = (site / "reference" / "index.html").read_text(encoding="utf-8")
    for path in paths:
        assert f'id="{path}"' in rendered, path


def test_make_docs_builds_the_same_site_strict() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\t$(BIN)/mkdocs build --strict -d site\n" in makefile
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
