"""The middleware in deepagents: the main agent's guard, each subagent's, and what they report."""

from __future__ import annotations

import logging
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

# An optional peer (the dev extra): `make test-lowest` runs without it and skips this module.
pytest.importorskip("deepagents")

from deepagents import create_deep_agent
from deepagents.profiles import HarnessProfile
from deepagents.profiles.harness import harness_profiles
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from repeat_reminder_langchain import RepeatToolReminderMiddleware, stop_reason
from repeat_reminder_langchain._conversation import is_reminder

from .helpers import ask, assert_adjacent, call, probe, reminders, repeat, scripted, turn

SAME = {"q": "same"}
GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guides" / "create-agent.md"
KINDS = ["general-purpose", "researcher"]
LOGGER = "repeat_reminder_langchain"
RESEARCHER = {
    "name": "researcher",
    "description": "Researches a question in depth.",
    "system_prompt": "You research questions.",
}


@tool
def job_status(job: str) -> str:
    """The status of a job."""
    return f"{job}: running"


class Desk(BaseChatModel):
    """Every agent's model, as in deepagents by default: the main agent hands job-7 to the
    subagent its user names ("delegate to researcher"), then passes on its answer; a subagent
    polls the job until it is asked for its answer, or gives up at the twelfth poll."""

    seen: dict[str, list[list[BaseMessage]]] = Field(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "desk"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Desk:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        first = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
        main = first.startswith("delegate to ")
        agent = "main" if main else first
        self.seen.setdefault(agent, []).append(list(messages))
        polls = len(self.seen[agent]) - 1  # each request but the first answers a poll
        if main:
            done = [m for m in messages if isinstance(m, ToolMessage)]
            kind = first.removeprefix("delegate to ")
            task = {"description": kind, "subagent_type": kind}
            reply = AIMessage(f"job-7: {done[-1].content}") if done else turn(call("task", task))
        elif stop_reason(messages) is not None or polls == 12:
            reply = AIMessage(f"job-7 is still running after {polls} polls")
        else:
            reply = turn(call("job_status", {"job": "job-7"}, f"poll_{uuid.uuid4().hex[:8]}"))
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Events(BaseCallbackHandler):
    """The guard's events of a run, each with the agent LangChain's metadata names."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], str | None]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.seen.append((name, data, (kwargs.get("metadata") or {}).get("lc_agent_name")))


def guide_block(word: str) -> str:
    """The guide's code block that sets deepagents up with `word`."""
    found = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)
    (block,) = [b for b in found if "deepagents" in b and word in b]
    return block


def guide_wiring(model: Desk) -> Any:
    """The agent the guide builds, on `model` in place of its Anthropic one."""
    block = guide_block("create_deep_agent(")
    assert block.count('"anthropic:claude-sonnet-4-5"') == 1
    namespace = {"job_status": job_status, "desk": model}
    exec(block.replace('"anthropic:claude-sonnet-4-5"', "desk"), namespace)
    return namespace["agent"]


def run(agent: Any, kind: str, caplog: pytest.LogCaptureFixture) -> tuple[Any, Events]:
    events = Events()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        result = agent.invoke(ask(f"delegate to {kind}"), {"callbacks": [events]})
    assert_adjacent(result["messages"])
    return result, events


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    """The guard's log lines, with their levels."""
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def seen_reminders(prompts: list[list[BaseMessage]]) -> list[tuple[str, int]]:
    """The level and count of each reminder a model was sent (the request for its answer
    among them), in order, each once; each request's calls followed by their results."""
    seen: dict[str | None, tuple[str, int]] = {}
    for prompt in prompts:
        assert_adjacent(prompt)
        for message in prompt:
            if is_reminder(message) and message.id not in seen:
                tag = message.additional_kwargs["repeat_tool_reminder"]
                seen[message.id] = (tag["level"], tag["count"])
    return list(seen.values())


FINISHED = [("gentle", 3), ("detailed", 5), ("detailed", 8), ("escalated", 10)]


