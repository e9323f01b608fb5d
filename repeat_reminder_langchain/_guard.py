"""One guard step for every face: read the turn, count it, decide what it leads to.

Every face (the middleware, the node, the handler) holds a `Guard` and asks it once per model
turn, with where its record lives and the conversation: `Guard.step` where the face adds what
the step makes to its graph, `Guard.watch` where it cannot (the handler, counting what no node
counted), `Guard.answered` for a model that answered a reminder as its run ends. The step reads the
record, reads the finished turn, counts it and returns a `TurnResult`: the state update that keeps
the new record, the messages to add, whether the run ends or stops, and what to report; it adds
the turn to the guard's stats (the one place they, and so the metrics, are added to). It
sends nothing and raises nothing: the face returns the update to its graph (adding the
messages where its graph keeps them), passes the step to `events.report` with its dispatcher,
and then raises the stop, if any. A face keeps only where its record lives and how a message
reaches its graph.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast
from uuid import UUID

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.runtime import get_runtime
from langgraph.types import interrupt

from ._arguments import ToolSchemas
from ._config import ReminderConfig
from ._conversation import is_user_message, read_state, read_turn, user_test
from ._counter import NOTHING, Count, LoopCounter, Turn
from ._escalation import RepeatToolLoopError, interrupt_request, read_answer
from ._events import Delivery, Report
from ._exits import END, EXITS, Exit
from ._log import LOGGER_NAME, warn
from ._messages import (
    escalation_message,
    finish_message,
    latest_results,
    loop_context,
    reminder_message,
)
from ._metrics import metrics_for
from ._policy import ToolPolicies
from ._record import Record, RecordError, asking_answer, noting_system, read_record
from ._reminder import Escalation, UserWords
from ._stats import Stats

if TYPE_CHECKING:
    from ._metrics import MeterProviderOption

__all__ = [
    "NO_TOOLS",
    "RUN_FIELD",
    "Guard",
    "RecordStore",
    "StateStore",
    "Tools",
    "ToolsOf",
    "TurnResult",
    "current_run_config",
    "instance_name",
    "invocation_of",
    "thread_of",
]

logger = logging.getLogger(LOGGER_NAME)

RUN_FIELD = "repeat_tool_reminder_run"
"""The state field where the state-kept node keeps the id of the invocation (not checkpointed:
each invocation starts without it), for its log lines."""


class RecordStore(Protocol):
    """Where a face keeps its records: a state field, or the handler's memory."""

    def read(self, where: Any) -> Record:
        """The record kept there (empty before the first count)."""

    def write(self, where: Any, record: Record) -> dict[str, Any]:
        """Keep the record there; the state update that does it."""

    def invocation(self, where: Any, run_config: RunnableConfig | None) -> object:
        """The id of the invocation as these records know it, for log lines (None: not known)."""

    def keep_invocation(self, where: Any, run: str) -> dict[str, Any]:
        """Keep the id the invocation's first report gave it, for its later reports to carry.

        The state update that does it, if the state keeps it.
        """


class Tools(NamedTuple):
    """What a guard knows of an agent's tools: their policies, how they read their arguments."""

    policies: ToolPolicies
    schemas: ToolSchemas

    @classmethod
    def of(cls, tools: Iterable[object]) -> Tools:
        """What `tools` declare and how they read their arguments."""
        known = cls(ToolPolicies(), ToolSchemas())
        for tool in tools:
            known.learn(tool)
        return known

    def learn(self, tool: object) -> None:
        """Read `tool`'s policy and schema (each re-read only when it changed)."""
        self.policies.learn(getattr(tool, "name", None), getattr(tool, "metadata", None))
        self.schemas.learn(tool)


NO_TOOLS = Tools.of(())
"""Nothing known of any tool: every call counted by the configuration alone, as sent."""


class ToolsOf(dict[str, Tools]):
    """The tools of the agent that made each model turn, by the turn's id.

    A face shared by agents fills it; `default` answers for a turn it does not know.
    """

    __slots__ = ("default",)

    def __init__(self, default: Tools = NO_TOOLS) -> None:
        super().__init__()
        self.default = default

    def __missing__(self, turn: str) -> Tools:
        return self.default


class TurnResult(NamedTuple):
    """What one turn leads to, built but not applied.

    Attributes:
        found: What counting the turn found.
        update: The state update that keeps the new record (empty when it did not change,
            or when the run stops here: the turn is then counted again when it resumes).
        messages: The messages to add to the conversation, in order.
        end: Whether the run ends here (the last message is the guard's final word).
        stop: What to raise once the step is reported: the run stops there.
        report: What to report (`events.report`); None when nothing was due, or when a
            human's answer resumes a loop that was reported when they were asked.
        turn: The turn that was counted.
        record: The record after the step (the one read, when the step did not change it).
    """

    found: Count
    update: dict[str, Any]
    messages: list[BaseMessage]
    end: bool
    stop: BaseException | None
    report: Report | None
    turn: Turn
    record: Record


