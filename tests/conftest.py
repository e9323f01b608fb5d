"""Shared fixtures: the three faces of the guard on one agent, threads, and the checks every
agent test makes.

`guarded(model, **fields)` builds the same agent three ways — the handler and its node in a
custom graph, the state-kept node in a custom graph, and `create_agent` with the middleware —
so that a rule is tested once and holds for every face.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from langchain.agents import create_agent
from langchain.agents.middleware import before_model
from langchain_core.callbacks import manager
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from repeat_reminder_langchain import (
    ReminderConfig,
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
)
from repeat_reminder_langchain._stats import Stats

from .helpers import assert_adjacent, model_node, other, probe

FACES = ("handler", "state", "middleware")
_threads = itertools.count(1)

# A test module that needs an optional peer (a package of the notebooks or dev extra) starts with
# `pytest.importorskip`. `make test-lowest` installs no peer and sets REPEAT_REMINDER_PEERS to
# "optional", so there such a module is skipped. Anywhere else the peers belong to the test
# environment (`.[dev]`), and a module skipped at import fails instead: a broken install must not
# pass for a green run.
PEERS_OPTIONAL = os.environ.get("REPEAT_REMINDER_PEERS") == "optional"


# The mutation run (`make mutate`, `--hypothesis-profile=mutation` in pyproject.toml) needs the
# same examples every time: a mutant is killed or survives by what the tests do, not by which
# examples a random seed drew. No example database either, for the same reason, no deadline and
# no health check: a mutant's trampolines make every call slower, and a test failing for that
# would count a mutant as killed that nothing caught.
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

# The mutation run forks each mutant's test process from one that has already run tests. The
# threads of langchain_core's shared callback executor are not in the fork, and the executor
# does not know it: a sync handler dispatching an event inside an async run waits on it forever.
# (A private function: where a version of langchain_core has no such cache, there is none to drop.)
_shared_executor: Any = getattr(manager, "_executor", None)
if hasattr(_shared_executor, "cache_clear"):
    os.register_at_fork(after_in_child=_shared_executor.cache_clear)


# Under mutation testing mutmut runs the tests in its own process, and calls every mutated
# function through its trampoline: frames that a warning looks past to find the user's line, as
# it looks past LangChain's.
if "mutmut" in sys.modules:
    from repeat_reminder_langchain import _log

    _log._LIBRARIES += _log._folders("mutmut")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Outside `make test-lowest`, a test module skipped at import is an error."""
    report = yield
    if report.skipped and isinstance(collector, pytest.Module) and not PEERS_OPTIONAL:
        why = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"{why}\nThe optional peers belong to the test environment: install '.[dev]' (as "
            "`make` does), or set REPEAT_REMINDER_PEERS=optional to skip the tests that need them."
        )
    return report


@dataclass
class Guarded:
    """One agent guarded by one face, and how to run it.

    Attributes:
        face: `"handler"`, `"state"` or `"middleware"`.
        graph: The compiled agent.
        stats: The guard's running totals.
        config: The guard's configuration.
        handler: The handler to pass in the callbacks (handler face only).
    """

    face: str
    graph: Any
    stats: Stats
    config: ReminderConfig
    handler: RepeatToolReminderCallbackHandler | None = None
    guard: Any = None
    runs: list[list[BaseMessage]] = field(default_factory=list)

    def run_config(self, thread: str | None = None, **extra: Any) -> RunnableConfig:
        config: dict[str, Any] = {"recursion_limit": 1000, **extra}
        if self.handler is not None:
            config["callbacks"] = [self.handler, *config.get("callbacks", [])]
        if thread is not None:
            config["configurable"] = {"thread_id": thread, **config.get("configurable", {})}
        return config  # type: ignore[return-value]

    def invoke(self, inputs: Any, thread: str | None = None, **extra: Any) -> list[BaseMessage]:
        """Run to the end; the final conversation, checked for call/result adjacency."""
        result = self.graph.invoke(inputs, self.run_config(thread, **extra))
        return self._checked(result)

    async def ainvoke(
        self, inputs: Any, thread: str | None = None, **extra: Any
    ) -> list[BaseMessage]:
        result = await self.graph.ainvoke(inputs, self.run_config(thread, **extra))
        return self._checked(result)

    def state(self, thread: str) -> dict[str, Any]:
        values: dict[str, Any] = self.graph.get_state(
            {"configurable": {"thread_id": thread}}
        ).values
        return values

    def _checked(self, result: Any) -> list[BaseMessage]:
        messages = list(result["messages"])
        assert_adjacent(messages)
        self.runs.append(messages)
        return messages


