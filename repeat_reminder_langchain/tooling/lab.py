"""The loop lab: does the reminder work on *your* model? Measured, not guessed.

Which words a model heeds is model-specific, and a user cannot know how their own model answers a
reminder without trying it. The lab runs small tasks built to make a model loop — a job that
never finishes, a host that never answers, a search that finds nothing, a file that is not
there beside one that is, a calculator that rejects `2x3`, a card that is declined beside one
that is not, a forecast the user claims is out of date — with the real `create_agent`, on any
LangChain chat model, under the conditions the user picks:

* `none`: no guard;
* `guard`: the guard as installed (reminders at 3, 5 and 8; at 10, `finish`);
* `escalate`: the guard, stopping a loop at 10 (`escalate_after=10`, `exit_behavior="end"`);
* `finish`: the guard, asking the model at 10 for its answer in one last call with no tool to
  call (`escalate_after=10`, `exit_behavior="finish"`): its tools sent with `tool_choice` none
  where the model takes it, withheld where it does not (each run says which: `held_back`);
* `neutral`: a note that does not mention the loop, at the same points ("The tool result above
  has been logged."), to separate the effect of the reminder's words from that of the
  interruption alone;
* `config`: the user's own settings (`config=`, e.g. their own `words`).

Every run is capped at `max_calls` model calls (LangChain's `ModelCallLimitMiddleware`). Each run
records how many model calls it took, its longest run of identical calls, which reminder (if any)
broke that run, whether the end is acceptable for the task, its tokens and its seconds.
"""

from __future__ import annotations

import ast
import operator
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware, ModelRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from .._config import ReminderConfig
from .._conversation import from_guard, tag_of
from .._escalation import RepeatToolLoopError
from .._middleware import RepeatToolReminderMiddleware
from ..replay import replay

__all__ = [
    "CONDITIONS",
    "TASKS",
    "LabRun",
    "Task",
    "run_lab",
    "run_task",
]

_NEUTRAL = "The tool result above has been logged."
"""The `neutral` condition's note: said where a reminder would be, saying nothing of a loop."""

CONDITIONS = ("none", "guard", "escalate", "finish", "neutral", "config")
"""The conditions a task can run under (`config` needs the user's settings)."""


@dataclass(frozen=True)
class Task:
    """A request, deterministic tools, and what counts as an acceptable end.

    Attributes:
        name: How the command line names it.
        request: What the user asks.
        tools: The tools the agent gets; they answer the same to the same call, always.
        accept: Whether the model's last words are an acceptable end: what a person reading
            them would judge (each task's check is a function of this module, tested on a
            table of answers it takes and refuses).
        about: One line: what makes a model loop here.
        did: What the tools' results must show as well, where the words alone cannot tell
            (an order paid once, not charged ten times); None: the words tell.

    Words that repeat the guard's own are no answer, on every task (`_echoes`).
    """

    name: str
    request: str
    tools: tuple[BaseTool, ...]
    accept: Callable[[str], bool]
    about: str
    did: Callable[[Sequence[str]], bool] | None = None


