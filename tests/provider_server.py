"""A local stand-in for the OpenAI and Anthropic HTTP APIs: scripted answers, validated requests.

`ProviderServer` listens on 127.0.0.1 (a port the OS picks) in a thread of the test process and
speaks enough of three APIs for `ChatOpenAI` and `ChatAnthropic` to run agents against it:

* OpenAI Chat Completions, `POST /v1/chat/completions`, plain and streamed;
* OpenAI Responses, `POST /v1/responses`, plain and streamed;
* Anthropic Messages, `POST /v1/messages`, plain and streamed.

**Answers are scripted.** A `Script` says what the model does after a user message: `turns`
assistant turns, each making the same tool calls (several calls make a parallel turn), then a
text answer. The server reads the conversation in the request body and counts the assistant
turns with tool calls since the last real user message; that count alone picks the next answer,
so one server serves any number of concurrent conversations deterministically. A real user
message is one with text of its own that is not a `<system-reminder>`: the guard's reminders and
tool results do not start a new exchange. `play(script, when=text)` gives conversations whose
last real user message is `text` their own script.

**Requests are validated** as the providers do, and a violation is answered with HTTP 400 in
the provider's own error shape and, where the provider's wording is known, its words:

* Chat Completions: an assistant message with `tool_calls` is followed at once by one `tool`
  message per call id; a `tool` message answers a call of the assistant message before it.
* Responses: every `function_call` item has its `function_call_output` before the next message
  item; every output answers a call made earlier.
* Messages: `system` only at the top level, except for the models in
  `ANTHROPIC_IN_PLACE_SYSTEM_MODELS`, where a `system` turn may follow a user turn; user and
  assistant alternate strictly, starting with user (the live API merges consecutive turns of
  one role; this server refuses them, so that a client which sends a reminder as a turn of its
  own after the tool results is caught); each `tool_use` block is answered by `tool_result`
  blocks at the start of the very next user message.
* Every API: a `tool_choice` in the API's own form (Chat Completions: `"none"`, `"auto"`,
  `"required"` or a function of `tools`, and only beside `tools`; Responses: the same strings or
  `{"type": "function", "name": ...}`; Messages: `{"type": "auto" | "any" | "tool" | "none"}`,
  a `tool` one naming a tool of `tools`). Told to call none, the model answers, as the APIs
  promise; otherwise a script's calls are made whatever the request offers (a model that calls
  a tool it was not given).

Every request is recorded (`exchanges`) with its body and the status it got.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ANTHROPIC_IN_PLACE_SYSTEM_MODELS",
    "REMINDER_PREFIX",
    "Exchange",
    "ProviderServer",
    "Script",
    "ToolCall",
]

REMINDER_PREFIX = "<system-reminder>"
"""How a reminder sent as user text starts; such text does not count as the user speaking."""

ANTHROPIC_IN_PLACE_SYSTEM_MODELS = ("claude-opus-4-8",)
"""Models that take a `system` turn inside `messages`.

Anthropic documents mid-conversation system messages for Claude Opus 4.8 only
(platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages). A model id
matches its entry exactly or with a dated suffix (`claude-opus-4-8-20260101`).
"""

_CREATED = 1_700_000_000  # a fixed timestamp: the clients only read it back


# -- scripts ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One call the scripted model makes."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Script:
    """After each user message: `turns` turns, each making `calls` in this order, then `answer`."""

    calls: tuple[ToolCall, ...] = (ToolCall("probe", {"q": "same"}),)
    turns: int = 0
    answer: str = "done"

    @classmethod
    def repeat(
        cls,
        name: str,
        args: Mapping[str, Any],
        turns: int,
        *,
        parallel: int = 1,
        answer: str = "done",
    ) -> Script:
        """The same call, `parallel` times per turn, for `turns` turns, then `answer`."""
        return cls(tuple(ToolCall(name, dict(args)) for _ in range(parallel)), turns, answer)


@dataclass(frozen=True)
class _Reply:
    """The next assistant turn: its calls with their ids, or the answer text."""

    calls: tuple[tuple[str, ToolCall], ...]
    text: str


@dataclass(frozen=True)
class _Turn:
    """A message of a request, reduced to what picks the next answer."""

    role: str
    calls: int = 0
    user_text: str | None = None  # the user's own text, when the message has any


# -- recording ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One request the server received and the status it answered with."""

    api: str  # "chat", "responses", "messages", or "unknown" for a path none of them has
    body: Any
    status: int
    error: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


