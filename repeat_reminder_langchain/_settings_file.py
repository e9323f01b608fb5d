"""Settings in a file: `ReminderConfig`'s fields as TOML or JSON, read and written.

A file holds the fields at its top level; `pyproject.toml` holds them in its
`[tool.repeat-reminder]` table. What a file cannot say is refused here with the file's name and
the line or key; what a value must be is the configuration's to check.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from os import PathLike, fspath
from pathlib import Path
from typing import Any

from ._checks import did_you_mean

__all__ = ["SUFFIXES", "read_settings", "settings_text"]

SUFFIXES = (".toml", ".json")
"""The kinds of file the settings may be in."""

_TABLE = "repeat-reminder"  # pyproject.toml's [tool.repeat-reminder]


def read_settings(path: str | PathLike[str], known: Sequence[str]) -> dict[str, Any]:
    """The fields the file at `path` holds, each named in `known`.

    Raises:
        ValueError: The file cannot be read (a directory, say), is not TOML or JSON, or names
            something that is not a field; the message names the file and the line or key.
    """
    name = fspath(path)
    if Path(name).is_dir():  # said before its name's suffix, which a directory's need not have
        raise ValueError(f"{name}: a directory, not a settings file")
    kind = _kind(name)
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or error
        raise ValueError(f"{name}: cannot be read: {why}") from None
    if kind == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{name}: not TOML: {error}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{name}:{error.lineno}:{error.colno}: not JSON: {error.msg}"
            ) from None
    if Path(name).name == "pyproject.toml":
        tool = data.get("tool")
        data = tool.get(_TABLE) if isinstance(tool, dict) else None
        if data is None:
            raise ValueError(f"{name}: no [tool.{_TABLE}] table")
    if not isinstance(data, dict):
        raise ValueError(f"{name}: the settings must be a table of fields, got {data!r}")
    for key in data:
        if key not in known:
            raise ValueError(f"{name}: unknown setting {key!r}{did_you_mean(key, known, 'fields')}")
    return data


def settings_text(
    fields: Mapping[str, Any], path: str | PathLike[str], unsaid: Mapping[str, Any] = {}
) -> str:
    """`fields` (plain values: strings, numbers, lists, a table of lists) as the file `path` is.

    TOML has no null: a field that is None is left out of it, and so reads back as what
    `unsaid` says a field left out reads as; a None that would read back as something else is
    refused. With no field to set, a TOML file says so in a comment (JSON has none: `{}`).

    Raises:
        ValueError: `path` is neither `.toml` nor `.json`, or a None TOML cannot hold.
    """
    if _kind(fspath(path)) == ".json":
        return json.dumps(dict(fields), indent=2, ensure_ascii=False) + "\n"
    for name, value in fields.items():
        if value is None and unsaid.get(name) is not None:
            raise ValueError(
                f"{name}: None cannot be written to TOML, which has no null, and the "
                f"default is {unsaid[name]!r}: write the settings as .json"
            )
    if not fields:
        return "# The defaults fit: no setting to change.\n"
    lines, tables = [], []
    for name, value in fields.items():
        if isinstance(value, Mapping):
            tables.append((name, value))
        elif value is not None:
            lines.append(f"{name} = {_toml(value)}")
    for name, table in tables:
        inner = [(key, v) for key, v in table.items() if isinstance(v, Mapping)]  # words
        rows = [(key, v) for key, v in table.items() if not isinstance(v, Mapping)]
        if rows or not inner:
            lines += ["", f"[{name}]", *(f"{_toml(key)} = {_toml(v)}" for key, v in rows)]
        for key, sub in inner:
            lines += ["", f"[{name}.{_toml(key)}]"]
            lines += [f"{_toml(k)} = {_toml(v)}" for k, v in sub.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def _kind(name: str) -> str:
    suffix = Path(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{name}: a settings file is .toml or .json")
    return suffix


def _toml(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_toml, value)) + "]"
    # A JSON string or number is TOML's too: the same quotes, and escapes TOML reads.
    return json.dumps(value, ensure_ascii=False)