class Guard:
    """What every face holds: the configuration compiled, the tools' policies, the totals.

    Args:
        config: The configuration.
        name: The instance's name (its metrics and events carry it).
        records: Where the face keeps its records.
        meter_provider: Where its OpenTelemetry metrics go (see `metrics_for`).
        named: Whether the user gave the name: its log lines then carry it too.
    """

    __slots__ = (
        "asks",
        "config",
        "counter",
        "name",
        "named",
        "not_user",
        "records",
        "reminders_reach_model",
        "stats",
        "stops",
        "tools",
        "turns",
        "words",
    )

    def __init__(
        self,
        config: ReminderConfig,
        *,
        name: str,
        records: RecordStore,
        meter_provider: MeterProviderOption = None,
        named: bool = False,
    ) -> None:
        self.config = config
        self.name, self.named = name, named
        self.records = records
        self.counter = LoopCounter(config)
        self.not_user = user_test(config.not_user)
        self.tools = Tools.of(())  # a face's own, learnt as it is shown its tools
        # The tools of the agent that made each model turn, where a face shared by agents
        # notes them (the middleware); a turn not noted counts with the face's own.
        self.turns = ToolsOf(self.tools)
        self.stats = Stats(metrics_for(meter_provider, name))
        self.reminders_reach_model = config.mode == "remind"  # not when it only observes
        self.words = UserWords(config.words) if config.words else None  # most guards have none
        # How it stops a loop (None: it never does): what a face must do around the model
        # and tool calls is that exit's to say, never its name's.
        self.stops: Exit | None = (
            EXITS[config.exit_behavior]
            if self.reminders_reach_model and config.escalate_after is not None
            else None
        )
        # Whether a loop it stops asks a human, with no run seen yet that cannot resume.
        self.asks = self.stops is not None and self.stops.pauses

    def step(
        self,
        where: Any,
        conversation: Sequence[BaseMessage] | Turn,
        *,
        run_config: RunnableConfig | None = None,
        can_end: bool = True,
    ) -> TurnResult | None:
        """Count what happened since the record's turn; None when nothing did.

        For a face that adds the step's messages to its graph (the middleware, the node).

        Args:
            where: Where the record is, as the face's `records` finds it.
            conversation: The conversation, or the turn a face read from it.
            run_config: The config of the run the step is for (None: the current graph run's).
            can_end: Whether the face can end the run (a node whose graph routes on from it
                by its `route`). When it cannot, a loop it would end goes on: nothing is added,
                and the escalation is reported as not carried out.
        """
        return self._step(where, conversation, run_config, "sent", False, can_end)

    def watch(self, where: Any, conversation: Sequence[BaseMessage] | Turn) -> TurnResult | None:
        """`step`, for a face that cannot add messages (the handler, counting what no node did).

        Nothing is acted on, and the step reports its reminders as not delivered.
        """
        return self._step(where, conversation, None, "undelivered", False, True)

    def answered(self, where: Any, conversation: Sequence[BaseMessage] | Turn) -> TurnResult | None:
        """`step` for the model answering after a reminder it saw, before the run ends.

        Only that answer is counted (most runs: none waits, and this is None); a tool turn is
        left to the next `step`, whose reminders can still reach the model.
        """
        return self._step(where, conversation, None, "sent", True, True)

    def _step(  # noqa: PLR0917 - the one body of the three questions above
        self,
        where: Any,
        conversation: Sequence[BaseMessage] | Turn,
        run_config: RunnableConfig | None,
        delivery: Delivery,
        answer_only: bool,
        can_end: bool,
    ) -> TurnResult | None:
        if self.asks and delivery == "sent" and not answer_only:  # a step that may ask
            self._check_resumable(run_config or current_run_config())
        records = self.records
        record = records.read(where)
        if answer_only and not record.get("reminded"):
            return None  # most runs: no reminder waits for its answer
        history: Sequence[BaseMessage] = ()  # a turn handed over alone: nothing to hand over
        if type(conversation) is Turn:
            turn, tools = conversation, self.tools
        else:
            history = conversation  # type: ignore[assignment]
            if not record:  # a conversation this guard has not seen: its history counts
                record = self._history(conversation)  # type: ignore[arg-type]
            turn, tools = self.read(conversation, record)  # type: ignore[arg-type]
            if turn is NOTHING or (answer_only and (turn.id or not turn.answered)):
                return None
        sent = delivery == "sent"
        reaches = sent and self.reminders_reach_model
        found = self.counter.count(
            record, turn, tools.policies, schemas=tools.schemas, reminders_reach_model=reaches
        )
        quiet = not found.reminders and found.escalation is None
        if quiet or not sent:
            # Most turns: nothing to tell, nothing to report; only the record to keep. (A face
            # that cannot add messages, `watch`, acts on nothing, and reports what it found as
            # not delivered, from the current run: it is given no run config.)
            report = None if quiet else self._report(found, reaches, current_run_config(), None)
            self.stats.add(found)
            kept = record if found.record is None else found.record
            update = {} if found.record is None else self.records.write(where, kept)
            return TurnResult(found, update, [], False, None, report, turn, kept)
        run_config = run_config or current_run_config()
        return self._act(
            where,
            found,
            turn=turn,
            history=history,
            run_config=run_config,
            invocation=records.invocation(where, run_config),  # as the records know it
            can_end=can_end,
        )

    def read(
        self, messages: Sequence[BaseMessage], record: Record, end: int | None = None
    ) -> tuple[Turn, Tools]:
        """What happened in `messages[:end]` since the record's turn, and the tools it used.

        The calls' arguments are as the model sent them: the counter reads each as its tool
        reads it (`Tools.schemas`), where it keys it.
        """
        turn = read_turn(messages, record.get("turn", ""), end, self.not_user)
        return turn, (self.turns[turn.id] if turn.id else self.tools)

    def _history(self, messages: Sequence[BaseMessage]) -> Record:
        """The record of a conversation handed in whole, as if the guard had watched it.

        The model turns since the user last spoke, but the latest (the step counts it), are
        counted in order; what they drew is not sent now, too late, and not reported: only the
        count they reached is kept, so the next call gets what its count deserves. Where a
        detector in use remembers something of an agent (a failure, which a user message may
        not end), every model turn is counted, the user's messages resetting what they reset.
        """
        whole = self.counter.remembers
        turns: list[int] = []  # where each model turn to count is
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if isinstance(message, AIMessage):
                turns.append(index)
            elif not whole and is_user_message(message, self.not_user):
                break
        record: Record = {}
        for end in reversed(turns[:-1]):  # each turn is read up to the next one
            turn, tools = self.read(messages, record, end)
            found = self.counter.count(
                record, turn, tools.policies, schemas=tools.schemas, reminders_reach_model=False
            )
            record = found.record or record
        return record

    def _check_resumable(self, run_config: RunnableConfig | None) -> None:
        """Say, once, that a run without a checkpointer could never resume from its interrupt."""
        configurable = (run_config or {}).get("configurable") or {}
        # LangGraph's key for the run's checkpointer: None without one, absent outside a graph.
        if configurable.get("__pregel_checkpointer", False) is None:
            self.asks = False
            warn(
                'exit_behavior="interrupt" pauses a looping run for a human, but this graph '
                "has no checkpointer, so the run can never be resumed: compile the graph with "
                "one (checkpointer=InMemorySaver()) and run it with a thread_id, or choose "
                'exit_behavior="finish" (the model answers with what it has), "end" or "error"'
            )

    def _report(
        self,
        found: Count,
        delivered: bool,
        run_config: RunnableConfig | None,
        invocation: object,
    ) -> Report:
        """What a turn with something due reports, from the run it is in."""
        thread, run = thread_of(run_config), invocation_of(run_config, invocation)
        return Report(found, self.config, delivered, run_config, thread, run, self.name, self.named)

    def _act(
        self,
        where: Any,
        found: Count,
        *,
        turn: Turn,
        history: Sequence[BaseMessage],
        run_config: RunnableConfig | None,
        invocation: object,
        can_end: bool,
    ) -> TurnResult:
        """The reminders to add, or the escalation to carry out, for a count with something due.

        What an escalation leads to is its exit's choice (`Exit.carry_out`), among the
        `_Acting` this step can do; observed, nothing is done, and all is reported.
        """
        report = self._report(found, self.reminders_reach_model, run_config, invocation)
        acting = _Acting(self, found, history, report, can_end)
        escalation = found.escalation
        if self.config.mode == "observe":
            done = acting.nothing()
        elif escalation is None:
            done = acting.remind()
        else:
            done = escalation.exit.carry_out(acting)
        record, messages, end, stop, reported = done
        if reported is not None:  # None: reported, and counted, when a human was asked
            self.stats.add(found, delivered=reported.delivered)
        update: dict[str, Any] = {}
        if stop is None:  # a run that stops keeps nothing: the turn is counted again on resume
            # Noted once, for a model that takes no system message: its requests are searched.
            if any(m.type == "system" for m in messages):
                record = noting_system(record)
            update = self.records.write(where, record)
            if report.run not in (None, invocation):  # the invocation's first report
                update.update(self.records.keep_invocation(where, report.run))
        return TurnResult(found, update, messages, end, stop, reported, turn, record)

    def final(self, escalation: Escalation, history: Sequence[BaseMessage]) -> BaseMessage:
        """The final message of a run the guard ends: its words, and what the tools returned."""
        return escalation_message(
            escalation,
            self.words,
            latest_results(history, self.config, self.counter.failed),
            loop_context(history, escalation.tool),
        )