class RequestRejected(Exception):
    """A request the provider refuses: the message and the parameter it names."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        *,
        status: int = 400,
        kind: str = "invalid_request_error",
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.kind = kind
        self.code = code


# -- the server ---------------------------------------------------------------------------------


class ProviderServer:
    """The three APIs on one local port. Use it as a context manager, or `start()` / `stop()`."""

    def __init__(self, script: Script | None = None) -> None:
        self._default = script or Script()
        self._scripts: dict[str, Script] = {}
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread: threading.Thread | None = None
        self._answered = 0
        self._answer_at_most: int | None = None
        self._released = threading.Event()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ProviderServer:
        # A short poll interval: `stop()` waits for the loop to notice, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="provider-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # a held request ends unanswered
        self._httpd.shutdown()
        # Joins the request threads too (block_on_close), so nothing outlives the test.
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ProviderServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def play(self, script: Script, *, when: str | None = None) -> None:
        """Answer with `script`: every conversation, or those whose last user text is `when`."""
        with self._lock:
            if when is None:
                self._default = script
            else:
                self._scripts[when] = script

    def hold_after(self, answered: int) -> None:
        """Answer `answered` more requests, then keep every later one waiting, unanswered,
        until `stop()`: a client then waits as it would on a slow model, for as long as a
        test needs (to interrupt it, say)."""
        with self._lock:
            self._answer_at_most = self._answered + answered

    @property
    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def bodies(self, api: str | None = None) -> list[Any]:
        """The request bodies received, in order, of one API or all."""
        return [e.body for e in self.exchanges if api is None or e.api == api]

    def rejected(self) -> list[Exchange]:
        """Every request answered with a 4xx status."""
        return [e for e in self.exchanges if 400 <= e.status < 500]

    # -- used by the handler --

    def _held(self) -> bool:
        """Whether this request waits (until `stop()`) instead of being answered."""
        with self._lock:
            if self._answer_at_most is not None and self._answered >= self._answer_at_most:
                return True
            self._answered += 1
            return False

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def _reply(self, turns: Sequence[_Turn], id_prefix: str, calls: bool = True) -> _Reply:
        made, spoken = 0, None
        for turn in reversed(turns):
            if turn.role == "user" and turn.user_text is not None:
                spoken = turn.user_text
                break
            made += turn.role == "assistant" and turn.calls > 0
        with self._lock:
            script = self._scripts.get(spoken or "", self._default)
        if made >= script.turns or not calls:
            return _Reply((), script.answer)
        # Ids are unique within a conversation: numbered by the assistant turn they belong to.
        number = sum(turn.role == "assistant" for turn in turns) + 1
        calls = tuple((f"{id_prefix}{number}_{i}", c) for i, c in enumerate(script.calls))
        return _Reply(calls, "")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], handler: type, provider: ProviderServer) -> None:
        super().__init__(address, handler)
        self.provider = provider


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    timeout = 30  # a client that opens a connection and sends nothing cannot hang shutdown

    def do_POST(self) -> None:
        api = _ROUTES.get(self.path.split("?", 1)[0])
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        provider = self.server.provider
        if provider._held():
            provider._released.wait()
            self.close_connection = True
            return
        if api is None:
            message = f"Unknown request URL: POST {self.path}."
            provider._record(Exchange("unknown", body, 404, message, headers))
            self._send_json(404, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        try:
            _check_headers(api, headers)
            if not isinstance(body, dict):
                raise RequestRejected("We could not parse the JSON body of your request.")
            turns = _VALIDATORS[api](body)
            _check_tool_choice(api, body)
        except RequestRejected as error:
            provider._record(Exchange(api, body, error.status, error.message, headers))
            self._send_json(error.status, _error_body(api, error))
            return
        reply = provider._reply(turns, "toolu_" if api == "messages" else "call_", _calls(body))
        provider._record(Exchange(api, body, 200, None, headers))
        model = str(body.get("model"))
        if body.get("stream") is True:
            self._send_events(_STREAMS[api](reply, model, body))
        else:
            self._send_json(200, _ANSWERS[api](reply, model, body))

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded exchanges instead."""

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        # One request per connection: no pooled connection outlives the event loop of an
        # async test, and shutdown never waits on an idle keep-alive socket.
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _send_events(self, events: Iterator[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for event in events:
                data = event.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading once it had what it needed


def _check_headers(api: str, headers: Mapping[str, str]) -> None:
    if api == "messages":
        if not headers.get("x-api-key") and not headers.get("authorization"):
            raise RequestRejected(
                "x-api-key header is required", status=401, kind="authentication_error"
            )
        if not headers.get("anthropic-version"):
            raise RequestRejected("anthropic-version: header is required")
    elif not headers.get("authorization", "").startswith("Bearer "):
        raise RequestRejected(
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            status=401,
        )


def _error_body(api: str, error: RequestRejected) -> dict[str, Any]:
    if api == "messages":
        return {
            "type": "error",
            "error": {"type": error.kind, "message": error.message},
            "request_id": f"req_{uuid.uuid4().hex[:24]}",
        }
    return {
        "error": {
            "message": error.message,
            "type": error.kind,
            "param": error.param,
            "code": error.code,
        }
    }


def _text_of(content: Any) -> list[str]:
    """The text pieces of a message's content: a string, or a list of blocks or parts."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            block["text"]
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
    return []


def _user_text(content: Any) -> str | None:
    own = [t for t in _text_of(content) if t.strip() and not t.startswith(REMINDER_PREFIX)]
    return "\n".join(own) if own else None


def _require(body: Mapping[str, Any], name: str, message: str) -> Any:
    if body.get(name) is None:
        raise RequestRejected(message, name, code="missing_required_parameter")
    return body[name]


def _check_tool_choice(api: str, body: Mapping[str, Any]) -> None:
    """A `tool_choice` in the API's own form, naming (when it names one) a tool of `tools`."""
    choice, tools = body.get("tool_choice"), body.get("tools") or []
    if choice is None:
        return
    if api == "messages":
        names = [tool.get("name") for tool in tools if isinstance(tool, dict)]
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind not in ("auto", "any", "tool", "none"):
            raise RequestRejected(
                f"tool_choice: Input tag '{kind}' found using 'type' does not match any of the "
                "expected tags: 'auto', 'any', 'tool', 'none'"
            )
        if kind == "tool" and choice.get("name") not in names:  # this server's own wording
            raise RequestRejected(f"tool_choice.name: no tool named {choice.get('name')!r}")
        return
    if not tools:
        raise RequestRejected(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
            "tool_choice",
        )
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise RequestRejected(
                f"Invalid value: '{choice}'. Supported values are: 'none', 'auto', and 'required'.",
                "tool_choice",
                code="invalid_value",
            )
        return
    if api == "chat":
        names = [(tool.get("function") or {}).get("name") for tool in tools]
        named = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
    else:
        names = [tool.get("name") for tool in tools]
        named = choice.get("name") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "function" or named not in names:
        # This server's own wording.
        raise RequestRejected(
            f"Invalid 'tool_choice': no function {named!r} in 'tools'.", "tool_choice"
        )


def _calls(body: Mapping[str, Any]) -> bool:
    """Whether the request lets the model call a tool: not when told to call none."""
    choice = body.get("tool_choice")
    return choice != "none" and not (isinstance(choice, dict) and choice.get("type") == "none")


# -- OpenAI Chat Completions ------------------------------------------------------------------

_CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _validate_chat(body: Mapping[str, Any]) -> list[_Turn]:
    _require(body, "model", "you must provide a model parameter")
    messages = _require(body, "messages", "Missing required parameter: 'messages'.")
    if not isinstance(messages, list) or not messages:
        raise RequestRejected(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
            "messages",
            code="empty_array",
        )
    if body.get("stream_options") is not None and body.get("stream") is not True:
        raise RequestRejected(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        )
    turns: list[_Turn] = []
    calls: list[str] | None = None  # the call ids of the assistant turn being answered
    waiting: list[str] = []
    opened = -1
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _CHAT_ROLES:
            raise RequestRejected(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'function', 'tool', and 'developer'.",
                f"messages[{index}].role",
                code="invalid_value",
            )
        if role == "tool":
            if calls is None:
                raise RequestRejected(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{index}].role",
                )
            call_id = message.get("tool_call_id")
            if call_id not in calls:
                raise RequestRejected(
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in "
                    "'tool_calls' of previous message.",
                    f"messages.[{index}].tool_call_id",
                )
            if call_id in waiting:
                waiting.remove(call_id)
            turns.append(_Turn("tool"))
            continue
        _answered(waiting, opened)
        calls = None
        made = (message.get("tool_calls") or []) if role == "assistant" else []
        if made:
            calls = [call.get("id") for call in made]
            waiting, opened = list(calls), index
        user = _user_text(message.get("content")) if role == "user" else None
        turns.append(_Turn(role, len(made), user))
    _answered(waiting, opened)
    return turns


def _answered(waiting: list[str], index: int) -> None:
    if waiting:
        raise RequestRejected(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(waiting)}",
            f"messages.[{index}].role",
        )