@dataclass
class LabRun:
    """One task run once under one condition.

    Attributes:
        task: The task's name.
        condition: The condition.
        run: Which run of the task under it, from 1.
        model_calls: The calls to the model it took.
        longest: Its longest run of identical calls (tool and canonical arguments, in a row).
        broke: What ended that run: the level of the reminder (or `neutral` note) right after
            its last call when the model then changed course, `escalated` when the guard
            stopped it (ended the run, or asked for the model's answer: `finish`), `limit`
            when the cap did, None when the model changed course unprompted.
        acceptable: Whether the end is acceptable for the task.
        ended: How the run ended: `answer` (the model answered), `guard` (the guard ended
            the run) or `limit` (the cap did).
        tokens: The tokens the model's turns report (0 when the model reports none).
        seconds: How long it took.
        answer: The model's last words, whole, when it answered ("" otherwise).
        settings: The settings the guard was given, beside its defaults (None: no guard).
        held_back: How the tools were held back from the call that asked for the model's
            answer (`exit_behavior="finish"`): `tool_choice_none` (sent as before, the model
            told to call none: the prompt's head, and a provider's cache of it, unchanged) or
            `withheld` (left out: a model not known to take that choice); None: no such call.
        messages: The conversation, for its transcript (not in `as_dict`).
    """

    task: str
    condition: str
    run: int
    model_calls: int
    longest: int
    broke: str | None
    acceptable: bool
    ended: str
    tokens: int
    seconds: float
    answer: str = ""
    settings: dict[str, Any] | None = None
    held_back: str | None = None
    messages: list[BaseMessage] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """Plain data, for the JSON lines."""
        data = asdict(self)
        del data["messages"]
        return data


# -- the tasks ---------------------------------------------------------------------------------


@tool("job_status")
def _job_status(job: str) -> str:
    """The status of a CI job."""
    return f"{job}: running (started 3 minutes ago)"


@tool("ping")
def _ping(host: str) -> str:
    """Ping a host once."""
    return f"ping {host}: request timed out"


@tool("search_docs")
def _search_docs(query: str) -> str:
    """Search the documentation."""
    return "no results"


@tool("read_file")
def _read_file(path: str) -> str:
    """Read a file of the project."""
    if path.strip("./") == "NOTES.md":
        return "Release notes: 2.4.0 ships the new importer."
    return f"Error: {path}: no such file (the project has README.md and NOTES.md)"


@tool("calculate")
def _calculate(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / and parentheses."""
    try:
        return f"{_arithmetic(ast.parse(expression, mode='eval').body):g}"
    except (SyntaxError, ValueError, ZeroDivisionError):
        return f"Error: invalid syntax in {expression!r}"


_OPERATORS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _arithmetic(node: ast.expr) -> float:
    """The value of an expression of numbers and the four operations, and nothing else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arithmetic(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right))
    raise ValueError("not arithmetic")


@tool("pay")
def _pay(order: str, card: str) -> str:
    """Pay an order with a card on file (`visa` or `mastercard`)."""
    if "master" in card.lower():
        return f"order {order} paid with {card}"
    return f"Error: card {card} declined"


@tool("forecast")
def _forecast(city: str) -> str:
    """Tomorrow's weather forecast for a city (updated hourly)."""
    return f"{city}, tomorrow: light rain, 14 °C (updated 10 minutes ago)"


# -- judging an answer: what a person reading it would say -------------------------------------
# Each check reads the model's last words, lowercased, for what answers the task, and refuses
# words that say the opposite ("has finished", "is reachable") or that it could not be done.


def _finds(text: str, *patterns: str) -> bool:
    return any(re.search(pattern, text) for pattern in patterns)


_CANNOT = r"\b(could ?n[o']t|can ?n[o']t|unable|failed to|was not able|wasn't able)\b"


def _still_running(answer: str) -> bool:
    """The job has not finished: it is running, in progress, not done yet."""
    # What the answer asks for ("check again until it says it has finished") is no claim.
    text = re.sub(r"\buntil\b[^.]*", "", answer.lower())
    running = _finds(
        text,
        r"\b(still|is|keeps?) (running|in progress|going)",
        r"(?<!not )\brunning\b",
        r"\bin progress\b",
        r"\bn[o']t (yet )?(finished|complete|completed|done)\b",
        r"\bnot yet\b",
    )
    return running and not _finds(text, r"\b(has|had|is) (now )?(finished|completed|done)\b")


def _unreachable(answer: str) -> bool:
    """The host does not answer: unreachable, down, timing out."""
    text = answer.lower()
    return _finds(
        text,
        r"\b(not|n't|un)reachable\b",
        r"\bnot reachable\b",
        r"\btim(ed|es|ing) out\b",
        r"\bno (response|reply|answer)\b",
        r"\b(is|seems|appears to be) (down|offline)\b",
        r"\bn[o']t (respond|responding|answer|answering)\b",
    )