class _Done(NamedTuple):
    """What carrying out a step did.

    The record to keep, the messages to add, whether the run ends or stops, and what to report
    (None: the loop was reported when a human was asked).
    """

    record: Record
    messages: list[BaseMessage]
    end: bool
    stop: BaseException | None
    report: Report | None


class _Acting:
    """What a guard can do about one step's count (`Actions`).

    For a loop at the limit, its exit chooses which (`Exit.carry_out`).
    """

    __slots__ = ("can_end", "escalation", "found", "guard", "history", "report")

    def __init__(
        self,
        guard: Guard,
        found: Count,
        history: Sequence[BaseMessage],
        report: Report,
        can_end: bool,
    ) -> None:
        self.guard, self.found, self.history, self.report = guard, found, history, report
        self.can_end = can_end
        # What an exit carries out: only ever asked of a count with an escalation.
        self.escalation = cast("Escalation", found.escalation)

    def nothing(self) -> _Done:
        """Observed: the record kept, nothing added."""
        return _Done(self.found.record or {}, [], False, None, self.report)

    def remind(self) -> _Done:
        reminders = [r for r in self.found.reminders if r.reminds]  # the others report only
        guard = self.guard
        messages: list[BaseMessage] = []
        if reminders:
            messages.append(reminder_message(reminders, guard.config.message_type, guard.words))
        return _Done(self.found.record or {}, messages, False, None, self.report)

    def end(self) -> _Done:
        record = self.found.record or {}
        if not self.can_end:  # nothing ends the run: it is not said to have been
            return _Done(record, [], False, None, self.report._replace(delivered=False))
        final = self.guard.final(self.escalation, self.history)
        return _Done(record, [final], True, None, self.report)

    def ask_answer(self) -> _Done:
        # The model's next call is its last, with no tool to call where the face owns the
        # call (the middleware), and a model that calls all the same is ended. The record
        # says so until the user speaks again.
        escalation, guard = self.escalation, self.guard
        seen = loop_context(self.history, escalation.tool)
        message = finish_message(escalation, guard.config.message_type, guard.words, seen)
        record = asking_answer(self.found.record or {}, escalation)
        return _Done(record, [message], False, None, self.report)

    def stop(self) -> _Done:
        error = RepeatToolLoopError(self.escalation, self.report.thread)
        return _Done(self.found.record or {}, [], False, error, self.report)

    def ask_human(self) -> _Done:
        """Ask a human what to do about a loop; once they answered, carry out their choice.

        The first time, the run pauses with LangGraph's `GraphInterrupt`; when their answer
        resumes it, their choice is carried out, and the loop, reported when they were asked,
        is not reported again.
        """
        escalation, guard = self.escalation, self.guard
        record = self.found.record or {}
        try:
            answer = interrupt(interrupt_request(escalation))
        except GraphInterrupt as asked:
            return _Done(record, [], False, asked, self.report)
        choice, text = read_answer(answer)
        logger.info("repeat tool loop on %s: resumed with %r", escalation.summary, choice)
        if choice == "continue":
            return _Done(guard.counter.reset(record), [], False, None, None)
        if choice == "message":
            return _Done(guard.counter.reset(record), [HumanMessage(text)], False, None, None)
        # The human ended the run: it ended as `end` ends one, and says so (`stop_reason`).
        ended = replace(escalation, behavior=END.name)
        return _Done(record, [guard.final(ended, self.history)], True, None, None)