def _chat_usage(body: Mapping[str, Any]) -> dict[str, int]:
    prompt = len(json.dumps(body.get("messages"))) // 4
    return {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}


def _chat_answer(reply: _Reply, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args)},
            }
            for call_id, call in reply.calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": _chat_usage(body),
    }


def _chat_stream(reply: _Reply, model: str, body: Mapping[str, Any]) -> Iterator[str]:
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _data({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": "" if not reply.calls else None})
    for index, (call_id, call) in enumerate(reply.calls):
        start = {"index": index, "id": call_id, "type": "function"}
        yield chunk({"tool_calls": [{**start, "function": {"name": call.name, "arguments": ""}}]})
        arguments = {"index": index, "function": {"arguments": json.dumps(call.args)}}
        yield chunk({"tool_calls": [arguments]})
    if reply.text:
        yield chunk({"content": reply.text})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        yield _data({**base, "choices": [], "usage": _chat_usage(body)})
    yield "data: [DONE]\n\n"


# -- OpenAI Responses -------------------------------------------------------------------------

_RESPONSES_ROLES = ("user", "assistant", "system", "developer")


def _item_kind(item: Any) -> str:
    if not isinstance(item, dict):
        return "?"
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"  # an EasyInputMessage may leave out its type
    return str(kind)


def _validate_responses(body: Mapping[str, Any]) -> list[_Turn]:
    _require(body, "model", "Missing required parameter: 'model'.")
    items = _require(body, "input", "Missing required parameter: 'input'.")
    if isinstance(items, str):
        return [_Turn("user", 0, _user_text(items))]
    if not isinstance(items, list):
        raise RequestRejected("Invalid type for 'input': expected a string or an array.", "input")
    turns: list[_Turn] = []
    made: set[str] = set()
    waiting: list[str] = []
    for index, item in enumerate(items):
        kind = _item_kind(item)
        if kind == "function_call":
            call_id = item.get("call_id")
            made.add(call_id)
            waiting.append(call_id)
            # Consecutive function calls are one assistant turn (parallel calls).
            if turns and turns[-1].role == "assistant" and turns[-1].calls:
                turns[-1] = _Turn("assistant", turns[-1].calls + 1)
            else:
                turns.append(_Turn("assistant", 1))
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in made:
                raise RequestRejected(
                    f"No tool call found for function call output with call_id {call_id}.",
                    "input",
                )
            if call_id in waiting:
                waiting.remove(call_id)
            turns.append(_Turn("tool"))
        elif kind == "message":
            if waiting:
                raise RequestRejected(
                    f"No tool output found for function call {waiting[0]}.", "input"
                )
            role = item.get("role")
            if role not in _RESPONSES_ROLES:
                raise RequestRejected(
                    f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', "
                    "'developer', and 'user'.",
                    f"input[{index}].role",
                    code="invalid_value",
                )
            user = _user_text(item.get("content")) if role == "user" else None
            turns.append(_Turn(role, 0, user))
    if waiting:
        raise RequestRejected(f"No tool output found for function call {waiting[0]}.", "input")
    return turns


def _responses_usage(body: Mapping[str, Any]) -> dict[str, Any]:
    prompt = len(json.dumps(body.get("input"))) // 4
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + 5,
    }


def _responses_items(reply: _Reply) -> list[dict[str, Any]]:
    if reply.calls:
        return [
            {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex}",
                "call_id": call_id,
                "name": call.name,
                "arguments": json.dumps(call.args),
                "status": "completed",
            }
            for call_id, call in reply.calls
        ]
    text = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
    return [
        {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex}",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
    ]