def build(
    face: str,
    model: Any,
    tools: Sequence[Any] = (probe, other),
    *,
    checkpointer: Any = None,
    middleware: Sequence[Any] = (),
    harness: Callable[..., Any] | None = None,
    harness_first: bool = True,
    shown: bool = True,
    **fields: Any,
) -> Guarded:
    """The agent of the README, guarded by `face`, with the guard built from `fields`.

    The node faces are given the tools (`tools=`) unless not `shown`.

    `harness(state, runtime)` is a step of the agent's harness that runs after each tool turn,
    before the model: a node (between the tools and the guard's node, or after the guard's
    node when not `harness_first`) or a `before_model` middleware (before the guard or after).

    The guard is the original plugin's (`profile="seed"`) unless `profile` or a `config` is
    given: the tests of its semantics hold it there, and the defaults' own tests say so.
    """
    if "config" not in fields:
        fields.setdefault("profile", "seed")
    if face == "middleware":
        guard = RepeatToolReminderMiddleware(**fields)
        hooks = [*middleware, guard]
        if harness is not None:
            step = before_model(harness, name="Harness")
            hooks.insert(len(middleware) if harness_first else len(hooks), step)
        graph = create_agent(model, tools=list(tools), middleware=hooks, checkpointer=checkpointer)
        return Guarded(face, graph, guard.stats, guard.config, guard=guard)
    handler = RepeatToolReminderCallbackHandler(**fields) if face == "handler" else None
    runs_tools = ToolNode(list(tools), handle_tool_errors=True)
    if handler is not None:
        node = RepeatToolReminderNode(handler, tools=list(tools) if shown else ())
    else:
        node = RepeatToolReminderNode(tools=runs_tools, **fields)  # the ToolNode is shown too

    if face == "state":
        builder = StateGraph(
            RepeatToolReminderState, input_schema=MessagesState, output_schema=MessagesState
        )
    else:
        builder = StateGraph(MessagesState)
    builder.add_node("agent", model_node(model, prepared=True))
    builder.add_node("tools", runs_tools)
    builder.add_node("repeat_reminder", node)
    builder.add_edge(START, "agent")
    # The model's end passes through the node too: it counts an answer there.
    builder.add_conditional_edges(
        "agent", tools_condition, {"tools": "tools", END: "repeat_reminder"}
    )
    after_tools, after_guard = "repeat_reminder", "agent"
    if harness is not None:
        builder.add_node("harness", harness)
        if harness_first:
            after_tools = "harness"
            builder.add_edge("harness", "repeat_reminder")
        else:
            after_guard = "harness"
            builder.add_edge("harness", "agent")
    builder.add_edge("tools", after_tools)
    builder.add_conditional_edges(
        "repeat_reminder", node.route, {"continue": after_guard, "end": END}
    )
    graph = builder.compile(checkpointer=checkpointer)
    return Guarded(face, graph, node.stats, node.config, handler=handler, guard=node)


@pytest.fixture(params=FACES)
def face(request: pytest.FixtureRequest) -> str:
    """Each face of the guard in turn."""
    return str(request.param)


@pytest.fixture
def guarded(face: str) -> Callable[..., Guarded]:
    """Build an agent guarded by the face under test: `guarded(model, **fields)`."""

    def make(model: Any, tools: Sequence[Any] = (probe, other), **kwargs: Any) -> Guarded:
        return build(face, model, tools, **kwargs)

    return make


@pytest.fixture
def thread() -> str:
    """A thread id of its own for the test."""
    return f"thread-{next(_threads)}"
