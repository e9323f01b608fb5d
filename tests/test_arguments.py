"""Arguments read as the tool reads them: calls the tool cannot tell apart are one call."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from repeat_reminder_langchain import _arguments
from repeat_reminder_langchain._arguments import ToolSchemas, reading
from repeat_reminder_langchain._canonical import canonicalize

from .conftest import Guarded, build
from .helpers import ask, call, reminders, scripted, turn


@tool
def read_file(path: str, offset: int = 0, limit: int = 100) -> str:
    """Read lines of a file."""
    return f"lines {offset}..{offset + limit} of {path}"


class Search(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    query: str = Field(alias="q")
    page: int = Field(default=1, validation_alias=AliasChoices("page", "p"))


def read(schema: Any, args: dict[str, Any]) -> str:
    reads = reading(schema)
    assert reads is not None
    return canonicalize(reads(args))


def test_the_three_spellings_of_one_read_file_call_are_read_alike() -> None:
    schema = read_file.tool_call_schema
    spellings = [
        {"path": "a.py", "offset": 100},
        {"path": "a.py", "offset": "100", "limit": "100"},
        {"path": "a.py", "offset": 100, "limit": 100},
    ]
    assert {read(schema, args) for args in spellings} == {'{"offset":100,"path":"a.py"}'}
    # What the tool tells apart stays apart.
    assert read(schema, {"path": "a.py", "offset": 200}) != read(schema, spellings[0])


def test_a_call_written_as_the_tool_reads_it_keeps_its_key_whether_the_tool_was_shown() -> None:
    # So that counts kept before the guard was shown the tool (a history handed in to a new
    # middleware, a thread resumed by another worker) go on after it.
    for args in ({"path": "a.py"}, {"path": "a.py", "offset": 7}, {"path": "a.py", "more": [1]}):
        assert read(read_file.tool_call_schema, args) == canonicalize(args)


def test_aliases_are_read_as_field_names_and_arguments_no_field_takes_are_kept() -> None:
    assert read(Search, {"q": "x"}) == read(Search, {"query": "x", "p": 1})
    assert read(Search, {"q": "x", "mood": "sad"}) == '{"mood":"sad","query":"x"}'


def test_a_call_the_schema_refuses_is_read_as_sent() -> None:
    assert read(read_file.tool_call_schema, {"offset": "ten"}) == '{"offset":"ten"}'


class Tagged(BaseModel):
    query: str
    tags: list[str] = Field(default_factory=list)


def test_a_default_made_by_a_factory_is_left_out_as_a_default_is() -> None:
    assert read(Tagged, {"query": "x", "tags": []}) == read(Tagged, {"query": "x"})
    assert read(Tagged, {"query": "x"}) == '{"query":"x"}'
    assert read(Tagged, {"query": "x", "tags": ["a"]}) == '{"query":"x","tags":["a"]}'


class Hidden(BaseModel):
    query: str
    page: int = 1
    trace: str = Field(default="", exclude=True)  # left out of the schema's dumps


def test_a_field_left_out_of_the_schemas_dump_does_not_stop_its_calls_being_read() -> None:
    assert read(Hidden, {"query": "x", "page": 1}) == read(Hidden, {"query": "x"})


_KEY_OF_A_SET = """
import sys
from pydantic import BaseModel
from repeat_reminder_langchain._arguments import reading
from repeat_reminder_langchain._canonical import canonicalize

class Labels(BaseModel):
    labels: set[str]