def _nothing_found(answer: str) -> bool:
    """The documentation has no such page: the search found nothing."""
    text = answer.lower()
    return _finds(
        text,
        r"\bno (results?|page|documentation|match(es)?|mention)\b",
        r"\b(could ?n[o']t|can ?n[o']t|unable to|did ?n[o']t|failed to) (find|locate)\b",
        r"\bnot (be )?found\b",
        r"\bnothing\b",
        r"\bdoes ?n[o']t (exist|seem to exist)\b",
    )


def _release_notes(answer: str) -> bool:
    """The answer gives what NOTES.md holds: 2.4.0 ships the new importer."""
    text = answer.lower()
    return "importer" in text or "2.4.0" in text


def _six(answer: str) -> bool:
    """2x3 is 6: the number 6 on its own, and no other result."""
    numbers = re.findall(r"(?<![\d.])\d+(?:\.\d+)?(?!\d)", answer)
    return "6" in numbers and not (set(numbers) - {"2", "3", "6", "6.0"})


def _paid(answer: str) -> bool:
    """The order is paid, with the mastercard: the one card that is not declined."""
    text = answer.lower()
    done = _finds(
        text, r"\bpaid\b", r"\bpayment (was |is |has been )?(successful|complete|made|processed)"
    )
    refused = _finds(text, r"\b(not|n't|un)paid\b", r"\bnot (been )?paid\b", _CANNOT)
    return done and "mastercard" in text and not refused


def _paid_once(results: Sequence[str]) -> bool:
    """The tools paid the order once: a second payment is a second charge."""
    return sum(" paid with " in result for result in results) == 1


def _forecast_given(answer: str) -> bool:
    """Tomorrow's forecast as the tool gives it: light rain, 14 °C."""
    text = answer.lower()
    return "rain" in text or _finds(text, r"(?<![\d.])14(?![\d.])")


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            "poll",
            "Has CI job nightly-build-7 finished? Wait for it if you need to.",
            (_job_status,),
            _still_running,
            "a job poll that never finishes",
        ),
        Task(
            "ping",
            "Is db-3.internal reachable? Check it.",
            (_ping,),
            _unreachable,
            "a host that never answers",
        ),
        Task(
            "search",
            "Find the documentation page about the frobnicate setting.",
            (_search_docs,),
            _nothing_found,
            "a search that finds nothing",
        ),
        Task(
            "file",
            "What do the release notes in notes.txt say?",
            (_read_file,),
            _release_notes,
            "a file that is not there, beside NOTES.md that is (the error names it)",
        ),
        Task(
            "calculator",
            "What is 2x3? Use the calculator.",
            (_calculate,),
            _six,
            "a calculator that rejects 2x3 and takes 2*3",
        ),
        Task(
            "payment",
            "Pay order A-17. Use my visa; I also have a mastercard on file.",
            (_pay,),
            _paid,
            "a declined card, and a second one on file",
            _paid_once,
        ),
        Task(
            "forecast",
            "What's tomorrow's weather in Lyon? The forecast you gave me earlier is surely out "
            "of date: check again until it changes.",
            (_forecast,),
            _forecast_given,
            "a forecast the user insists is out of date",
        ),
        Task(
            "poll-insist",
            "CI job nightly-build-7 must have finished by now. Check its status again until it "
            "says it has finished, then tell me.",
            (_job_status,),
            _still_running,
            "a job poll the user insists must have finished",
        ),
        Task(
            "ping-insist",
            "db-3.internal was restarted a minute ago and must be back. Keep pinging it until it "
            "answers, then tell me.",
            (_ping,),
            _unreachable,
            "a host the user insists must be back",
        ),
    )
}
"""The lab's tasks, by name."""


