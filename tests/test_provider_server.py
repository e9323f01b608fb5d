"""The local provider server: it refuses what each provider refuses and scripts its answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .provider_server import ProviderServer, Script, ToolCall

SAME = {"q": "same"}


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def post(server: ProviderServer, api: str, body: Any, **headers: str) -> httpx.Response:
    if api == "messages":
        url = f"{server.anthropic_base_url}/v1/messages"
        sent = {"x-api-key": "x", "anthropic-version": "2023-06-01", **headers}
    else:
        path = "chat/completions" if api == "chat" else "responses"
        url = f"{server.openai_base_url}/{path}"
        sent = {"authorization": "Bearer x", **headers}
    return httpx.post(url, json=body, headers=sent, timeout=10)


def openai_error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "invalid_request_error"
    return dict(body["error"])


def anthropic_error(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    return str(body["error"]["message"])


# -- OpenAI Chat Completions ------------------------------------------------------------------


def chat_call(call_id: str) -> dict[str, Any]:
    arguments = json.dumps(SAME)
    function = {"name": "probe", "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def chat_turn(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [chat_call(i) for i in ids]}


def tool_message(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "probed same"}


def chat(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": "go"}, *messages], **fields}


def test_chat_accepts_every_call_answered_at_once_and_a_message_after(
    server: ProviderServer,
) -> None:
    body = chat(
        chat_turn("call_a", "call_b"),
        tool_message("call_b"),
        tool_message("call_a"),
        {"role": "system", "content": "a note after the results"},
        {"role": "user", "content": "<system-reminder>\nnote\n</system-reminder>"},
    )
    response = post(server, "chat", body)

    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "done", "refusal": None}
    assert [(e.api, e.status, e.body) for e in server.exchanges] == [("chat", 200, body)]


@pytest.mark.parametrize(
    ("after_calls", "unanswered"),
    [
        ([tool_message("call_a")], "call_b"),
        ([{"role": "user", "content": "wait"}, tool_message("call_a")], "call_a, call_b"),
        ([], "call_a, call_b"),
    ],
    ids=["one-result-missing", "a-message-in-between", "no-result-at-the-end"],
)
def test_chat_rejects_tool_calls_not_followed_by_all_their_results(
    server: ProviderServer, after_calls: list[dict[str, Any]], unanswered: str
) -> None:
    response = post(server, "chat", chat(chat_turn("call_a", "call_b"), *after_calls))

    error = openai_error(response)
    assert error["message"] == (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{unanswered}"
    )
    assert error["param"] == "messages.[1].role"
    assert server.exchanges[-1].status == 400
    assert server.exchanges[-1].error == error["message"]


def test_chat_rejects_a_tool_message_without_a_preceding_tool_call(
    server: ProviderServer,
) -> None:
    response = post(server, "chat", chat({"role": "assistant", "content": "hi"}, tool_message("x")))

    assert openai_error(response) == {
        "message": "Invalid parameter: messages with role 'tool' must be a response to a "
        "preceeding message with 'tool_calls'.",
        "type": "invalid_request_error",
        "param": "messages.[2].role",
        "code": None,
    }


def test_chat_rejects_a_tool_message_answering_a_call_the_turn_did_not_make(
    server: ProviderServer,
) -> None:
    body = chat(chat_turn("call_a"), tool_message("call_a"), tool_message("call_z"))
    error = openai_error(post(server, "chat", body))

    assert error["message"] == (
        "Invalid parameter: 'tool_call_id' of 'call_z' not found in 'tool_calls' of previous "
        "message."
    )


def test_chat_streams_tool_call_deltas_usage_and_done(server: ProviderServer) -> None:
    server.play(Script.repeat("probe", SAME, 1, parallel=2))
    body = chat(stream=True, stream_options={"include_usage": True})
    response = post(server, "chat", body)

    assert response.headers["content-type"] == "text/event-stream"
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert [c.get("id") for c in calls] == ["call_1_0", None, "call_1_1", None]
    arguments = "".join(c["function"]["arguments"] for c in calls if c["index"] == 0)
    assert json.loads(arguments) == SAME
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] > 0


def test_chat_refuses_stream_options_without_streaming(server: ProviderServer) -> None:
    error = openai_error(post(server, "chat", chat(stream_options={"include_usage": True})))
    assert error["param"] == "stream_options"


def test_a_path_no_api_has_is_recorded_as_rejected(server: ProviderServer) -> None:
    response = httpx.post(f"{server.openai_base_url}/completions", json={}, timeout=10)

    assert response.status_code == 404
    assert [(e.api, e.status) for e in server.rejected()] == [("unknown", 404)]


def test_a_request_without_an_api_key_is_unauthorized(server: ProviderServer) -> None:
    openai = post(server, "chat", chat(), authorization="")
    anthropic = post(server, "messages", messages(), **{"x-api-key": ""})

    assert (openai.status_code, anthropic.status_code) == (401, 401)
    assert anthropic.json()["error"]["type"] == "authentication_error"


# -- OpenAI Responses -------------------------------------------------------------------------


def function_call(call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "probe",
        "arguments": json.dumps(SAME),
    }


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "probed same"}


def responses(*items: dict[str, Any], **fields: Any) -> dict[str, Any]:
    user = {"type": "message", "role": "user", "content": "go"}
    return {"model": "gpt-4o", "input": [user, *items], **fields}


def test_responses_accepts_outputs_for_every_call_before_the_next_message(
    server: ProviderServer,
) -> None:
    body = responses(
        function_call("call_a"),
        function_call("call_b"),
        output("call_a"),
        output("call_b"),
        {"role": "system", "content": "a note after the outputs"},  # type may be left out
    )
    response = post(server, "responses", body)

    assert response.status_code == 200, response.text
    [item] = response.json()["output"]
    assert item["type"] == "message"
    assert item["content"][0]["text"] == "done"


@pytest.mark.parametrize(
    "after_calls",
    [
        [output("call_a"), {"type": "message", "role": "user", "content": "next"}],
        [{"type": "message", "role": "user", "content": "next"}, output("call_b")],
        [output("call_a")],
    ],
    ids=["message-before-an-output", "output-after-the-message", "no-output-at-the-end"],
)
def test_responses_rejects_a_function_call_without_its_output_before_the_next_message(
    server: ProviderServer, after_calls: list[dict[str, Any]]
) -> None:
    body = responses(function_call("call_a"), function_call("call_b"), *after_calls)
    error = openai_error(post(server, "responses", body))

    missing = "call_b" if after_calls[0]["type"] == "function_call_output" else "call_a"
    assert error["message"] == f"No tool output found for function call {missing}."
    assert error["param"] == "input"


def test_responses_rejects_an_output_without_its_call(server: ProviderServer) -> None:
    body = responses(function_call("call_a"), output("call_a"), output("call_z"))
    error = openai_error(post(server, "responses", body))

    assert error["message"] == "No tool call found for function call output with call_id call_z."


def test_responses_streams_the_function_call_and_completes(server: ProviderServer) -> None:
    server.play(Script.repeat("probe", SAME, 1))
    response = post(server, "responses", responses(stream=True))

    lines = response.text.splitlines()
    kinds = [line[7:] for line in lines if line.startswith("event: ")]
    assert kinds == [
        "response.created",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    completed = json.loads(lines[-2][6:])
    [item] = completed["response"]["output"]
    assert (item["call_id"], json.loads(item["arguments"])) == ("call_1_0", SAME)


# -- Anthropic Messages -----------------------------------------------------------------------


def tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "probe", "input": SAME}


def tool_result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "probed same"}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def messages(*turns: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "go"}, *turns],
        **fields,
    }


def test_messages_accepts_results_first_then_text_in_the_same_user_turn(
    server: ProviderServer,
) -> None:
    body = messages(
        {"role": "assistant", "content": [tool_use("toolu_a"), tool_use("toolu_b")]},
        {
            "role": "user",
            "content": [tool_result("toolu_b"), tool_result("toolu_a"), text("<system-reminder>")],
        },
        system="Be careful.",
    )
    response = post(server, "messages", body)

    assert response.status_code == 200, response.text
    assert response.json()["content"] == [{"type": "text", "text": "done"}]


def test_messages_rejects_a_system_turn_for_a_model_without_them(server: ProviderServer) -> None:
    body = messages(
        {"role": "assistant", "content": [tool_use("toolu_a")]},
        {"role": "user", "content": [tool_result("toolu_a")]},
        {"role": "system", "content": "a note"},
    )

    assert anthropic_error(post(server, "messages", body)) == (
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` '
        'parameter, not "system" as an input message role.'
    )


@pytest.mark.parametrize("model", ["claude-opus-4-8", "claude-opus-4-8-20260101"])
def test_messages_accepts_a_system_turn_after_a_user_turn_for_the_documented_model(
    server: ProviderServer, model: str
) -> None:
    body = messages(
        {"role": "assistant", "content": [tool_use("toolu_a")]},
        {"role": "user", "content": [tool_result("toolu_a")]},
        {"role": "system", "content": "a note"},
        model=model,
        system="Be careful.",
    )

    assert post(server, "messages", body).status_code == 200


def test_messages_rejects_a_system_turn_that_does_not_follow_a_user_turn(
    server: ProviderServer,
) -> None:
    body = messages(
        {"role": "assistant", "content": "hi"},
        {"role": "system", "content": "a note"},
        model="claude-opus-4-8",
    )

    assert "must follow a `user` message" in anthropic_error(post(server, "messages", body))


@pytest.mark.parametrize(
    ("conversation", "message"),
    [
        (
            [{"role": "assistant", "content": "hi"}],
            'messages: first message must use the "user" role',
        ),
        (
            [{"role": "user", "content": "go"}, {"role": "user", "content": "again"}],
            'messages: roles must alternate between "user" and "assistant", but found multiple '
            '"user" roles in a row',
        ),
        (
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [tool_use("toolu_a")]},
                {"role": "user", "content": [tool_result("toolu_a")]},
                {"role": "user", "content": "<system-reminder>\nnote\n</system-reminder>"},
            ],
            'messages: roles must alternate between "user" and "assistant", but found multiple '
            '"user" roles in a row',
        ),
    ],
    ids=["assistant-first", "two-user-turns", "reminder-as-its-own-turn"],
)
def test_messages_rejects_turns_that_do_not_alternate_from_user(
    server: ProviderServer, conversation: list[dict[str, Any]], message: str
) -> None:
    body = {**messages(), "messages": conversation}
    assert anthropic_error(post(server, "messages", body)) == message


@pytest.mark.parametrize(
    ("next_user", "missing"),
    [
        ([text("<system-reminder>"), tool_result("toolu_a"), tool_result("toolu_b")], "a, b"),
        ([tool_result("toolu_a"), text("note"), tool_result("toolu_b")], "b"),
        ([text("go on")], "a, b"),
    ],
    ids=["text-before-the-results", "text-between-the-results", "no-results"],
)
def test_messages_rejects_tool_use_not_answered_at_the_start_of_the_next_user_turn(
    server: ProviderServer, next_user: list[dict[str, Any]], missing: str
) -> None:
    body = messages(
        {"role": "assistant", "content": [tool_use("toolu_a"), tool_use("toolu_b")]},
        {"role": "user", "content": next_user},
    )

    ids = ", ".join(f"toolu_{x}" for x in missing.split(", "))
    assert anthropic_error(post(server, "messages", body)) == (
        f"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
        "message."
    )


def test_messages_rejects_a_tool_result_without_its_tool_use(server: ProviderServer) -> None:
    body = messages(
        {"role": "assistant", "content": [tool_use("toolu_a")]},
        {"role": "user", "content": [tool_result("toolu_a"), tool_result("toolu_z")]},
    )

    assert anthropic_error(post(server, "messages", body)) == (
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_z. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message."
    )


def test_messages_rejects_an_empty_text_block(server: ProviderServer) -> None:
    body = {**messages(), "messages": [{"role": "user", "content": [text("")]}]}
    assert anthropic_error(post(server, "messages", body)) == (
        "messages: text content blocks must be non-empty"
    )


def test_messages_streams_events_in_the_order_the_sdk_reads_them(server: ProviderServer) -> None:
    server.play(Script.repeat("probe", SAME, 1))
    response = post(server, "messages", messages(stream=True))

    lines = response.text.splitlines()
    kinds = [line[7:] for line in lines if line.startswith("event: ")]
    assert kinds == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    delta = json.loads(lines[lines.index("event: content_block_delta") + 1][6:])
    assert delta["delta"]["type"] == "input_json_delta"
    assert json.loads(delta["delta"]["partial_json"]) == SAME


# -- scripting --------------------------------------------------------------------------------


def test_the_next_answer_follows_the_tool_turns_since_the_last_user_message(
    server: ProviderServer,
) -> None:
    server.play(Script.repeat("probe", SAME, 2))

    def answer(*turns: dict[str, Any]) -> dict[str, Any]:
        response = post(server, "chat", chat(*turns))
        assert response.status_code == 200, response.text
        return dict(response.json()["choices"][0]["message"])

    reminder = {"role": "user", "content": "<system-reminder>\nstop\n</system-reminder>"}
    one = (chat_turn("call_1_0"), tool_message("call_1_0"))
    two = (*one, reminder, chat_turn("call_2_0"), tool_message("call_2_0"))

    assert [c["id"] for c in answer()["tool_calls"]] == ["call_1_0"]
    assert [c["id"] for c in answer(*one)["tool_calls"]] == ["call_2_0"]
    # The reminder is not the user speaking: two turns are made, so the model answers.
    assert answer(*two)["content"] == "done"
    # A real user message starts a new exchange; call ids stay unique in the conversation.
    again = answer(*two, {"role": "assistant", "content": "done"}, {"role": "user", "content": "?"})
    assert [c["id"] for c in again["tool_calls"]] == ["call_4_0"]


def test_a_script_can_be_chosen_by_the_user_text(server: ProviderServer) -> None:
    server.play(Script((ToolCall("other", {"q": "x"}), ToolCall("probe", SAME)), 1), when="both")

    def names(text: str) -> list[str]:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
        message = post(server, "chat", body).json()["choices"][0]["message"]
        return [c["function"]["name"] for c in message.get("tool_calls") or []]

    assert names("both") == ["other", "probe"]
    assert names("anything else") == []


# -- tool_choice, every API ---------------------------------------------------------------------

CHAT_TOOLS = [{"type": "function", "function": {"name": "probe", "parameters": {}}}]
RESPONSES_TOOLS = [{"type": "function", "name": "probe", "parameters": {}}]
MESSAGES_TOOLS = [{"name": "probe", "input_schema": {"type": "object"}}]


def made(api: str, answer: dict[str, Any]) -> str:
    """The text the model answered, or "calls" when it called a tool."""
    if api == "chat":
        message = answer["choices"][0]["message"]
        return "calls" if message.get("tool_calls") else str(message["content"])
    first = (answer["output"] if api == "responses" else answer["content"])[0]
    if first["type"] in ("function_call", "tool_use"):
        return "calls"
    return str(first["content"][0]["text"] if api == "responses" else first["text"])


@pytest.mark.parametrize(
    ("api", "body"),
    [
        ("chat", chat(tools=CHAT_TOOLS, tool_choice="none")),
        ("responses", responses(tools=RESPONSES_TOOLS, tool_choice="none")),
        ("messages", messages(tools=MESSAGES_TOOLS, tool_choice={"type": "none"})),
    ],
)
def test_told_to_call_none_the_model_answers_where_it_would_call(
    api: str, body: dict[str, Any]
) -> None:
    with ProviderServer(Script.repeat("probe", SAME, 3)) as server:
        response = post(server, api, body)
        called = post(server, api, {k: v for k, v in body.items() if k != "tool_choice"})

    assert response.status_code == called.status_code == 200, response.text
    assert made(api, response.json()) == "done"
    assert made(api, called.json()) == "calls"  # the same request, the choice left to it


@pytest.mark.parametrize(
    ("api", "body", "said"),
    [
        (
            "chat",
            chat(tool_choice="none"),
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
        ),
        (
            "chat",
            chat(tools=CHAT_TOOLS, tool_choice="never"),
            "Invalid value: 'never'. Supported values are: 'none', 'auto', and 'required'.",
        ),
        (
            "chat",
            chat(tools=CHAT_TOOLS, tool_choice={"type": "function", "function": {"name": "x"}}),
            "Invalid 'tool_choice': no function 'x' in 'tools'.",
        ),
        (
            "responses",
            responses(tools=RESPONSES_TOOLS, tool_choice={"type": "function", "name": "x"}),
            "Invalid 'tool_choice': no function 'x' in 'tools'.",
        ),
    ],
)
def test_openai_rejects_a_tool_choice_not_in_its_form(
    server: ProviderServer, api: str, body: dict[str, Any], said: str
) -> None:
    error = openai_error(post(server, api, body))
    assert (error["message"], error["param"]) == (said, "tool_choice")


@pytest.mark.parametrize(
    ("choice", "said"),
    [
        # What ChatAnthropic makes of the string "none": a tool of that name, forced.
        ({"type": "tool", "name": "none"}, "tool_choice.name: no tool named 'none'"),
        (
            "none",
            "tool_choice: Input tag 'None' found using 'type' does not match any of the "
            "expected tags: 'auto', 'any', 'tool', 'none'",
        ),
    ],
)
def test_messages_rejects_a_tool_choice_not_in_its_form(
    server: ProviderServer, choice: Any, said: str
) -> None:
    body = messages(tools=MESSAGES_TOOLS, tool_choice=choice)
    assert anthropic_error(post(server, "messages", body)) == said
