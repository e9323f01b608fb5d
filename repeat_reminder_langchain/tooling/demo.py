"""The demo: an agent that loops, offline, with the guard and without it.

Two scripted scenarios; the models read the conversation, not a fixed script, so they react
to the guard's reminders:

* `poll`: the model keeps polling a job that has already finished. It ignores the first
  (gentle) reminder and changes course at the first detailed one: it reads the job's log and
  answers. Without the guard it polls until its patience runs out.
* `stale`: the model re-runs the same failing test between other steps (reading and editing
  files) and gets the same output every time. No two calls in a row are the same, so only
  the `stale` detector sees it; at its reminder the model reads the migration and answers.

With `escalate_after` given, the models ignore reminders, so that the guard's stop shows.

Needs only the plain install: langchain-core and langgraph.
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from .._callbacks import RepeatToolReminderCallbackHandler
from .._config import ReminderConfig
from .._conversation import SOURCE, is_reminder, tag_of
from .._escalation import RepeatToolLoopError
from .._exits import EXITS
from .._graph import RepeatToolReminderNode
from .._moved import moved as _moved
from .._stats import StatsSnapshot
from ._tables import plural

__all__ = [
    "QUESTION",
    "TASK",
    "TOOLS",
    "PollingModel",
    "build_agent",
    "run_demo",
]

_Scenario = Literal["poll", "stale"]

_JOB = "nightly-build-7"
QUESTION = f"Why did the CI job {_JOB} fail?"
"""The `poll` scenario's question: its job finished long ago, as `TOOLS["poll"]` report."""

_TEST = "tests/test_users.py"
TASK = f"Make {_TEST} pass."
"""The `stale` scenario's task: a test that fails until a file is edited (`TOOLS["stale"]`)."""

_LOG = (
    "02:13:52 step migrate: applying 0042_add_users_email\n"
    '02:13:58 ERROR relation "users_email_key" already exists\n'
    "02:14:00 build failed"
)
_MIGRATION = "migrations/0042_add_users_email.py"


@tool("job_status")
def _job_status(job_id: str) -> str:
    """Report the status of a CI job."""
    return f"{job_id}: finished at 02:14, exit code 1, log at logs/{job_id}.txt"


@tool("read_log")
def _read_log(path: str) -> str:
    """Read a log file."""
    return _LOG


@tool("run_tests")
def _run_tests(path: str) -> str:
    """Run a test file."""
    return f'FAILED {path}::test_signup - IntegrityError: relation "users_email_key" already exists'


@tool("read_file")
def _read_file(path: str) -> str:
    """Read a source file."""
    if path == _MIGRATION:
        return "operations = [AddIndex('users', 'email', name='users_email_key')]"
    return f"# {path}\nclass User(Model):\n    email = EmailField()"


@tool("edit_file")
def _edit_file(path: str, change: str) -> str:
    """Change a source file."""
    return f"edited {path}"


TOOLS: dict[Literal["poll", "stale"], list[BaseTool]] = {
    "poll": [_job_status, _read_log],
    "stale": [_run_tests, _read_file, _edit_file],
}
"""Each scenario's deterministic tools, for a scripted model or a real one."""
_QUESTIONS: dict[_Scenario, str] = {"poll": QUESTION, "stale": TASK}
_STORIES: dict[_Scenario, str] = {
    "poll": "the model keeps polling a job that has already finished",
    "stale": "the model re-runs the same failing test between other steps",
}


class _ScriptedModel(BaseChatModel):
    """A scripted chat model that reads the conversation to choose its next turn."""

    patience: int = 12
    heeds: bool = True
    """Whether a reminder can change its course (False to show the guard stopping a loop)."""
    bound: bool = False
    """Whether it was given its tools: without them it answers with what it has."""

    @property
    def _llm_type(self) -> str:
        return "scripted-demo-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> _ScriptedModel:
        """The tools are known in advance: bound, the model may call them."""
        return self.model_copy(update={"bound": True})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._next(messages) if self.bound else self._answer(messages)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @abstractmethod
    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        """The scenario's next answer to `messages`."""

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        """The answer of a model called without its tools: the latest result, restated."""
        last = next((m for m in reversed(messages) if isinstance(m, ToolMessage)), None)
        if last is None:
            return AIMessage("I have no results to go on yet.")
        return AIMessage(
            f"What I have: `{last.name}` says {last.text!r}, and calling it again would not tell "
            "me more. What is still unknown is why; that needs another step."
        )

    def _told(self, messages: Sequence[BaseMessage], level: str, detector: str) -> bool:
        return self.heeds and any(
            is_reminder(m)
            and m.additional_kwargs[SOURCE]["level"] == level
            and m.additional_kwargs[SOURCE]["detector"] == detector
            for m in messages
        )