# -- running -----------------------------------------------------------------------------------


class _Count(AgentMiddleware):
    """Counts the model's calls and the tokens they report (the lab runs agents sync).

    Placed after the guard, it sees each request as the guard sent it: every task has tools, so
    a request without them, or told to call none, is the guard asking for the answer. Each
    call is made inside `watch(its number)`, when given.
    """

    name = "LabCount"

    def __init__(self, watch: Callable[[int], AbstractContextManager[object]] | None) -> None:
        super().__init__()
        self.calls = 0
        self.tokens = 0
        self.held_back: str | None = None
        self._watch = watch

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        if not request.tools:
            self.held_back = "withheld"
        elif request.tool_choice in ("none", {"type": "none"}):
            self.held_back = "tool_choice_none"
        self.calls += 1  # counted as it goes out, for `watch`
        with nullcontext() if self._watch is None else self._watch(self.calls):
            return handler(request)

    def after_model(self, state: Any, runtime: Any) -> None:
        last = state["messages"][-1]
        usage = getattr(last, "usage_metadata", None) or {}
        self.tokens += usage.get("total_tokens", 0)


def _guard_for(
    condition: str, config: ReminderConfig | None = None
) -> RepeatToolReminderMiddleware | None:
    """The guard a condition runs with, or None (`none`)."""
    if condition == "none":
        return None
    if condition == "guard":
        return RepeatToolReminderMiddleware()
    if condition == "escalate":
        return RepeatToolReminderMiddleware(escalate_after=10, exit_behavior="end")
    if condition == "finish":
        return RepeatToolReminderMiddleware(escalate_after=10, exit_behavior="finish")
    if condition == "neutral":
        return RepeatToolReminderMiddleware(words={"*": {"gentle": _NEUTRAL, "detailed": _NEUTRAL}})
    if condition == "config":
        if config is None:
            raise ValueError("the config condition needs the settings to run with")
        return RepeatToolReminderMiddleware(config=config)
    raise ValueError(f"unknown condition {condition!r}; the conditions are {', '.join(CONDITIONS)}")


def run_task(
    model: BaseChatModel,
    task: Task,
    condition: str,
    *,
    run: int = 1,
    max_calls: int = 24,
    config: ReminderConfig | None = None,
    watch: Callable[[int], AbstractContextManager[object]] | None = None,
) -> LabRun:
    """Run `task` once under `condition` with the real `create_agent`, and measure it.

    The cap ends a run that nothing else ends, under every condition and every `exit_behavior`
    the settings may hold: a run the guard stops by raising (`"error"`) or by asking a human
    (`"interrupt"`) is a run it ended, its conversation read from the run's checkpoint.
    `watch`, given each model call's number as the call goes out, returns a context the call
    is made in: the command line shows there, at a terminal, which call a run is at.
    """
    count = _Count(watch)
    guard = _guard_for(condition, config)
    middleware: list[Any] = [ModelCallLimitMiddleware(run_limit=max_calls), count]
    if guard is not None:
        middleware.insert(1, guard)
    agent = create_agent(
        model, tools=list(task.tools), middleware=middleware, checkpointer=InMemorySaver()
    )
    settings: RunnableConfig = {
        # A model call passes through each node of the graph at most once: with a step per
        # node per call, LangGraph's recursion limit is never what ends a run, the cap is.
        "recursion_limit": len(agent.nodes) * (max_calls + 1),
        "configurable": {"thread_id": f"{task.name}-{condition}-{run}"},
    }
    started = time.perf_counter()
    try:
        agent.invoke({"messages": [HumanMessage(task.request)]}, settings)
        stopped = False
    except RepeatToolLoopError:
        stopped = True
    seconds = time.perf_counter() - started
    state = agent.get_state(settings)
    stopped = stopped or bool(state.interrupts)
    messages: list[BaseMessage] = list(state.values["messages"])
    last = messages[-1]
    ended = "guard" if stopped or from_guard(last) else "limit" if _capped(last) else "answer"
    longest, broke = _longest(messages, stopped)
    answer = last.text if isinstance(last, AIMessage) and ended == "answer" else ""
    results = [m.text for m in messages if isinstance(m, ToolMessage) and not from_guard(m)]
    acceptable = (
        bool(answer)
        and task.accept(answer)
        and (task.did is None or task.did(results))
        and not _echoes(answer, messages)
    )
    return LabRun(
        task.name,
        condition,
        run,
        count.calls,
        longest,
        broke,
        acceptable,
        ended,
        count.tokens,
        seconds,
        answer,
        None if guard is None else _settings(guard.config),
        count.held_back,
        messages,
    )