def _response(
    model: str, body: Mapping[str, Any], output: list[dict[str, Any]], status: str
) -> dict[str, Any]:
    return {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": _CREATED,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "error": None,
        "incomplete_details": None,
        "usage": _responses_usage(body) if status == "completed" else None,
    }


def _responses_answer(reply: _Reply, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
    return _response(model, body, _responses_items(reply), "completed")


def _responses_stream(reply: _Reply, model: str, body: Mapping[str, Any]) -> Iterator[str]:
    final = _response(model, body, _responses_items(reply), "completed")
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> str:
        return _event(kind, {"type": kind, "sequence_number": next(sequence), **fields})

    yield event("response.created", response={**final, "status": "in_progress", "output": []})
    for index, item in enumerate(final["output"]):
        if item["type"] == "function_call":
            started = {**item, "arguments": "", "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=started)
            common = {"item_id": item["id"], "output_index": index}
            yield event("response.function_call_arguments.delta", delta=item["arguments"], **common)
            yield event(
                "response.function_call_arguments.done",
                arguments=item["arguments"],
                name=item["name"],
                **common,
            )
        else:
            started = {**item, "content": [], "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=started)
            part = item["content"][0]
            common = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", part={**part, "text": ""}, **common)
            yield event("response.output_text.delta", delta=part["text"], logprobs=[], **common)
            yield event("response.output_text.done", text=part["text"], logprobs=[], **common)
            yield event("response.content_part.done", part=part, **common)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=final)


# -- Anthropic Messages -----------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": "?"} for b in content]
    return []


def _takes_system_turns(model: str) -> bool:
    return any(
        model == name or model.startswith(f"{name}-") for name in ANTHROPIC_IN_PLACE_SYSTEM_MODELS
    )


def _validate_messages(body: Mapping[str, Any]) -> list[_Turn]:
    for name in ("model", "max_tokens", "messages"):
        if body.get(name) is None:
            raise RequestRejected(f"{name}: Field required")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise RequestRejected("messages: at least one message is required")
    in_place = _takes_system_turns(str(body["model"]))
    turns: list[_Turn] = []
    previous: str | None = None  # the role of the last user or assistant turn
    pending: list[str] = []  # tool_use ids of the last assistant turn
    pending_at = -1
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role == "system":
            if not in_place:
                raise RequestRejected(
                    'messages: Unexpected role "system". The Messages API accepts a top-level '
                    '`system` parameter, not "system" as an input message role.'
                )
            # This server's own wording: a system turn goes where the user has the floor.
            if previous == "user":
                turns.append(_Turn("system"))
                continue
            raise RequestRejected(
                f"messages.{index}: a `system` message must follow a `user` message"
            )
        if role not in ("user", "assistant"):
            raise RequestRejected(f"messages.{index}.role: Input should be 'user' or 'assistant'")
        if previous is None and role != "user":
            raise RequestRejected('messages: first message must use the "user" role')
        if role == previous:
            raise RequestRejected(
                'messages: roles must alternate between "user" and "assistant", but found '
                f'multiple "{role}" roles in a row'
            )
        blocks = _blocks(content)
        last = index == len(messages) - 1
        if not blocks and not (role == "assistant" and last):
            raise RequestRejected(
                f"messages.{index}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        if any(b.get("type") == "text" and not b.get("text") for b in blocks):
            raise RequestRejected("messages: text content blocks must be non-empty")
        if role == "user":
            _check_results(blocks, index, pending, pending_at)
            pending = []
            turns.append(_Turn("user", 0, _user_text(content)))
        else:
            pending = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            pending_at = index
            turns.append(_Turn("assistant", len(pending)))
        previous = role
    _check_results([], len(messages), pending, pending_at)
    return turns


def _check_results(
    blocks: Sequence[Mapping[str, Any]], index: int, pending: Sequence[str], pending_at: int
) -> None:
    leading: list[str] = []
    for block in blocks:
        if block.get("type") != "tool_result":
            break
        leading.append(block.get("tool_use_id"))
    missing = [call_id for call_id in pending if call_id not in leading]
    if missing:
        raise RequestRejected(
            f"messages.{pending_at}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )
    for position, block in enumerate(blocks):
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in pending:
            raise RequestRejected(
                f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` block "
                "must have a corresponding `tool_use` block in the previous message."
            )


def _messages_content(reply: _Reply) -> list[dict[str, Any]]:
    if reply.calls:
        return [
            {"type": "tool_use", "id": call_id, "name": call.name, "input": dict(call.args)}
            for call_id, call in reply.calls
        ]
    return [{"type": "text", "text": reply.text}]


def _messages_usage(body: Mapping[str, Any]) -> dict[str, int]:
    return {"input_tokens": len(json.dumps(body.get("messages"))) // 4, "output_tokens": 5}


def _messages_answer(reply: _Reply, model: str, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _messages_content(reply),
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": _messages_usage(body),
    }


def _messages_stream(reply: _Reply, model: str, body: Mapping[str, Any]) -> Iterator[str]:
    final = _messages_answer(reply, model, body)
    usage = final["usage"]
    start = {**final, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield _event("message_start", {"type": "message_start", "message": start})
    yield _event("ping", {"type": "ping"})
    for index, block in enumerate(final["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opened = {**block, "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opened},
        )
        yield _event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": final["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


# -- wiring -----------------------------------------------------------------------------------


def _data(payload: Any) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def _event(kind: str, payload: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"


_ROUTES = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
_VALIDATORS = {
    "chat": _validate_chat,
    "responses": _validate_responses,
    "messages": _validate_messages,
}
_ANSWERS = {"chat": _chat_answer, "responses": _responses_answer, "messages": _messages_answer}
_STREAMS = {"chat": _chat_stream, "responses": _responses_stream, "messages": _messages_stream}
