"""Reading saved conversations, one at a time, in the formats logs come in.

What a source holds is worked out per conversation, no flag needed:

* the message format: LangChain message dicts (as `messages_to_dict` writes them), OpenAI
  chat-completions messages (`role`, `tool_calls` with `function.arguments` as a JSON string,
  `role: "tool"` results) or Anthropic Messages (`tool_use` / `tool_result` content blocks);
* the wrapping: a bare list of messages, or a record with one field holding the list (such as
  `{"messages": [...]}` or τ-bench's `{"task_id", "traj", ...}`; `messages_key` names the field
  when several could be it);
* the file: JSON Lines (read line by line), or one JSON document (a top-level array is read
  item by item with `ijson`, when it is installed), gzip-compressed or not, with or without a
  UTF-8 byte-order mark; `-` is standard input.

Only one conversation is held at a time, so memory is bounded by the largest conversation.
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import os
import sys
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import orjson
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)

__all__ = ["ID_KEYS", "Conversation", "LogError", "LogReader", "kind_of", "to_messages"]

ID_KEYS = (
    "id",
    "conversation_id",
    "thread_id",
    "session_id",
    "task_id",
    "instance_id",
    "trajectory_id",
)
"""Record fields read, in this order, as a conversation's id (unless `id_key` names one)."""

_SNIFF = 1 << 20  # a first line longer than this is read as part of one JSON document
_RELOCATE = 256 << 20  # a broken document up to this size is re-read to say where it broke
_NOTED = 5  # empty conversations each said, with `note`
_SQLITE = b"SQLite format 3\x00"  # how every SQLite database file starts
_LINE_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
_LANGCHAIN_TYPES = frozenset(
    {"human", "ai", "system", "tool", "function", "chat", "remove", "developer"}
    | {"HumanMessageChunk", "AIMessageChunk", "SystemMessageChunk", "ToolMessageChunk"}
)
_ROLES = {"human": "user", "ai": "assistant"}


class LogError(ValueError):
    """Input the audit cannot read; the message says where (file, line, column) and why."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation read from a log, or a thread read from a checkpointer.

    Attributes:
        index: Its position among all conversations read, from 0, across every source.
        id: The record's id, when the record has one; a thread's id.
        source: The file it came from (`-` for standard input), or the checkpointer's URL.
        messages: The messages, as LangChain messages.
        positions: For each message, the index of the input message it came from (an
            Anthropic user message holding tool results becomes several messages).
        format: `"langchain"`, `"openai"` or `"anthropic"`.
        checkpoint: For a thread, the id of the checkpoint its messages were read from.
    """

    index: int
    id: str | None
    source: str
    messages: list[BaseMessage]
    positions: tuple[int, ...]
    format: str
    checkpoint: str | None = None


class _Counted(io.RawIOBase):
    """A raw stream that counts what is read through it: bytes, for a progress bar."""

    def __init__(self, raw: IO[bytes], prefix: bytes = b"") -> None:
        self._raw = raw
        self._prefix = prefix
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._prefix:
            size = min(len(view), len(self._prefix))
            view[:size] = self._prefix[:size]
            self._prefix = self._prefix[size:]
            return size
        data = self._raw.read(len(view))
        view[: len(data)] = data
        self.count += len(data)
        return len(data)


class _Where:
    """Where a value came from, for error messages: a line of JSON Lines or an array item."""

    __slots__ = ("item", "line", "source")

    def __init__(self, source: str, line: int | None = None, item: int | None = None) -> None:
        self.source, self.line, self.item = source, line, item

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.source}:{self.line}"
        if self.item is not None:
            return f"{self.source}: item {self.item}"
        return self.source