def instance_name(face: str, config: ReminderConfig) -> str:
    """The default name of a guard: its face, with `include`/`exclude` when they are given.

    Example:
        >>> instance_name("RepeatToolReminderNode", ReminderConfig(exclude=["todo_*"]))
        'RepeatToolReminderNode[exclude=todo_*]'

    """
    scope = []
    if config.include:
        scope.append("include=" + ",".join(config.include))
    if config.exclude and "exclude" in config.model_fields_set:
        scope.append("exclude=" + ",".join(config.exclude))
    return f"{face}[{'; '.join(scope)}]" if scope else face


def current_run_config() -> RunnableConfig | None:
    """The config of the graph run this is called in, or None outside one."""
    try:
        return get_config()
    except RuntimeError:
        return None


def invocation_of(run_config: RunnableConfig | None, known: object = None) -> str | None:
    """The id of the invocation a step is in, so that one run's log lines group together.

    LangGraph's id of the run, when it has one: a caller's `config["run_id"]`, which the
    LangGraph server sets for each run. Else the id the face knows: the handler's root run
    (kept as an integer) or the one the middleware keeps for the run. Else the step's own run.
    """
    try:
        run = getattr(get_runtime().execution_info, "run_id", None)
    except Exception:  # outside a graph run, or in a runnable outside any graph
        run = None
    if run:
        return str(run)
    if known:
        return str(UUID(int=known) if type(known) is int else known)
    step = getattr((run_config or {}).get("callbacks"), "parent_run_id", None)
    return None if step is None else str(step)