sys.stdout.write(canonicalize(reading(Labels)({"labels": ["d", "c", "b", "a", "e"]})))
"""


def test_a_call_giving_a_set_is_read_alike_in_every_process() -> None:
    # A set's order is its hashes', which each process draws anew: read into a list in that
    # order, one call would get another key in each worker, and a thread resumed elsewhere
    # would count it from 1 again.
    keys = {
        subprocess.run(
            [sys.executable, "-c", _KEY_OF_A_SET],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3)
    }
    assert keys == {'{"labels":["a","b","c","d","e"]}'}


def test_json_schema_tools_get_their_declared_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "page": {"type": "integer", "default": 1}},
    }
    assert read(schema, {"q": "x"}) == read(schema, {"q": "x", "page": 1}) == '{"q":"x"}'
    assert read(schema, {"q": "x", "page": 2}) == '{"page":2,"q":"x"}'
    assert reading({"type": "object", "properties": {"q": {"type": "string"}}}) is None
    assert reading({"type": "object"}) is None
    assert reading(None) is None
    assert reading(BaseModel) is None  # no field: nothing to read


def test_injected_arguments_are_not_asked_of_the_model() -> None:
    @tool
    def answer(
        question: str, tool_call_id: Annotated[str, InjectedToolCallId], tries: int = 1
    ) -> str:
        """Answer."""
        return question

    schemas = ToolSchemas()
    schemas.learn(answer)
    assert schemas.read("answer", {"question": "why", "tries": "1"}) == {"question": "why"}
    assert schemas.read("answer", "raw") == "raw"


class Counted:
    """A tool whose schema counts how often it is read."""

    def __init__(self, name: str = "probe") -> None:
        self.name = name
        self.reads = 0

    @property
    def tool_call_schema(self) -> type[BaseModel]:
        self.reads += 1
        return read_file.tool_call_schema  # type: ignore[return-value]


def test_a_tool_is_read_once_however_often_it_is_shown() -> None:
    schemas, shown = ToolSchemas(), Counted()
    for _ in range(5):
        schemas.learn(shown)
    assert shown.reads == 1
    again = Counted()  # a tool rebuilt: read again
    schemas.learn(again)
    assert again.reads == 1
    untouched = {"offset": "1"}
    assert schemas.read("other", untouched) is untouched  # a tool it was not shown: as sent
    assert schemas.read("probe", {"path": "p", "offset": "0"}) == {"path": "p"}


def test_a_schema_that_cannot_be_read_is_logged_and_its_calls_read_as_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        name = "read_file"

        @property
        def tool_call_schema(self) -> Any:
            raise RuntimeError("forward reference")

    schemas = ToolSchemas()
    schemas.learn(read_file)
    with caplog.at_level(logging.WARNING):
        schemas.learn(Broken())
    assert caplog.messages == [
        "tool 'read_file': its schema cannot be read (forward reference); calls read as sent"
    ]
    assert "read_file" not in schemas
    schemas.learn(object())  # no name: nothing to read
    assert not schemas


def test_a_tool_with_nothing_to_read_is_read_as_sent_and_nothing_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    class Plain:
        """A tool as the guard may be shown one: a name, and no call schema."""

        name = "plain"

    schemas = ToolSchemas()
    with caplog.at_level(logging.WARNING):
        schemas.learn(now)  # a schema with no field
        schemas.learn(Plain())
    assert caplog.messages == []  # neither is a schema that cannot be read
    assert not schemas
    sent = {"at": "noon"}
    assert schemas.read("now", sent) is sent and schemas.read("plain", sent) is sent


def test_the_tools_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ToolSchemas, "limit", 2)
    schemas = ToolSchemas()
    for name in ("a", "b", "c"):
        schemas.learn(StructuredTool.from_function(lambda q="": q, name=name, description="x"))
    assert list(schemas) == ["c"]


def spellings() -> list[AIMessage]:
    """One read_file call, in the three spellings the tool cannot tell apart, then again."""
    args = [
        {"path": "a.py", "offset": 100},
        {"path": "a.py", "offset": "100", "limit": "100"},
        {"path": "a.py", "offset": 100, "limit": 100},
        {"path": "a.py", "offset": "100"},
        {"path": "a.py", "offset": 100.0, "limit": 100},
    ]
    return [turn(call("read_file", each)) for each in args]


def test_every_face_counts_the_spellings_of_one_call_as_one(guarded: Any) -> None:
    agent: Guarded = guarded(scripted(spellings()), tools=[read_file])
    messages = agent.invoke(ask())

    assert reminders(messages) == [("gentle", "read_file", 3), ("detailed", "read_file", 5)]
    # The reminder shows what was compared: the call as the tool reads it.
    detailed = [m for m in messages if "consecutive_calls: 5" in str(m.content)]
    assert '- arguments: {"offset":100,"path":"a.py"}' in str(detailed[0].content)
    # The results are the tool's own, unchanged.
    results = {m.content for m in messages if isinstance(m, ToolMessage)}
    assert results == {"lines 100..200 of a.py"}


def test_the_block_refuses_a_call_spelt_otherwise(thread: str) -> None:
    agent = build(
        "middleware",
        scripted(spellings()),
        [read_file],
        checkpointer=InMemorySaver(),
        thresholds=[2],
        escalate_after=3,
        exit_behavior="block",
    )
    messages = agent.invoke(ask(), thread)
    results = [m.status for m in messages if isinstance(m, ToolMessage)]
    assert results[:3] == ["success", "success", "error"]  # the third spelling is refused


@tool
def grep(pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search files."""
    return f"no match for {pattern} in {path}"


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    mode: str = "r"