class LogReader:
    """Reads conversations from files, globs and standard input, one at a time.

    Args:
        messages_key: The record field holding the messages (a dotted path for a nested
            one), when a record has several fields that could be it.
        id_key: The record field holding the conversation's id; by default the first of
            `ID_KEYS` a record has.
        skip_bad: Count and skip what cannot be read (a line that is not JSON, a record with
            no messages, a message of no known format) instead of stopping at it.
        stdin: The stream `-` reads (standard input by default).
        note: Told, as a line, of each of the first few empty conversations (a record whose
            list is empty, say): read all the same, as a conversation with nothing to count.

    Attributes:
        skipped: What was skipped so far, with `skip_bad`.
        problems: The first few of those, each as an error message.
        empty: Empty conversations read so far.
        total: The size of the files named, in bytes (standard input not included).
        sources: The files named, globs expanded.
    """

    def __init__(
        self,
        *,
        messages_key: str | None = None,
        id_key: str | None = None,
        skip_bad: bool = False,
        stdin: IO[bytes] | None = None,
        note: Callable[[str], None] | None = None,
    ) -> None:
        self.messages_key = messages_key
        self.id_key = id_key
        self.skip_bad = skip_bad
        self.skipped = 0
        self.problems: list[str] = []
        self.empty = 0
        self._note = note
        self.total = 0
        self.sources: list[str] = []
        self._stdin = stdin
        self._index = 0
        self._counted: list[_Counted] = []
        self._finished = 0

    @property
    def read_bytes(self) -> int:
        """Bytes read so far from every source."""
        return self._finished + sum(counted.count for counted in self._counted)

    def expand(self, sources: Sequence[str]) -> list[str]:
        """The files named: globs expanded (sorted), `-` kept; every one must exist.

        Raises:
            LogError: A glob matches nothing, or a file is not there.
        """
        found: list[str] = []
        for source in sources:
            if source == "-":
                found.append(source)
            elif any(char in source for char in "*?["):
                matches = sorted(glob.glob(source, recursive=True))
                if not matches:
                    raise LogError(f"{source}: no file matches this pattern")
                found.extend(matches)
            elif not os.path.isfile(source):
                what = "is a directory" if os.path.isdir(source) else "no such file"
                raise LogError(f"{source}: {what}")
            else:
                found.append(source)
        self.total = sum(os.path.getsize(path) for path in found if path != "-")
        self.sources = found
        return found

    def read(self, sources: Sequence[str]) -> Generator[Conversation, None, None]:
        """Every conversation of every source, in order.

        Raises:
            LogError: Something cannot be read (unless `skip_bad` says to skip it).
        """
        for source in self.expand(sources):
            yield from self._read_source(source)

    def _raw(self, source: str) -> IO[bytes]:
        if source == "-":
            return self._stdin if self._stdin is not None else sys.stdin.buffer
        try:
            return open(source, "rb")
        except OSError as error:
            raise LogError(f"{source}: cannot open it ({error.strerror})") from None

    @staticmethod
    def _open(counted: _Counted) -> IO[bytes]:
        """The bytes of a source: decompressed when gzip, without a byte-order mark."""
        stream: Any = io.BufferedReader(counted, buffer_size=1 << 16)
        if stream.peek(2)[:2] == b"\x1f\x8b":
            stream = io.BufferedReader(gzip.GzipFile(fileobj=stream), buffer_size=1 << 16)
        if stream.peek(3)[:3] == b"\xef\xbb\xbf":
            stream.read(3)
        return stream  # type: ignore[no-any-return]

    def _read_source(self, source: str) -> Iterator[Conversation]:
        raw = self._raw(source)
        counted = _Counted(raw)
        self._counted.append(counted)
        try:
            stream = self._open(counted)
            if stream.peek(len(_SQLITE))[: len(_SQLITE)] == _SQLITE:  # type: ignore[attr-defined]
                # A checkpointer's database named as a file: its bytes say nothing to help.
                url = "sqlite:///" + ("PATH" if source == "-" else source)
                raise LogError(
                    f"{source}: a SQLite database, not saved conversations; a LangGraph "
                    f"checkpointer's threads are audited with --checkpointer {url}"
                )
            yield from self._conversations(source, self._values(source, stream))
        except (OSError, EOFError, zlib.error) as error:
            raise LogError(f"{source}: cannot read it ({_reason(error)})") from None
        finally:
            self._counted.remove(counted)
            self._finished += counted.count
            if source != "-":
                raw.close()

    def _values(self, source: str, stream: IO[bytes]) -> Iterator[tuple[Any, _Where]]:
        """The top-level values of a source: its lines, or its document's items."""
        if source.lower().endswith(_LINE_SUFFIXES):
            yield from self._lines(source, stream, 0)
            return
        number, first = 0, b""
        while not first.strip():
            first = stream.readline(_SNIFF)
            number += 1
            if not first:
                raise LogError(f"{source}: empty: it holds no conversations")
        whole = first.endswith(b"\n") or len(first) < _SNIFF
        if whole and (value := _loads(first)) is not _NOT_JSON:
            yield value, _Where(source, line=number)
            yield from self._lines(source, stream, number)
            return
        skipped_lines = b"\n" * (number - 1)
        rest = io.BufferedReader(_Counted(stream, skipped_lines + first), buffer_size=1 << 16)
        yield from _document(source, rest, self._reopen(source))

    def _reopen(self, source: str) -> Callable[[], bytes] | None:
        if source == "-":
            return None

        def whole() -> bytes:
            with open(source, "rb") as raw:
                start = raw.read(2)
                raw.seek(0)
                if start == b"\x1f\x8b":
                    with gzip.GzipFile(fileobj=raw) as unzipped:
                        return unzipped.read(_RELOCATE + 1)
                return raw.read(_RELOCATE + 1)

        return whole

    def _lines(self, source: str, stream: IO[bytes], number: int) -> Iterator[tuple[Any, _Where]]:
        for line in stream:
            number += 1
            if not line.strip():
                continue
            value = _loads(line)
            if value is _NOT_JSON:
                self._skip(f"{source}:{number}:{_line_problem(line)}")
                continue
            yield value, _Where(source, line=number)

    def _skip(self, problem: str) -> None:
        if not self.skip_bad:
            raise LogError(problem)
        self.skipped += 1
        if len(self.problems) < 5:
            self.problems.append(problem)

    def _conversations(
        self, source: str, values: Iterable[tuple[Any, _Where]]
    ) -> Iterator[Conversation]:
        pending: list[Any] = []  # message dicts one value each: together one conversation
        pending_at: _Where | None = None
        read = 0
        for value, where in _empty_lines(values):
            if isinstance(value, Mapping) and _is_message(value):
                if read:
                    self._skip(f"{where}: mixes single messages and whole conversations")
                    continue
                if pending_at is None:
                    pending_at = where
                pending.append(value)
                continue
            if pending:
                problem = f"{where}: mixes single messages and whole conversations"
                self._skip(problem)
                continue
            for found in self._from_value(value, where):
                read += 1
                yield found
        if pending and pending_at is not None:
            for found in self._from_value(pending, pending_at):
                read += 1
                yield found
        if not read and not self.skipped:
            raise LogError(f"{source}: holds no conversations")

    def _from_value(self, value: Any, where: _Where) -> Iterator[Conversation]:
        """The conversations one top-level value holds (a list of them, or one)."""
        try:
            if isinstance(value, list) and value and not _is_message(value[0]):
                if not all(isinstance(item, (list, Mapping)) for item in value):
                    raise LogError(f"{where}: a list of conversations holds something else")
                for number, item in enumerate(value):
                    yield self._conversation(item, where, number)
                return
            yield self._conversation(value, where, None)
        except LogError as error:
            self._skip(str(error))

    def _conversation(self, value: Any, where: _Where, number: int | None) -> Conversation:
        at = f"{where}" if number is None else f"{where}: conversation {number}"
        record_id: str | None = None
        record = value
        if isinstance(value, Mapping):
            record_id = self._id(value)
            value = self._unwrap(value, at)
        if not isinstance(value, list):
            raise LogError(f"{at}: expected a conversation or a record, got {kind_of(value)}")
        try:
            messages, positions, kind = to_messages(value)
        except LogError as error:
            raise LogError(f"{at}: {error}") from None
        if not messages:
            self._empty(at, record)
        index = self._index
        self._index += 1
        return Conversation(index, record_id, where.source, messages, positions, kind)

    def _empty(self, at: str, record: Any) -> None:
        """An empty conversation: nothing in it is bad, and nothing to count.

        Said for each of the first few; then once that there are more.
        """
        self.empty += 1
        if self._note is None or self.empty > _NOTED + 1:
            return
        if self.empty > _NOTED:
            self._note("more empty conversations: read, each with nothing to count")
            return
        # A record's empty lists are named: the one taken for its messages is among them.
        empty = (
            [repr(k) for k, v in record.items() if isinstance(v, list) and not v]
            if isinstance(record, Mapping)
            else []
        )
        lists = f"list {empty[0]} is" if len(empty) == 1 else f"lists {', '.join(empty)} are"
        why = f" (the record's {lists} empty)" if empty else ""
        self._note(f"{at}: an empty conversation{why}: read, with nothing to count")

    def _id(self, record: Mapping[str, Any]) -> str | None:
        keys = (self.id_key,) if self.id_key else ID_KEYS
        for key in keys:
            value = record.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return str(value)
        return None

    def _unwrap(self, record: Mapping[str, Any], at: str) -> Any:
        if self.messages_key is not None:
            value: Any = record
            for part in self.messages_key.split("."):
                if not isinstance(value, Mapping) or part not in value:
                    raise LogError(f"{at}: the record has no field {self.messages_key!r}")
                value = value[part]
            return value
        fields = [key for key, item in record.items() if _is_message_list(item)]
        if len(fields) == 1:
            return record[fields[0]]
        if fields:
            names = ", ".join(map(repr, fields))
            raise LogError(
                f"{at}: the fields {names} all hold messages: name one with --messages-key"
            )
        # A field holding an empty list is most likely the conversation, with nothing in it.
        if any(isinstance(item, list) and not item for item in record.values()):
            return []
        names = ", ".join(map(repr, list(record)[:8])) or "none"
        raise LogError(f"{at}: a record with no list of messages (its fields: {names})")


