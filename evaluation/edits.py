"""Telling, from a shell command's text, whether it changes files: the "edit" of edit-then-re-run.

A coding agent's only tool is often a shell, so an edit is not a tool of its own: it is a
command that writes. `Edits` reads one conversation's commands in order and says which of
them write, from the command text alone (the effect is not in the log):

* an in-place editor: `sed -i`, `perl -i`;
* a redirection to a file: `cat <<'EOF' > f.py`, `echo ... >> f`, `printf ... > f` (not
  `2>&1`, not `> /dev/null`; quoted text and here-document bodies are not read for it);
* a command that changes the tree: `git apply|am|checkout|restore|reset|stash|revert|
  cherry-pick`, `patch`, `applypatch`, `tee`, `mv`, `cp`, `rm`, `touch`, `mkdir`, `ln`,
  `truncate`, `pip install`, `python setup.py`;
* Python that writes: `python -c` or a here-document fed to Python that opens a file for
  writing (`open(..., "w")`, `.write_text(`, `os.remove(`, `shutil.`), and running a script
  that an earlier command of the same conversation wrote with such code in it (`cat <<'EOF' >
  apply_fix.py ... open(path, "w") ... EOF`, then `python apply_fix.py`).

The last kind edits only through a script, and such a script is often a reproduction that
writes scratch files: so `Edits` says which kind a command is, `"writes"` (its own text
writes) or `"runs"` (it runs a script that writes), and the evaluation counts both as edits
made between two runs but only the first as a re-run that is itself an edit.

It is a heuristic, and errs on the side of calling a command an edit: a re-run counted as
"after an edit" when nothing was edited only moves it between the kinds of re-run the
evaluation reports, it never hides a firing of the stale detector.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Edit", "Edits"]

Edit = Literal["writes", "runs", ""]
"""How a command edits: by its own text, by running a script that writes, or not at all."""

# A here-document opener: `<<EOF`, `<<'EOF'`, `<<-"EOF"`; the body runs to a line holding the
# delimiter alone.
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1")
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", re.S)
_IN_PLACE = re.compile(r"\b(?:sed|perl)\b[^\n|;&]*?\s-[a-zA-Z]*i")
# `>` or `>>` to a file: not a descriptor duplication (`2>&1`, `>&2`), not `/dev/null`, not a
# descriptor's own redirection (`2> err.txt` writes too, but agents use it for noise).
_REDIRECT = re.compile(r"(?<![0-9&>=-])>>?\s*(?!&|/dev/null\b)[\w./~$'\"{-]")
_COMMANDS = re.compile(
    r"(?:^|[;&|(`]|\$\(|\b(?:then|do|else)\b)\s*(?:sudo\s+|env\s+|\w+=\S*\s+)*"
    r"(?:git\s+(?:apply|am|checkout|restore|reset|stash|revert|cherry-pick)|patch|applypatch|"
    r"tee|mv|cp|rm|touch|mkdir|ln|truncate|pip3?\s+install|python[\d.]*\s+setup\.py)\b",
    re.M,
)
_PYTHON = re.compile(r"\bpython[\d.]*\b")
_WRITES = re.compile(
    r"\bopen\([^)\n]*['\"][wax]b?\+?['\"]|\.write_(?:text|bytes)\(|"
    r"\bos\.(?:remove|unlink|rename|replace)\(|\bshutil\.|\.unlink\("
)
_TARGET = re.compile(r">>?\s*['\"]?([\w./~-]+\.py)\b")
_RUNS = re.compile(r"\bpython[\d.]*\s+(?:-\S+\s+)*['\"]?([\w./~-]+\.py)\b")


class Edits:
    """Which commands of one conversation change files; feed them in the order they ran."""

    def __init__(self) -> None:
        self._scripts: set[str] = set()  # scripts written in this conversation that write

    def __call__(self, command: str) -> Edit:
        """How `command` changes files, if it does (and remember a script it writes that writes)."""
        shell, bodies = _split(command)
        bare = _QUOTED.sub("''", shell)  # a `>` or a `rm` inside quotes is text, not shell
        edit: Edit = ""
        if _IN_PLACE.search(shell) or _REDIRECT.search(bare) or _COMMANDS.search(bare):
            edit = "writes"
        elif _PYTHON.search(shell) and _WRITES.search(command):
            edit = "writes"  # `python -c "...open(p, 'w')..."` or `python - <<EOF ... EOF`
        elif any(_name(run) in self._scripts for run in _RUNS.findall(shell)):
            edit = "runs"
        if any(_WRITES.search(body) for body in bodies):
            self._scripts.update(_name(target) for target in _TARGET.findall(shell))
        return edit


def _split(command: str) -> tuple[str, list[str]]:
    """The command without its here-document bodies, and the bodies."""
    lines = command.split("\n")
    shell: list[str] = []
    bodies: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        shell.append(line)
        index += 1
        for opener in _HEREDOC.finditer(line):
            delimiter = opener.group(2)
            body: list[str] = []
            while index < len(lines) and lines[index].strip() != delimiter:
                body.append(lines[index])
                index += 1
            index += 1  # the delimiter line
            bodies.append("\n".join(body))
    return "\n".join(shell), bodies


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]