class Stripped(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)

    path: str


class Lowered(BaseModel):
    name: Annotated[str, Field(max_length=5)]


class Renamed(BaseModel):
    path: str = "."
    pattern: str = Field("", validation_alias="p")  # taken as "p" only


_TEXT_ARGS = [
    {"pattern": "TODO"},
    {"pattern": "TODO", "path": "."},
    {"pattern": "TODO", "path": "src", "glob": None},
    {"pattern": "TODO", "glob": "*.py", "more": 1},  # no field takes it: kept
    {"pattern": 7},  # not text: validated (refused, read as sent)
    {"path": "."},  # a required field missing: refused
    {"pattern": None},
    {},
    # Refused beside a default given as it is: read as sent, the default with it.
    {"pattern": 7, "path": "."},  # not text
    {"pattern": None, "path": "."},  # None where the field takes none
    {"pattern": "TODO", "path": ".", "glob": 7},  # not text where the field takes None
    {"path": "a", "mode": "r", "more": 1},  # a key no field takes, where none is let in
    {"p": "", "path": "."},  # the name a field is taken by
    # No field with a default named: read as sent, refused or not.
    {"more": 1},
    {"pattern": "TODO", "more": 1},
    {"pattern": ["TODO"]},
]


@pytest.mark.parametrize(
    "schema", [grep.tool_call_schema, Closed, Stripped, Lowered, Renamed], ids=lambda s: s.__name__
)
@pytest.mark.parametrize("args", [*_TEXT_ARGS, {"path": " a ", "mode": "r"}, {"name": "abcdefg"}])
def test_a_tool_that_takes_text_reads_a_call_as_validating_it_would(
    monkeypatch: pytest.MonkeyPatch, schema: type[BaseModel], args: dict[str, Any]
) -> None:
    # The shortcut for text (no validation when the call sends text the schema takes as it
    # is) reads every call as the full reading does, for the schemas it serves and those it
    # must leave to validation (extra forbidden, whitespace stripped, a constraint).
    quick = read(schema, args)
    monkeypatch.setattr(_arguments, "_texts", lambda model: None)
    assert quick == read(schema, args)


def test_the_shortcut_serves_text_only_schemas() -> None:
    assert _arguments._texts(grep.tool_call_schema) is not None
    assert _arguments._texts(Closed) is not None
    for other in (Stripped, Lowered, Search, Renamed, read_file.tool_call_schema):
        assert _arguments._texts(other) is None


def test_a_call_read_as_sent_is_not_copied() -> None:
    schemas = ToolSchemas()
    schemas.learn(grep)
    schemas.learn(read_file)
    as_sent = {"pattern": "TODO"}
    assert schemas.read("grep", as_sent) is as_sent
    assert schemas.read("grep", {"pattern": "TODO", "path": "."}) == as_sent
    # A default given as something else is the call as sent: nothing left out, nothing copied.
    other = {"pattern": "TODO", "path": "src"}
    assert schemas.read("grep", other) is other