class _NotJson:
    __slots__ = ()


_NOT_JSON: Any = _NotJson()


def _empty_lines(values: Iterable[tuple[Any, _Where]]) -> Iterator[tuple[Any, _Where]]:
    """The values, but a first line that is an empty list only when another value follows it.

    An empty list is one conversation, an empty one (read with a note; it was dropped, and
    nothing said so), except as a file's one value: that file holds no conversation.
    """
    held: _Where | None = None
    for number, (value, where) in enumerate(values):
        if held is not None:
            yield [], held
            held = None
        if not number and isinstance(value, list) and not value and where.line is not None:
            held = where
            continue
        yield value, where


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:  # what orjson refuses and JSON allows in practice: NaN, integers past 64 bits
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _NOT_JSON


def _line_problem(line: bytes) -> str:
    """`COLUMN: not JSON (why)` for a line that does not parse."""
    try:
        json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as error:
        return f"{error.start + 1}: not UTF-8 text"
    except json.JSONDecodeError as error:
        return f"{error.colno}: not JSON ({error.msg})"
    return "1: not JSON"  # pragma: no cover - only reached when _loads and json disagree


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _document(
    source: str, stream: IO[bytes], whole: Callable[[], bytes] | None
) -> Iterator[tuple[Any, _Where]]:
    """The items of one JSON document's top-level array, or the document itself."""
    try:
        import ijson  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:  # without the audit extra: whole, fine for small files
        data = stream.read()
        value = _loads(data)
        if value is _NOT_JSON:
            raise LogError(_document_problem(source, data)) from None
        if isinstance(value, list):
            for number, item in enumerate(value):
                yield item, _Where(source, item=number)
        else:
            yield value, _Where(source)
        return
    head = stream.peek(_SNIFF).lstrip()[:1]  # type: ignore[attr-defined]
    try:
        if head == b"[":
            for number, item in enumerate(ijson.items(stream, "item", use_float=True)):
                yield item, _Where(source, item=number)
        else:
            for value in ijson.items(stream, "", use_float=True, multiple_values=True):
                yield value, _Where(source)
    except ijson.JSONError as error:
        if whole is None:
            raise LogError(f"{source}: not JSON ({_first_line(error)})") from None
        raise LogError(_document_problem(source, whole(), head != b"[")) from None