def _run_control() -> object:
    """The `RunControl` of the invocation the current step is in; None outside a graph run."""
    try:
        runtime = get_runtime()
    except Exception:  # outside a graph run, or in a runnable outside any graph
        return None
    return getattr(runtime, "control", None)


def thread_of(run_config: RunnableConfig | None) -> str | None:
    """The conversation a run belongs to, if it has one."""
    if not run_config:
        return None
    thread = (run_config.get("configurable") or {}).get("thread_id")
    if thread is None:
        thread = (run_config.get("metadata") or {}).get("thread_id")
    return None if thread is None else str(thread)


class StateStore:
    """The `RecordStore` in graph state: records under `key` (by `name` too, for middleware).

    Every instance writes only its own entry: the middleware's field merges the entries
    written in one step. A record is checked when read, unless it equals the one this store
    wrote last (the usual case: the record of the turn before).

    The invocation's id is kept in the state's `RUN_FIELD` (the state-kept node's, whose state
    the user declares), or, without `run_field`, in memory by the invocation's `RunControl`
    (LangGraph makes one for each top-level run, and its steps and subgraphs share it), for the
    latest `limit` invocations: the middleware's, where a state field would cost LangGraph's
    channel work on every step of every run (24 Python calls a turn, `make bench`'s counted
    whole runs) for a value written at most once a run.
    """

    limit = 1024  # invocations whose id is kept in memory

    def __init__(self, key: str, name: str | None = None, *, run_field: bool = True) -> None:
        self.key = key
        self.name = name
        self._written: Record | None = None
        self._warned = False
        self._ids: dict[object, str] | None = None if run_field else {}
        self._lock = threading.Lock()  # a store is shared by the runs of several threads

    def read(self, where: Any) -> Record:
        """The record kept in the state `where`; one that is not valid is none (logged once)."""
        data = where.get(self.key) if type(where) is dict else read_state(where, self.key)
        if data and self.name is not None:
            data = data.get(self.name) if isinstance(data, (dict, Mapping)) else None
        if not data:
            return {}
        if type(data) is dict and (data is self._written or data == self._written):
            return data  # type: ignore[return-value]
        try:
            return read_record(data)
        except RecordError as error:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "stored repeat reminder state is not valid (%s); counting the conversation "
                    "again",
                    error,
                )
            return {}

    def invocation(self, where: Any, run_config: RunnableConfig | None) -> object:
        """The id kept for this invocation, once a step reported in it (None: none yet)."""
        if self._ids is None:
            return where.get(RUN_FIELD) if type(where) is dict else read_state(where, RUN_FIELD)
        control = _run_control()
        return None if control is None else self._ids.get(control)

    def keep_invocation(self, where: Any, run: str) -> dict[str, Any]:
        """Keep the invocation's id: the state update that writes `RUN_FIELD`, or in memory."""
        if self._ids is None:
            return {RUN_FIELD: run}
        control = _run_control()
        if control is not None:  # outside a graph there is no invocation to keep it for
            with self._lock:
                self._ids[control] = run
                if len(self._ids) > self.limit:
                    del self._ids[next(iter(self._ids))]  # the oldest invocation's
        return {}

    def write(self, where: Any, record: Record) -> dict[str, Any]:
        """The state update that keeps `record`."""
        self._written = record
        if self.name is None:
            return {self.key: record}
        return {self.key: {self.name: record}}