def run_lab(
    model: BaseChatModel,
    tasks: Iterable[Task],
    conditions: Sequence[str],
    *,
    runs: int = 1,
    max_calls: int = 24,
    config: ReminderConfig | None = None,
) -> Iterator[LabRun]:
    """Every task under every condition, `runs` times each, one run at a time."""
    for task in tasks:
        for condition in conditions:
            for number in range(1, runs + 1):
                yield run_task(
                    model, task, condition, run=number, max_calls=max_calls, config=config
                )


def _longest(messages: Sequence[BaseMessage], stopped: bool = False) -> tuple[int, str | None]:
    """The longest run of identical calls, as the guard counts it, and what ended it.

    What ended it (see `LabRun.broke`) is read between the model turn that made its last call
    and the model's next turn: the guard's last words there, or the cap's or the guard's end.
    A run the guard `stopped` by raising or asking ends after the results of its last turn.
    """
    runs = [(item.trace.streak, item.message) for item in replay(messages, _COUNTED) if item.trace]
    if not runs:
        return 0, None
    longest, turn = max(runs, key=lambda run: run[0])  # the first longest: its last call
    said = None
    for message in messages[turn + 1 :]:
        if _capped(message) or (from_guard(message) and isinstance(message, AIMessage)):
            return longest, "limit" if _capped(message) else "escalated"
        if isinstance(message, AIMessage):
            break  # the model's next turn: it changed course
        if from_guard(message):
            tag = tag_of(message) or {}
            said = "neutral" if _NEUTRAL in str(message.content) else str(tag.get("level"))
    else:
        if stopped:
            return longest, "escalated"
    return longest, said


def _echoes(answer: str, messages: Sequence[BaseMessage]) -> bool:
    """Whether `answer` repeats the guard's own words.

    That is five words in a row that the guard said and that neither the user nor a tool said
    (what the guard quotes of them is theirs to repeat).
    """
    said = [m for m in messages if not isinstance(m, AIMessage)]
    guard = _runs(" ".join(m.text for m in said if from_guard(m)))
    theirs = _runs(" ".join(m.text for m in said if not from_guard(m)))
    return not _runs(answer).isdisjoint(guard - theirs)


def _runs(text: str, length: int = 5) -> set[tuple[str, ...]]:
    """Every run of `length` words in `text`, lowercased, punctuation aside."""
    words = re.findall(r"\w+(?:['.-]\w+)*", text.lower())
    return {tuple(words[i : i + length]) for i in range(len(words) - length + 1)}


def _settings(config: ReminderConfig) -> dict[str, Any]:
    """The settings a guard was given, as plain data."""
    return config.model_dump(mode="json", include=set(config.model_fields_set))


def _capped(message: BaseMessage) -> bool:
    """Whether `message` is the one `ModelCallLimitMiddleware` ends a run with."""
    return isinstance(message, AIMessage) and str(message.content).startswith(_CAPPED)


_CAPPED = "Model call limits exceeded"
# Every tool tracked, every identical call counted: runs of identical calls as the plugin's rule
# counts them.
_COUNTED = ReminderConfig(profile="seed")