def _first_line(error: BaseException) -> str:
    text = str(error.args[0] if error.args else error)
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__


def _document_problem(source: str, data: bytes, several: bool = False) -> str:
    """Where and why a JSON document does not parse: `FILE:LINE:COLUMN: not JSON (why)`."""
    if len(data) > _RELOCATE:
        return f"{source}: not JSON (too large to say where it breaks)"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        return f"{source}:{line}:{column}: not UTF-8 text"
    decoder = json.JSONDecoder()
    at = 0
    try:
        if several:  # concatenated documents are read one after another, as ijson does
            while at < len(text):
                _, at = decoder.raw_decode(text, at)
                while at < len(text) and text[at].isspace():
                    at += 1
        else:
            json.loads(text)
    except json.JSONDecodeError as error:
        return f"{source}:{error.lineno}:{error.colno}: not JSON ({error.msg})"
    return f"{source}: not JSON"  # pragma: no cover - ijson and json disagree


def _is_message(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    role = value.get("role")
    if isinstance(role, str):
        return True
    kind = value.get("type")
    return (
        isinstance(kind, str)
        and kind in _LANGCHAIN_TYPES
        and ("data" in value or "content" in value)
    )


def _is_message_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and _is_message(value[0])


def kind_of(value: Any) -> str:
    """What a value that is not a message is, as an error says it: "an object", "a string", ..."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a number" if isinstance(value, (int, float)) else type(value).__name__


def to_messages(items: Sequence[Any]) -> tuple[list[BaseMessage], tuple[int, ...], str]:
    """A conversation's message dicts as LangChain messages, whatever their format.

    Returns:
        The messages; for each, the index of the dict it came from; and the format found
        (`"langchain"`, `"openai"` or `"anthropic"`).

    Raises:
        LogError: A message of no known format (the message says which one).

    Example:
        >>> messages, _, kind = to_messages([
        ...     {"role": "user", "content": "hi"},
        ...     {"role": "assistant", "content": None, "tool_calls": [
        ...         {"id": "c1", "function": {"name": "ls", "arguments": '{"dir": "."}'}}]},
        ... ])
        >>> kind, messages[1].tool_calls[0]["args"]
        ('openai', {'dir': '.'})
    """
    for number, item in enumerate(items):
        if not _is_message(item):
            raise LogError(f"message {number} is {kind_of(item)}, not a message of a known format")
    if items and "data" in items[0] and "role" not in items[0]:
        return _langchain(items)
    messages: list[BaseMessage] = []
    positions: list[int] = []
    blocks = False
    for number, item in enumerate(items):
        try:
            made, used_blocks = _chat_message(item)
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            raise LogError(f"message {number}: {_reason(error)}") from None
        blocks = blocks or used_blocks
        messages.extend(made)
        positions.extend([number] * len(made))
    return messages, tuple(positions), "anthropic" if blocks else "openai"


def _langchain(items: Sequence[Any]) -> tuple[list[BaseMessage], tuple[int, ...], str]:
    messages: list[BaseMessage] = []
    for number, item in enumerate(items):
        try:
            (message,) = messages_from_dict([item])
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise LogError(
                f"message {number} is not a LangChain message dict "
                f"(as messages_to_dict writes them): {_reason(error)}"
            ) from None
        messages.append(message)
    return messages, tuple(range(len(items))), "langchain"


def _chat_message(item: Mapping[str, Any]) -> tuple[list[BaseMessage], bool]:
    """One chat message (OpenAI or Anthropic); whether it used Anthropic's tool blocks."""
    role = item.get("role") or _ROLES.get(item["type"], item["type"])
    content = item.get("content")
    if role in ("system", "developer"):
        return [SystemMessage(_text(content))], False
    if role in ("tool", "function"):
        status = "error" if item.get("status") == "error" or item.get("is_error") else "success"
        result = ToolMessage(
            _result(content),
            tool_call_id=str(item.get("tool_call_id") or ""),
            name=item.get("name"),
            status=status,
        )
        return [result], False
    if role == "assistant":
        return [_assistant(item, content)], _has_blocks(content, "tool_use")
    if role == "user":
        return _user(content), _has_blocks(content, "tool_result")
    raise ValueError(f"unknown role {role!r}")


def _has_blocks(content: Any, kind: str) -> bool:
    return isinstance(content, list) and any(
        isinstance(block, Mapping) and block.get("type") == kind for block in content
    )


def _user(content: Any) -> list[BaseMessage]:
    if not isinstance(content, list):
        return [HumanMessage(_text(content))]
    found: list[BaseMessage] = []
    rest = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            status = "error" if block.get("is_error") else "success"
            found.append(
                ToolMessage(
                    _result(block.get("content")),
                    tool_call_id=str(block.get("tool_use_id") or ""),
                    status=status,
                )
            )
        else:
            rest.append(block)
    # Tool results are what the tools said, not the user speaking: only text beside them
    # is a user message (and resets the counts, as at run time).
    text = _text(rest)
    if text or not found:
        found.append(HumanMessage(text))
    return found


def _assistant(item: Mapping[str, Any], content: Any) -> AIMessage:
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    raw_calls = list(item.get("tool_calls") or ())
    if isinstance(item.get("function_call"), Mapping):
        raw_calls.append({"id": "", "function": item["function_call"]})
    if isinstance(content, list):
        raw_calls += [
            {"id": block.get("id"), "name": block.get("name"), "args": block.get("input", {})}
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "tool_use"
        ]
    for raw in raw_calls:
        function = raw.get("function") if isinstance(raw.get("function"), Mapping) else raw
        name = function.get("name")
        call_id = str(raw.get("id") or "")
        arguments = function.get("arguments", function.get("args", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as error:
                invalid.append(_invalid(name, function.get("arguments"), call_id, error.msg))
                continue
        if not isinstance(name, str) or not isinstance(arguments, dict):
            invalid.append(_invalid(name, arguments, call_id, "arguments are not an object"))
            continue
        calls.append({"name": name, "args": arguments, "id": call_id, "type": "tool_call"})
    return AIMessage(
        _text(content),
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata=_usage(item.get("usage_metadata") or item.get("usage")),
    )


def _invalid(name: Any, args: Any, call_id: str, why: str) -> dict[str, Any]:
    text = args if isinstance(args, str) or args is None else json.dumps(args, default=str)
    return {
        "name": name if isinstance(name, str) else None,
        "args": text,
        "id": call_id,
        "error": why,
        "type": "invalid_tool_call",
    }


def _usage(usage: Any) -> Any:
    """Token counts as LangChain's `usage_metadata`, from OpenAI's or Anthropic's `usage`."""
    if not isinstance(usage, Mapping):
        return None

    def number(*keys: str) -> int:
        return sum(
            int(value)
            for key in keys
            if isinstance(value := usage.get(key), (int, float)) and not isinstance(value, bool)
        )

    inputs = number("input_tokens", "prompt_tokens")
    inputs += number("cache_creation_input_tokens", "cache_read_input_tokens")
    outputs = number("output_tokens", "completion_tokens")
    total = number("total_tokens") or inputs + outputs
    return {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": total}


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(part for part in parts if part)
    return json.dumps(content, default=str)


def _result(content: Any) -> str:
    return _text(content)
