"""Stored reminders as each provider receives them: each client's request, built offline."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

# The provider clients are optional peers: `make test-lowest` runs without them.
pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain_google_genai")
pytest.importorskip("langchain_openai")

from langchain_anthropic import ChatAnthropic
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import ConfigurableField
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_openai import AzureChatOpenAI, ChatOpenAI

from repeat_reminder_langchain import Reminder, prepare_messages
from repeat_reminder_langchain._messages import no_tool_choice, reminder_message

from .helpers import probe

SAME = {"q": "same"}


def stored_conversation() -> list[BaseMessage]:
    """A system prompt, a tool turn, its result, and the stored system reminder after it."""
    ai = AIMessage("", tool_calls=[{"name": "probe", "args": SAME, "id": "toolu_01"}])
    return [
        SystemMessage("You are a careful agent."),
        HumanMessage("go"),
        ai,
        ToolMessage("probed same", tool_call_id="toolu_01"),
        reminder_message(Reminder("probe", 3, "gentle", '{"q":"same"}')),
    ]


def test_anthropic_without_mid_conversation_system_support_needs_the_rendering() -> None:
    model = ChatAnthropic(model="claude-sonnet-4-5", api_key="dummy")  # type: ignore[call-arg]
    conversation = stored_conversation()

    with pytest.raises(ValueError, match="multiple non-consecutive system messages"):
        model._get_request_payload(conversation)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        payload = model._get_request_payload(prepare_messages(conversation, model))

    assert payload["system"] == "You are a careful agent."
    last = payload["messages"][-1]
    assert last["role"] == "user"
    assert [block["type"] for block in last["content"]] == ["tool_result", "text"]
    assert last["content"][1]["text"].startswith("<system-reminder>\nYou have called `probe`")


def test_anthropic_with_mid_conversation_system_support_gets_it_in_place() -> None:
    model = ChatAnthropic(model="claude-opus-4-8", api_key="dummy")  # type: ignore[call-arg]
    conversation = stored_conversation()

    assert prepare_messages(conversation, model) is conversation
    payload = model._get_request_payload(prepare_messages(conversation, model))
    roles = [m["role"] for m in payload["messages"]]
    assert roles == ["user", "assistant", "user", "system"]
    assert payload["messages"][2]["content"][0]["type"] == "tool_result"


@pytest.mark.parametrize(("name", "role"), [("gpt-4o", "user"), ("gpt-4.1", "system")])
def test_openai_gets_the_reminder_right_after_the_tool_result(name: str, role: str) -> None:
    model = ChatOpenAI(model=name, api_key="dummy")  # type: ignore[arg-type]
    payload = model._get_request_payload(prepare_messages(stored_conversation(), model))

    roles = [m["role"] for m in payload["messages"]]
    assert roles == ["system", "user", "assistant", "tool", role]
    assert payload["messages"][-1]["name"] == "repeat_tool_reminder"


def test_openai_responses_api_keeps_the_reminder_after_the_function_output() -> None:
    model = ChatOpenAI(model="gpt-4.1", api_key="dummy", use_responses_api=True)  # type: ignore[arg-type]
    payload = model._get_request_payload(prepare_messages(stored_conversation(), model))

    kinds = [item.get("role", item["type"]) for item in payload["input"]]
    assert kinds == ["system", "user", "function_call", "function_call_output", "system"]


def test_gemini_drops_a_stored_system_reminder_but_keeps_the_rendered_one() -> None:
    model = ChatGoogleGenerativeAI(model="gemini-2.5-flash", api_key="dummy")
    conversation = stored_conversation()

    raw = model._prepare_request(conversation)
    assert [c.role for c in raw["contents"]] == ["user", "model", "user"]
    prepared = model._prepare_request(prepare_messages(conversation, model))
    assert [c.role for c in prepared["contents"]] == ["user", "model", "user", "user"]
    assert prepared["contents"][-1].parts[0].text.startswith("<system-reminder>")


def test_rendering_looks_through_bound_and_wrapped_models() -> None:
    conversation = stored_conversation()
    capable = ChatOpenAI(model="gpt-4.1", api_key="dummy")  # type: ignore[arg-type]
    limited = ChatOpenAI(model="gpt-4o", api_key="dummy")  # type: ignore[arg-type]

    def kept(model: object) -> bool:
        return prepare_messages(conversation, model)[-1].type == "system"

    assert kept(capable.bind_tools([probe]))
    assert kept(capable.with_retry())
    assert kept(ChatPromptTemplate.from_messages([("human", "{x}")]) | capable)
    assert kept(capable.configurable_fields(temperature=_field("temperature")))
    assert kept(capable.with_fallbacks([capable.bind(temperature=0)]))
    assert not kept(capable.with_fallbacks([limited]))
    assert not kept(limited)
    assert not kept(None)
    assert not kept(_deeply_bound(capable, 10))
    assert prepare_messages(tuple(conversation), capable) == conversation


def test_rendering_leaves_other_system_messages_alone() -> None:
    conversation = [SystemMessage("rules"), HumanMessage("go"), SystemMessage("note")]
    assert prepare_messages(conversation, None) is conversation


def _field(name: str) -> Any:
    from langchain_core.runnables import ConfigurableField

    return ConfigurableField(id=name)


def _deeply_bound(model: Any, depth: int) -> Any:
    for _ in range(depth):
        model = model.with_retry()
    return model


def test_the_tool_choice_that_calls_none_is_known_per_integration() -> None:
    openai = ChatOpenAI(model="gpt-4o", api_key="x")  # type: ignore[arg-type]
    anthropic = ChatAnthropic(model="claude-sonnet-4-5", api_key="x")  # type: ignore[call-arg]
    azure = AzureChatOpenAI(
        model="gpt-4o", api_key="x", azure_endpoint="http://127.0.0.1", api_version="2024-10-21"
    )  # type: ignore[call-arg]
    local = ChatOpenAI(model="qwen", base_url="http://127.0.0.1:1/v1", api_key="x")  # type: ignore[arg-type]
    assert no_tool_choice(openai) == no_tool_choice(azure) == no_tool_choice(local) == "none"
    assert no_tool_choice(ChatOpenAI(model="gpt-4o", api_key="x", use_responses_api=True)) == "none"  # type: ignore[arg-type]
    assert no_tool_choice(anthropic) == {"type": "none"}
    assert no_tool_choice(openai.bind(temperature=0).with_retry()) == "none"  # unwrapped
    assert no_tool_choice(openai.configurable_fields(temperature=ConfigurableField("t"))) == "none"
    assert no_tool_choice(openai.with_fallbacks([azure])) == "none"
    # Forms that differ, a profile without tool_choice, a model not known: none told.
    assert no_tool_choice(openai.with_fallbacks([anthropic])) is None
    assert no_tool_choice(ChatAnthropic(model="claude-sonnet-5-5", api_key="x")) is None  # type: ignore[call-arg]
    assert no_tool_choice(GenericFakeChatModel(messages=iter([]))) is None
    assert no_tool_choice(None) is None


def test_a_choice_a_wrapper_edits_is_its_own_and_the_next_request_gets_the_choice_as_it_was() -> (
    None
):
    # A middleware inside the guard may edit the request's tool_choice in place (Anthropic's
    # takes more keys); what it edits is its copy, never the choice every later request gets.
    anthropic = ChatAnthropic(model="claude-sonnet-4-5", api_key="x")  # type: ignore[call-arg]
    edited = no_tool_choice(anthropic)
    assert isinstance(edited, dict)
    edited["disable_parallel_tool_use"] = "true"
    assert no_tool_choice(anthropic) == {"type": "none"}


def test_gemini_is_told_to_call_none_as_openai_is() -> None:
    gemini = ChatGoogleGenerativeAI(model="gemini-2.5-flash", api_key="x")
    assert no_tool_choice(gemini) == "none"
    bound = gemini.bind_tools([probe], tool_choice=no_tool_choice(gemini))
    assert bound.kwargs["tool_choice"] == "none"  # Gemini's function calling mode NONE
