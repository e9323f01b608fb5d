"""The callback handler: every agent's streaks, the agent found from where its runs sit.

An agent is a model and its tools talking in one conversation. The handler tells agents apart
by three things every run carries: the conversation (`thread_id`, or without one the root
run), the graph namespace (`langgraph_checkpoint_ns` without its last segment), and the tool
calls the run is nested in (a subagent started by a tool is a different agent from the one that
called the tool, and two subagents started by two calls are different from each other).

The calls themselves are counted from the conversation, not from tool runs: the model's
`AIMessage` lists every call it made in order, including calls to tools that do not exist and
calls refused before they ran, which fire no tool callbacks at all.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, dispatch_custom_event
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables import RunnableConfig
from typing_extensions import Unpack

from ._config import ReminderConfig, ReminderFields, resolve_config
from ._conversation import is_reminder
from ._counter import Turn
from ._events import report
from ._guard import Guard, instance_name
from ._log import LOGGER_NAME, warn
from ._record import Record
from ._wiring import Misplaced, refuse_block

if TYPE_CHECKING:
    from ._metrics import MeterProviderOption

__all__ = ["HandlerStore", "RepeatToolReminderCallbackHandler"]

logger = logging.getLogger(LOGGER_NAME)

_Scope = tuple[str, Any]  # ("thread", thread_id) or ("run", root run id)
AgentKey = tuple[_Scope, str, tuple[str, ...]]


class _Run(NamedTuple):
    root: int  # the root run's id, as an integer (a UUID hashes in Python, an int in C)
    path: tuple[str, ...]  # the tool calls this run is nested in, outermost first
    call: str | None = None  # on a tool run: the call its own child runs are nested in

    def child_lineage(self) -> tuple[int, tuple[str, ...]]:
        return self.root, self.path if self.call is None else (*self.path, self.call)


class HandlerStore:
    """Every agent's record, in the handler's memory: where its node reads and writes them.

    At most `limit` agents are remembered, the least recently used forgotten first; those of a
    run without a thread are forgotten when the run ends.
    """

    def __init__(self, runs: Mapping[int, _Run], *, limit: int) -> None:
        self._runs = runs  # the handler's run tree, read to find a node's agent
        self.limit = limit
        self._lock = threading.Lock()
        self._agents: OrderedDict[AgentKey, Record] = OrderedDict()
        self._by_root: dict[Any, set[AgentKey]] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._agents)

    def find(self, state: Any, run_config: RunnableConfig) -> AgentKey | None:
        """The agent a node's run belongs to; None when the run is outside the handler's sight.

        (The state plays no part: the agent is found from where the run sits.)
        """
        run = self._run(run_config)
        if run is None:
            return None
        return _agent_key(run.root, run.path, run_config.get("metadata"))

    def invocation(self, where: AgentKey, run_config: RunnableConfig | None) -> int | None:
        """The root run of a node's run, which the handler saw start (the integer of its id)."""
        run = self._run(run_config)
        return None if run is None else run.root

    def keep_invocation(self, where: AgentKey, run: str) -> dict[str, Any]:
        """Nothing to keep: the handler knows each run's root from its callbacks."""
        return {}

    def _run(self, run_config: RunnableConfig | None) -> _Run | None:
        """Where a node's run sits in the run tree; None when the handler did not see it."""
        run_id = getattr((run_config or {}).get("callbacks"), "parent_run_id", None)
        return self._runs.get(run_id.int) if isinstance(run_id, UUID) else None

    def read(self, key: AgentKey) -> Record:
        """The agent's record (empty before its first count)."""
        with self._lock:
            record = self._agents.get(key)
            if record is None:
                return {}
            self._agents.move_to_end(key)  # used: the last to be forgotten
            return record

    def write(self, key: AgentKey, record: Record) -> dict[str, Any]:
        """Keep the agent's record; the graph state is left as it is (an empty update)."""
        with self._lock:
            known = key in self._agents
            self._agents[key] = record
            if known:
                self._agents.move_to_end(key)
                return {}
            scope = key[0]
            if scope[0] == "run":
                self._by_root.setdefault(scope[1], set()).add(key)
            while len(self._agents) > self.limit:
                old, _ = self._agents.popitem(last=False)
                if old[0][0] == "run":
                    self._by_root.get(old[0][1], set()).discard(old)
        return {}

    def forget(self, root: int) -> None:
        """Forget the agents of a finished run without a thread."""
        with self._lock:
            for agent in self._by_root.pop(root, ()):
                self._agents.pop(agent, None)