@pytest.mark.parametrize("kind", KINDS)
def test_the_main_agents_guard_reaches_no_subagent(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    # What the guide warns of: deepagents hands the main agent's middleware to no subagent,
    # the general-purpose one included.
    desk, guard = Desk(), RepeatToolReminderMiddleware()
    agent = create_deep_agent(
        model=desk, tools=[job_status], middleware=[guard], subagents=[RESEARCHER]
    )
    result, events = run(agent, kind, caplog)

    assert result["messages"][-1].content == "job-7: job-7 is still running after 12 polls"
    assert len(desk.seen[kind]) == 13
    assert seen_reminders(desk.seen[kind]) == []
    assert events.seen == [] and logged(caplog) == []
    assert guard.stats.snapshot()["calls"] == 1  # the main agent's one call of task


@pytest.mark.parametrize("kind", KINDS)
def test_the_guides_wiring_guards_each_subagent_and_names_it(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    desk = Desk()
    result, events = run(guide_wiring(desk), kind, caplog)

    # The subagent's model was reminded at 3, 5 and 8, then asked for its answer after its
    # tenth poll; its answer is what task returned, and the main agent went on with it.
    prompts = desk.seen[kind]
    assert seen_reminders(prompts) == FINISHED
    assert len(prompts) == 11
    finished = stop_reason(prompts[-1])
    assert finished is not None
    assert (finished.tool, finished.count, finished.behavior) == ("job_status", 10, "finish")
    messages = result["messages"]
    assert isinstance(messages[-2], ToolMessage)
    assert messages[-2].content == "job-7 is still running after 10 polls"
    assert messages[-1].content == "job-7: job-7 is still running after 10 polls"
    # The main agent's guard stopped nothing of the main agent's, and reminded it of nothing.
    assert stop_reason(result) is None
    assert reminders(messages) == []
    assert len(desk.seen["main"]) == 2 and seen_reminders(desk.seen["main"]) == []

    # What the subagent's guard reports names it: its events, by the name given, and the
    # agent LangChain's metadata names; its log lines.
    assert [(name, data["count"], data["guard"], agent) for name, data, agent in events.seen] == [
        ("repeat_tool_reminder", 3, kind, kind),
        ("repeat_tool_reminder", 5, kind, kind),
        ("repeat_tool_reminder", 8, kind, kind),
        ("repeat_tool_escalation", 10, kind, kind),
    ]
    assert events.seen[-1][1]["behavior"] == "finish"
    lines = logged(caplog)
    assert [level for level, _ in lines] == [logging.INFO] * 3 + [logging.WARNING]
    assert all(re.search(f", guard {kind}, run [0-9a-f-]{{36}}$", line) for _, line in lines)
    assert lines[-1][1].startswith(
        "repeat tool loop: the model is asked for its answer (finish): job_status × 10 "
        "(finish, repeat count reached escalate_after=10), arguments "
    )


@pytest.mark.parametrize("kind", KINDS)
def test_a_harness_profile_guards_every_agent_deepagents_builds(
    kind: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The guide's profile, registered for this test's model ("desk": its provider, as
    # deepagents reads it) and taken out again after it.
    monkeypatch.setitem(harness_profiles._HARNESS_PROFILES, "desk", HarnessProfile())
    block = guide_block("register_harness_profile(")
    assert block.count('"anthropic"') == 1
    exec(block.replace('"anthropic"', '"desk"'), {})
    desk = Desk()
    agent = create_deep_agent(model=desk, tools=[job_status], subagents=[RESEARCHER])
    result, events = run(agent, kind, caplog)

    assert seen_reminders(desk.seen[kind]) == FINISHED
    assert result["messages"][-1].content == "job-7: job-7 is still running after 10 polls"
    # Unnamed, each instance reports under its default name; LangChain's metadata names the
    # agent, and the log lines do not.
    assert {(data["guard"], agent) for _, data, agent in events.seen} == {
        ("RepeatToolReminderMiddleware", kind)
    }
    assert all(", guard " not in line for _, line in logged(caplog))
    # The main agent holds one too: beside it, another unnamed one is refused, saying so.
    with pytest.raises(ValueError, match="give the second one a name of its own"):
        create_deep_agent(
            model=desk, tools=[job_status], middleware=[RepeatToolReminderMiddleware()]
        )


def test_a_subagent_with_its_own_middleware_gets_its_own_reminder() -> None:
    worker_model = scripted(repeat("probe", SAME, 3))
    task = call("task", {"description": "look into it", "subagent_type": "worker"})
    parent_script = [*repeat("probe", SAME, 2), turn(task), *repeat("probe", SAME, 1)]
    agent = create_deep_agent(
        model=scripted(parent_script),
        tools=[probe],
        subagents=[
            {
                "name": "worker",
                "description": "Looks things up.",
                "system_prompt": "Look things up.",
                "tools": [probe],
                "model": worker_model,
                "middleware": [RepeatToolReminderMiddleware()],
            }
        ],
        middleware=[RepeatToolReminderMiddleware(exclude=["task"])],
    )
    messages = agent.invoke(ask())["messages"]

    assert_adjacent(messages)
    # The parent's two probes, the subagent's three, then the parent's third: the parent is
    # reminded at its own third call, not at the sixth probe overall.
    assert reminders(messages) == [("gentle", "probe", 3)]
    assert [m for m in messages if isinstance(m, ToolMessage)][-1] is messages[-3]
    worker_prompt = worker_model.seen[-1]
    assert_adjacent(worker_prompt)
    assert is_reminder(worker_prompt[-1])
    assert worker_prompt[-1].additional_kwargs["repeat_tool_reminder"]["count"] == 3
