"""A file the user names is never lost: what is written goes beside it, renamed over it whole.

Every command that writes a file (`audit --html`, `--write-config`, `ReminderConfig.to_file`)
writes through `Beside`: the new text goes into a file of its own in the same folder, and only
when it is complete does a rename put it in the file's place, in one step. A failure, an
interrupt or a kill before that leaves the file the user had as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from os import PathLike, fspath
from types import TracebackType

__all__ = ["Beside", "same_file"]


class Beside:
    """The new text of `path`, in a file beside it until `commit` renames it over `path`.

    Made when the command starts, so that a folder that cannot be written fails before the
    work; `discard` (or leaving the `with` block by an exception) removes it, `path` untouched.

    Raises:
        OSError: The folder cannot take a new file.
    """

    def __init__(self, path: str | PathLike[str]) -> None:
        self.path = fspath(path)
        folder, name = os.path.split(os.path.abspath(self.path))
        self.partial = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.partial")
        # Created with the mode a new file gets (the umask applies), not a temporary file's.
        os.close(os.open(self.partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))

    def commit(self, text: str) -> None:
        """Write `text`, then put it in the place of `path` (keeping that file's mode)."""
        try:
            with open(self.partial, "w", encoding="utf-8") as file:
                file.write(text)
            if os.path.exists(self.path):
                shutil.copymode(self.path, self.partial)
            os.replace(self.partial, self.path)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Remove the new text; `path` stays as it was."""
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.partial)

    def __enter__(self) -> Beside:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is not None:
            self.discard()


def same_file(one: str | PathLike[str], other: str | PathLike[str]) -> bool:
    """Whether two names are one file: the same path once resolved, or one file by two names."""
    if os.path.realpath(one) == os.path.realpath(other):
        return True
    try:
        return os.path.samefile(one, other)
    except OSError:  # one of them is not there (yet): only its path could say
        return False
