"""Arguments read as the tool reads them, so that calls the tool cannot tell apart are one call.

`read_file(offset=100)`, `read_file(offset="100", limit="100")` and `read_file(offset=100,
limit=100)` reach the tool as one input: its schema coerces the strings and fills in the
default. A tool's schema (the `tool_call_schema` a model is shown: a pydantic model, or a JSON
schema for MCP tools) is compiled once into a reading of its calls' arguments: validated,
aliases resolved to field names, and every argument equal to its field's default left out —
the tool cannot tell it from one not given. The arguments no field takes are kept as they are.
A call the schema refuses is read as the model sent it (the tool will refuse it too; it still
counts). A JSON schema's declared defaults are left out alike.

Defaults are left out rather than filled in so that a call written as the tool reads it (the
usual case) has one key whether or not the guard has been shown the tool yet: a middleware
learns the tools from the first model request, after its first count of a history handed in or
of a thread resumed in a new process.

Nothing here imports LangChain: a tool is anything with a `name` and a `tool_call_schema`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel

from ._log import LOGGER_NAME

__all__ = ["ToolSchemas", "reading"]

logger = logging.getLogger(LOGGER_NAME)

Reading = Callable[[dict[str, Any]], dict[str, Any]]
"""The arguments of a call, as one tool reads them."""


def reading(schema: object) -> Reading | None:
    """How a tool whose call schema is `schema` reads its arguments; None: as they are sent."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return _by_model(schema) if schema.model_fields else None
    if isinstance(schema, Mapping):
        return _by_json_schema(schema)
    return None  # no schema, or one of pydantic's first version: read as sent


def _by_model(model: type[BaseModel]) -> Reading:
    taken = frozenset(_names(model))
    defaults = {
        name: field.get_default(call_default_factory=True)
        for name, field in model.model_fields.items()
        if not field.is_required()
    }
    texts = _texts(model)
    defaulted = defaults.keys()

    def read(args: dict[str, Any]) -> dict[str, Any]:
        if texts is not None:
            if defaulted.isdisjoint(args):
                # Most calls: no field with a default named, nothing to leave out. Validating
                # gives back the text sent, or refuses what is not (read as sent): as sent.
                return args
            if texts(args):
                # Text the schema takes as it is: validating would give back the same values.
                given = [n for n, default in defaults.items() if args.get(n, ...) == default]
                if not given:
                    return args  # the call as sent: the turn is not copied for it
                return {name: value for name, value in args.items() if name not in given}
        try:
            read = model.model_validate(args)
            # As Python values, which the key writes in its canonical form: JSON mode would
            # write a set as a list in its hashes' order, which differs from process to process.
            fields = read.model_dump()
        except Exception:  # refused (or not written back once read): the tool sees what was sent
            return args
        for name, default in defaults.items():
            if getattr(read, name, None) == default:
                fields.pop(name, None)  # the tool cannot tell it from an argument not given
        for name, value in args.items():
            if name not in taken and name not in fields:
                fields[name] = value  # no field takes it: the model said it, it counts
        return fields

    return read


_TEXT = (str, str | None)  # the field types a string reaches a tool through unchanged

# The settings of a model that change or refuse a string on its way in or out.
_SHAPING = (
    "str_strip_whitespace",
    "str_to_lower",
    "str_to_upper",
    "str_min_length",
    "str_max_length",
    "coerce_numbers_to_str",
)
# What a model may declare that changes a value on its way in or out.
_DECORATORS = (
    "validators",
    "root_validators",
    "field_validators",
    "model_validators",
    "field_serializers",
    "model_serializers",
    "computed_fields",
)


def _texts(model: type[BaseModel]) -> Callable[[dict[str, Any]], bool] | None:
    """For a model of text fields alone, read as declared, whether a call gives it text alone.

    A call that does (every field it needs, each a string, or None where the field takes
    None) is validated into the very values it sent, so reading it is leaving its defaults
    out; a call that names no field with a default is read as sent, whether validating would
    give its values back or refuse them. Most tools take text, and their calls are read in a
    fraction of the time. None: the model has another field, an alias, a constraint, a
    validator or a serializer; every call is validated.
    """
    fields = model.model_fields
    decorators = model.__pydantic_decorators__
    if (
        any(model.model_config.get(setting) for setting in _SHAPING)
        or any(getattr(decorators, kind) for kind in _DECORATORS)
        or any(
            field.annotation not in _TEXT
            or field.metadata
            or field.alias is not None
            or field.validation_alias is not None
            for field in fields.values()
        )
    ):
        return None
    required = frozenset(name for name, field in fields.items() if field.is_required())
    nullable = frozenset(name for name, field in fields.items() if field.annotation is not str)
    closed = model.model_config.get("extra") == "forbid"

    def given_text(args: dict[str, Any]) -> bool:
        for name, value in args.items():
            if name in fields:
                if type(value) is not str and not (value is None and name in nullable):
                    return False
            elif closed:
                return False  # refused: validating says so
        return args.keys() >= required

    return given_text


def _names(model: type[BaseModel]) -> Iterator[str]:
    """Every key a field of `model` takes: its name and its aliases."""
    for name, field in model.model_fields.items():
        yield name
        for alias in (field.alias, field.validation_alias):
            if isinstance(alias, str):
                yield alias
            elif isinstance(alias, AliasChoices):
                yield from (choice for choice in alias.choices if isinstance(choice, str))


def _by_json_schema(schema: Mapping[str, Any]) -> Reading | None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    defaults = {
        name: field["default"]
        for name, field in properties.items()
        if isinstance(field, Mapping) and "default" in field
    }
    if not defaults:
        return None

    def read(args: dict[str, Any]) -> dict[str, Any]:
        return {
            name: value
            for name, value in args.items()
            if name not in defaults or value != defaults[name]
        }

    return read


class ToolSchemas(dict[str, Reading]):
    """How each tool the guard was shown reads its arguments, by tool name.

    A tool is read once: shown again (the same object), it costs a lookup. A schema that
    cannot be read is logged once and the tool's calls are read as sent.
    """

    limit = 10_000  # tool names come from whatever runs; keep the memory bounded

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, object] = {}  # the tool read, by name

    def learn(self, tool: object) -> None:
        """Read how `tool` reads its arguments, unless this very tool was read already."""
        name = getattr(tool, "name", None)
        if not isinstance(name, str) or self._seen.get(name) is tool:
            return
        if len(self._seen) >= self.limit:
            self._seen.clear()
            self.clear()
        self._seen[name] = tool
        try:
            read = reading(getattr(tool, "tool_call_schema", None))
        except Exception as error:
            logger.warning(
                "tool %r: its schema cannot be read (%s); calls read as sent", name, error
            )
            read = None
        if read is None:
            self.pop(name, None)
        else:
            self[name] = read

    def read(self, tool: str, args: object) -> object:
        """`args`, the arguments of a call to `tool`, as that tool reads them.

        The arguments themselves when the tool reads them as they were sent (most calls are
        written as the tool reads them), or the guard was not shown it.
        """
        read = self.get(tool)
        return args if read is None or type(args) is not dict else read(args)