def _agent_key(
    root: int, path: tuple[str, ...], metadata: Mapping[str, Any] | None
) -> AgentKey | None:
    """The agent of a run: its conversation, its graph namespace, the tool calls around it."""
    namespace = metadata.get("langgraph_checkpoint_ns") if metadata else None
    if not isinstance(namespace, str):
        return None  # not inside a graph, so not inside an agent
    thread = metadata.get("thread_id") if metadata else None
    scope: _Scope = ("run", root) if thread is None else ("thread", thread)
    return scope, namespace.rpartition("|")[0], path


class RepeatToolReminderCallbackHandler(BaseCallbackHandler):
    """Keeps every agent's record for the runs it watches.

    Pass it in the run's callbacks and place a `RepeatToolReminderNode` built on it after the
    tools node; the node counts each finished tool turn and adds the reminders that are due.
    Subagents run inside tools inherit the callbacks and get records of their own. Without
    the node, the handler still counts (when the model is next called), but its reminders
    reach no model: they are reported as not delivered, and it warns once.

    The records of a conversation with a `thread_id` outlive the run (a resumed or continued
    thread keeps counting); those of a run without one are forgotten when it ends. At most
    `max_agents` agents are remembered, the least recently used forgotten first.

    `stats` holds running totals (`handler.stats.snapshot()`); `tool_policies` the policies
    the tools declared in their metadata, learnt as they run; `records` every agent's record.

    Args:
        config: A `ReminderConfig`. Give either this or its fields, not both.
        meter_provider: Where its OpenTelemetry metrics go: a `MeterProvider`, None (the
            default) for the global one when opentelemetry-api is installed, False for none.
        **fields: `ReminderConfig` fields.

    Examples:
        >>> guard = RepeatToolReminderCallbackHandler(thresholds=[3, 5, 8], exclude=["todo_*"])
        >>> guard.config.thresholds
        (3, 5, 8)

    """

    # Given to create_agent(middleware=[...]) by mistake, it fails where create_agent reads
    # a middleware's hooks, saying what goes there.
    wrap_tool_call = awrap_tool_call = wrap_model_call = awrap_model_call = Misplaced(
        "RepeatToolReminderCallbackHandler is a callback handler, not middleware: for "
        "create_agent(middleware=[...]) use RepeatToolReminderMiddleware; the handler goes in "
        "the run's callbacks (config={'callbacks': [handler]}) with a RepeatToolReminderNode "
        "after the tools node of your own graph"
    )
    before_agent = before_model = after_model = after_agent = wrap_tool_call

    # Callbacks run in the thread that fires them, not in an executor: the handler only
    # records where runs sit and reads the conversation, and must see runs in the order
    # they start.
    run_inline = True
    # A bound on memory for handlers that live as long as a server: runs in flight (a run
    # whose end never came, e.g. a handler added mid-run, is dropped).
    max_runs: int = 100_000

    def __init__(
        self,
        config: ReminderConfig | None = None,
        *,
        meter_provider: MeterProviderOption = None,
        **fields: Unpack[ReminderFields],
    ) -> None:
        settings = resolve_config(config, fields)
        refuse_block(settings)
        self._lock = threading.Lock()
        self._runs: dict[int, _Run] = {}  # by run id, as an integer
        # The model runs that read a reminder, by run id: their agent, until they end.
        self._answering: dict[int, AgentKey] = {}
        self.records = HandlerStore(self._runs, limit=10_000)
        self._warned_undelivered = False
        self._loud = False
        self.guard = Guard(
            settings,
            name=instance_name(type(self).__name__, settings),
            records=self.records,
            meter_provider=meter_provider,
        )
        self.config, self.counter = settings, self.guard.counter
        self.stats, self.tool_policies = self.guard.stats, self.guard.tools.policies

    @property
    def raise_error(self) -> bool:  # type: ignore[override]
        """Whether the callback manager lets an error of this handler fail the run.

        Never, but for a wiring warning that the user's warning filter made an error
        (`-W error::...RepeatToolReminderWarning`): that one is theirs to see. The manager
        asks once, for the error the warning raised.
        """
        loud, self._loud = self._loud, False
        return loud

    @property
    def max_agents(self) -> int:
        """How many agents' records are kept at most (10,000 unless set)."""
        return self.records.limit

    @max_agents.setter
    def max_agents(self, value: int) -> None:
        self.records.limit = value

    @property
    def agent_count(self) -> int:
        """How many agents' records are held now."""
        return len(self.records)

    # -- the run tree ---------------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Place the run in the tree."""
        self._enter(run_id, parent_run_id, None)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the run out of the tree; a finished root forgets its agents."""
        self._leave(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the run out of the tree; a finished root forgets its agents."""
        self._leave(run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Place the tool run in the tree; read the policy the tool declares, if any.

        Whatever runs inside the tool belongs to another agent.
        """
        self._enter(run_id, parent_run_id, kwargs.get("tool_call_id") or f"run:{run_id}")
        self.tool_policies.learn((serialized or {}).get("name"), kwargs.get("metadata"))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the tool run out of the tree."""
        self._leave(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Take the tool run out of the tree."""
        self._leave(run_id)

    # -- the conversation -----------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Count what no node counted (no node, or a route around it); reset on a user message.

        Defining this method also keeps langchain-core from falling back to `on_llm_start`,
        which renders every message as a string and fails on arguments whose `str()` fails.
        """
        parent = self._runs.get(parent_run_id.int) if parent_run_id is not None else None
        if parent is None or not messages:
            return
        key = _agent_key(*parent.child_lineage(), metadata)
        if key is None:
            return
        step = self.guard.watch(key, messages[0])
        if step is None:
            # Most model calls: the node counted the turn already. A model reading a reminder
            # is watched to its end: an answer then is a recovery, which no count would see
            # if the run ends with it.
            if _reads_reminder(messages[0]) and self.records.read(key).get("reminded"):
                self._answering[run_id.int] = key
                if len(self._answering) > self.max_runs:  # a run whose end never came
                    with contextlib.suppress(RuntimeError, StopIteration, KeyError):
                        del self._answering[next(iter(self._answering))]
            return
        found = step.found
        if any(r.reminds for r in found.reminders) or found.escalation is not None:
            self._warn_undelivered()
        report(step.report, dispatch_custom_event)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Count a model that answered, without a call, after a reminder it read."""
        key = self._answering.pop(run_id.int, None) if self._answering else None
        if key is None:
            return  # most model calls: no reminder waits for their answer
        generations = response.generations[0] if response.generations else ()
        message = getattr(generations[0], "message", None) if generations else None
        if not isinstance(message, AIMessage) or message.tool_calls or message.invalid_tool_calls:
            return  # another call: the node follows it up when it counts that turn
        step = self.guard.step(key, Turn(answered=True))
        if step is not None:  # pragma: no branch - a turn handed over is always counted
            report(step.report, dispatch_custom_event)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call that failed answered nothing."""
        if self._answering:
            self._answering.pop(run_id.int, None)

    # -- bookkeeping ----------------------------------------------------------------------

    def _warn_undelivered(self) -> None:
        if self._warned_undelivered or self.config.mode == "observe":
            return
        self._warned_undelivered = True
        self._loud = True  # if the user made the warning an error, it is theirs to see
        warn(
            "repeat tool reminders are due but reach no model: no RepeatToolReminderNode ran "
            "after the tools node for this agent. In a custom graph, add "
            "RepeatToolReminderNode(handler) between the tools node and the model node; with "
            "create_agent, use RepeatToolReminderMiddleware instead of the handler."
        )
        self._loud = False

    # Every run of the graph passes through these two: single dict operations, atomic on
    # their own, so no lock but for the rare trimming and the end of a root run.
    def _enter(self, run_id: UUID, parent_run_id: UUID | None, call: str | None) -> None:
        key = run_id.int
        parent = self._runs.get(parent_run_id.int) if parent_run_id is not None else None
        if parent is None:
            self._runs[key] = _Run(key, (), call)
        elif parent.call is None:
            self._runs[key] = _Run(parent.root, parent.path, call)
        else:
            self._runs[key] = _Run(parent.root, (*parent.path, parent.call), call)
        if len(self._runs) > self.max_runs:
            with self._lock, contextlib.suppress(RuntimeError, StopIteration, KeyError):
                del self._runs[next(iter(self._runs))]

    def _leave(self, run_id: UUID) -> None:
        key = run_id.int
        run = self._runs.pop(key, None)
        if run is not None and run.root == key:
            self.records.forget(key)


def _reads_reminder(messages: list[BaseMessage]) -> bool:
    """Whether a model is asked to go on after a reminder: one follows the latest model turn.

    (Not a model asked something aside, which may answer without a call too.)
    """
    for message in reversed(messages):
        if is_reminder(message):
            return True
        if isinstance(message, AIMessage):
            return False
    return False