def _calls(messages: Sequence[BaseMessage], name: str) -> int:
    return sum(
        1 for m in messages if isinstance(m, AIMessage) for c in m.tool_calls if c["name"] == name
    )


def _result_of(messages: Sequence[BaseMessage], name: str) -> ToolMessage | None:
    return next((m for m in messages if isinstance(m, ToolMessage) and m.name == name), None)


class PollingModel(_ScriptedModel):
    """Keeps polling a finished job until a detailed reminder asks it plainly to stop.

    It ignores a gentle reminder and changes course after a detailed one (or after
    `patience` polls, standing in for a budget running out).
    """

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        turns = sum(isinstance(m, AIMessage) for m in messages)
        polls = _calls(messages, "job_status")
        if _result_of(messages, "read_log") is not None:
            return AIMessage(
                f"{_JOB} failed in the migrate step: migration 0042_add_users_email tried to "
                'create "users_email_key", which already exists. Make the migration skip an '
                "existing key, then re-run the job."
            )
        if self._told(messages, "detailed", "repeat") or polls >= self.patience:
            say = "The status will not change. I should read the log instead."
            return _call(turns, say, "read_log", {"path": f"logs/{_JOB}.txt"})
        say = "Let me check the job." if polls == 0 else "Maybe it changed; checking again."
        return _call(turns, say, "job_status", {"job_id": _JOB})


class _RetestingModel(_ScriptedModel):
    """Re-runs the same failing test between other steps, until a stale reminder.

    Between two runs it reads or edits a file, each time a different one, so no two calls in
    a row are the same; the test's output never changes. At a `stale` reminder (or after
    `patience` runs) it reads the migration the error points at and answers.
    """

    patience: int = 6

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        turns = sum(isinstance(m, AIMessage) for m in messages)
        runs = _calls(messages, "run_tests")
        migration = next(
            (
                m
                for m in messages
                if isinstance(m, ToolMessage) and m.name == "read_file" and "AddIndex" in m.text
            ),
            None,
        )
        if migration is not None:
            return AIMessage(
                "The test fails because migration 0042 creates the index users_email_key, "
                "which the test database already has. Editing the model cannot fix it: the "
                "migration must skip an existing index."
            )
        if self._told(messages, "gentle", "stale") or runs >= self.patience:
            say = "The test output has not changed at all; the error names an index. "
            say += "Let me read the migration that creates it."
            return _call(turns, say, "read_file", {"path": _MIGRATION})
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last is None or not last.tool_calls or last.tool_calls[0]["name"] != "run_tests":
            say = "Let me run the test." if runs == 0 else "Running the test again."
            return _call(turns, say, "run_tests", {"path": _TEST})
        if runs % 2:
            say = "Still failing. Let me look at the model."
            return _call(turns, say, "read_file", {"path": f"src/users/models_{runs}.py"})
        say = "Let me change the email field."
        change = f"email = EmailField(unique={runs % 4 == 0})"
        return _call(turns, say, "edit_file", {"path": "src/users/models.py", "change": change})


def _call(turn: int, say: str, name: str, args: dict[str, Any]) -> AIMessage:
    call = {"name": name, "args": args, "id": f"call_{turn}", "type": "tool_call"}
    return AIMessage(say, tool_calls=[call])


def build_agent(
    model: BaseChatModel,
    guard: RepeatToolReminderCallbackHandler | None,
    tools: Sequence[BaseTool] = TOOLS["poll"],
    *,
    checkpointer: Any = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The agent: model → tools → reminder node → model (no reminder node without a guard).

    The node's `route` leaves the graph once the guard ended a looping run
    (`exit_behavior="end"`); asked for its answer (`"finish"`), the model is called with no
    tool to call (`node.bind_tools`), and a call made all the same is refused.
    """
    bound = model.bind_tools(list(tools))
    node = None if guard is None else RepeatToolReminderNode(guard, tools=list(tools))

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        chosen = bound if node is None else node.bind_tools(model, list(tools), state)
        return {"messages": [chosen.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    wrap = None if node is None else node.wrap_tool_call
    builder.add_node("tools", ToolNode(list(tools), wrap_tool_call=wrap))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    if node is None:
        builder.add_edge("tools", "agent")
    else:
        builder.add_node("repeat_reminder", node)
        builder.add_edge("tools", "repeat_reminder")
        builder.add_conditional_edges(
            "repeat_reminder", node.route, {"continue": "agent", "end": END}
        )
    return builder.compile(checkpointer=checkpointer)


def _model(scenario: _Scenario, heeds: bool) -> BaseChatModel:
    if scenario == "stale":
        return _RetestingModel(heeds=heeds, patience=6 if heeds else 12)
    return PollingModel(heeds=heeds)


def run_demo(
    guard: RepeatToolReminderCallbackHandler | None,
    scenario: Literal["poll", "stale"] = "poll",
    *,
    heeds: bool = True,
    resume: str = "end",
    asked: list[str] | None = None,
) -> list[BaseMessage]:
    """Run the demo agent, with the guard or without it, and return the conversation.

    Args:
        guard: The handler to run with, or None for no guard.
        scenario: `"poll"` or `"stale"`.
        heeds: Whether the model can change course at a reminder.
        resume: What a human answers when the guard pauses the run (`exit_behavior=
            "interrupt"`): `"end"`, `"continue"`, or a message for the agent.
        asked: A list to which each question the guard puts to a human is added.

    Raises:
        RepeatToolLoopError: The guard stopped the loop with `exit_behavior="error"`; the
            conversation up to there is in its `messages` attribute.
    """
    agent = build_agent(
        _model(scenario, heeds), guard, TOOLS[scenario], checkpointer=InMemorySaver()
    )
    config: RunnableConfig = {"configurable": {"thread_id": "demo"}, "recursion_limit": 200}
    if guard is not None:
        config["callbacks"] = [guard]
    inputs: Any = {"messages": [HumanMessage(_QUESTIONS[scenario])]}
    try:
        result = agent.invoke(inputs, config)
        while result.get("__interrupt__"):
            if asked is not None:
                asked.extend(str(item.value["question"]) for item in result["__interrupt__"])
            result = agent.invoke(Command(resume=resume), config)
    except RepeatToolLoopError as error:
        error.messages = list(agent.get_state(config).values["messages"])  # type: ignore[attr-defined]
        raise
    return list(result["messages"])


def _by_level(reminders: dict[str, dict[str, int]]) -> str:
    if not reminders:
        return "none"
    return "; ".join(
        f"{tool}: " + ", ".join(f"{n} {level}" for level, n in sorted(levels.items()))
        for tool, levels in sorted(reminders.items())
    )


def _format_stats(stats: StatsSnapshot) -> str:
    """The guard's stats snapshot on one line.

    Example:
        >>> from repeat_reminder_langchain._stats import Stats
        >>> line = _format_stats(Stats().snapshot())
        >>> line.startswith("0 calls counted · delivered none"), line.endswith("rate n/a")
        (True, True)
    """
    rate = stats["recovery_rate"]
    longest = stats["longest_streak"]
    detectors = ", ".join(
        f"{name} {counts['delivered'] + counts['undelivered']}"
        for name, counts in stats["detectors"].items()
    )
    parts = [
        f"{plural(stats['calls'], 'call')} counted",
        f"delivered {_by_level(stats['reminders'])}",
        f"undelivered {_by_level(stats['undelivered'])}",
    ]
    if detectors:
        parts.append(f"by detector {detectors}")
    parts += [
        f"longest streak {'none' if not longest else f'{longest[0]} × {longest[1]}'}",
        f"escalations {_by_level(stats['escalations'])}",
        f"followed {stats['followed']}, recovered {stats['recovered']}",
        f"recovery rate {'n/a' if rate is None else f'{rate:.0%}'}",
    ]
    return " · ".join(parts)


def _summary(
    messages: Sequence[BaseMessage],
    config: ReminderConfig,
    sent: int | None,
    raised: RepeatToolLoopError | None = None,
) -> str:
    """Calls, reminders (in the conversation, or `sent` would-have-been) and the longest run.

    The reminders are those the stats line counts, gentle and detailed; the stop is said
    apart, whatever form it took (finish's request for the answer is a reminder message, but
    the stats count it with the escalations, and so does this line; `raised` left none).
    """
    from .transcript import summarize

    summary = summarize(messages, config)
    longest = f"{summary.longest[0]} × {summary.longest[1]}" if summary.longest else "none"
    if sent is None:
        reminders = summary.gentle + summary.detailed
        levels = f"{summary.gentle} gentle, {summary.detailed} detailed"
        said = f"{plural(reminders, 'reminder')} ({levels})"
    else:
        said = f"would have sent {plural(sent, 'reminder')}"
    tags = (tag_of(message) or {} for message in messages)
    stopped = next((tag for tag in tags if tag.get("level") == "escalated"), None)
    tail = ""
    if raised is not None:
        where = f"{raised.tool} × {raised.count} ({raised.detector})"
        tail = f" · stopped at {where}, RepeatToolLoopError raised"
    elif stopped:
        asked = (
            ", the model asked for its answer" if EXITS[config.exit_behavior].asks_answer else ""
        )
        tail = f" · stopped at {stopped['summary']} ({stopped['detector']}){asked}"
    return f"{plural(summary.calls, 'tool call')} · {said} · longest streak: {longest}{tail}"


def _run_command(config: ReminderConfig, scenario: _Scenario = "poll") -> int:
    """`demo`: run the scenario with the guard and without, print both; the exit code."""
    from .transcript import format_transcript

    if config.escalate_after is not None and EXITS[config.exit_behavior].refuses:
        *others, last = (name for name, exit in EXITS.items() if not exit.refuses)
        print(
            f"error: --exit-behavior {config.exit_behavior} needs the middleware (create_agent), "
            "which sees a call before it runs; this demo's graph uses the handler and node: use "
            f"{', '.join(others)} or {last}",
            file=sys.stderr,
        )
        return 2
    # The default stop is there in every run; a stop asked for shows, by a model that ignores.
    heeds = config.escalate_after is None or "escalate_after" not in config.model_fields_set
    detect = ", ".join(config.detect)
    print(f"Demo ({scenario}): {_QUESTIONS[scenario]!r} — {_STORIES[scenario]}.")
    observe = " (observe mode: it counts and reports, and adds nothing)"
    print(
        f"Guard: thresholds {', '.join(map(str, config.thresholds))} · detect {detect}; "
        f"reminders sent as {config.message_type} messages"
        f"{'' if config.mode == 'remind' else observe}."
    )
    if not heeds:
        print(
            f"The guard stops the loop at {config.escalate_after} ({config.exit_behavior}); "
            "the model ignores reminders in this run, so that the stop shows."
        )
    print()
    guard = RepeatToolReminderCallbackHandler(config)
    asked: list[str] = []
    try:
        messages = run_demo(guard, scenario, heeds=heeds, asked=asked)
    except RepeatToolLoopError as error:
        print(format_transcript(error.messages))  # type: ignore[attr-defined]
        said = _summary(error.messages, config, None, error)  # type: ignore[attr-defined]
        print(f"\n{'With the guard:':<16} {said}")
        print(f"{'Guard stats:':<16} {_format_stats(guard.stats.snapshot())}")
        print(f"error: {error}", file=sys.stderr)
        return 1
    stats = guard.stats.snapshot()
    for question in asked:
        print(f"The guard paused the run and asked: {question}\nThe demo answered: end.\n")
    print(format_transcript(messages))
    observed = config.mode == "observe"
    sent = sum(n for levels in stats["undelivered"].values() for n in levels.values())
    label = "Guard observing:" if observed else "With the guard:"
    print(f"\n{label:<16} {_summary(messages, config, sent if observed else None)}")
    print(f"{'Without it:':<16} {_summary(run_demo(None, scenario, heeds=heeds), config, None)}")
    print(f"{'Guard stats:':<16} {_format_stats(stats)}")
    return 0


# The names of 0.2.0's module that it no longer exports, each with its warning (`_moved`).
__getattr__ = _moved(__name__)
