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
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables import RunnableConfig
from typing_extensions import Unpack

from ._conversation import continues, tally_conversation
from ._streaks import Streaks, Tally
from .config import ReminderConfig, ReminderFields, resolve_config
from .events import report
from .policy import ToolPolicies
from .reminder import LOGGER_NAME
from .stats import Stats

__all__ = ["RepeatToolReminderCallbackHandler"]

logger = logging.getLogger(LOGGER_NAME)

_Scope = tuple[str, Any]  # ("thread", thread_id) or ("run", root run id)
AgentKey = tuple[_Scope, str, tuple[str, ...]]
_NONE = Streaks()


class _Run(NamedTuple):
    root: int  # the root run's id, as an integer (a UUID hashes in Python, an int in C)
    path: tuple[str, ...]  # the tool calls this run is nested in, outermost first
    call: str | None = None  # on a tool run: the call its own child runs are nested in

    def child_lineage(self) -> tuple[int, tuple[str, ...]]:
        return self.root, self.path if self.call is None else (*self.path, self.call)


class RepeatToolReminderCallbackHandler(BaseCallbackHandler):
    """Keeps every agent's streaks for the runs it watches.

    Pass it in the run's callbacks and place a `RepeatToolReminderNode` built on it after the
    tools node; the node counts each finished tool turn and adds the reminders that are due.
    Subagents run inside tools inherit the callbacks and get streaks of their own. Without
    the node, the handler still counts (when the model is next called), but its reminders
    reach no model: they are reported as not delivered, and it warns once.

    Streaks of a conversation with a `thread_id` outlive the run (a resumed or continued
    thread keeps counting); those of a run without one are forgotten when it ends. At most
    `max_agents` agents are remembered, the least recently used forgotten first.

    `stats` holds running totals (`handler.stats.snapshot()`); `tool_policies` the policies
    the tools declared in their metadata, learnt as they run.

    Args:
        config: A `ReminderConfig`. Give either this or its fields, not both.
        **fields: `ReminderConfig` fields.

    Example:
        >>> guard = RepeatToolReminderCallbackHandler(thresholds=[3, 5, 8], exclude=["todo_*"])
        >>> guard.config.thresholds
        (3, 5, 8)

    """

    # Callbacks run in the thread that fires them, not in an executor: the handler only
    # records where runs sit and reads the conversation, and must see runs in the order
    # they start.
    run_inline = True
    # Bounds on memory for handlers that live as long as a server: agents remembered, and
    # runs in flight (a run whose end never came, e.g. a handler added mid-run, is dropped).
    max_agents: int = 10_000
    max_runs: int = 100_000

    def __init__(
        self, config: ReminderConfig | None = None, **fields: Unpack[ReminderFields]
    ) -> None:
        self.config = resolve_config(config, fields)
        if self.config.escalate_after is not None and self.config.exit_behavior == "block":
            raise TypeError(
                'exit_behavior="block" needs RepeatToolReminderMiddleware: only middleware sees '
                "a call before it runs"
            )
        self._lock = threading.Lock()
        self._runs: dict[int, _Run] = {}  # by run id, as an integer
        self._agents: OrderedDict[AgentKey, Streaks] = OrderedDict()
        self._by_root: dict[Any, set[AgentKey]] = {}
        self._answering: dict[int, AgentKey] = {}  # model runs after a reminder, by run id
        self._warned_outside = False
        self._warned_undelivered = False
        self.stats = Stats()
        self.tool_policies = ToolPolicies()

    @property
    def agent_count(self) -> int:
        """How many agents' streaks are held now."""
        with self._lock:
            return len(self._agents)

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
        key = self._agent_key(*parent.child_lineage(), metadata)
        if key is None:
            return
        before = self._streaks(key)
        tally = tally_conversation(
            before, messages[0], self.config, self.tool_policies, seen_by_model=False
        )
        self._keep(key, before, tally.streaks)
        if tally.reminders or tally.escalation is not None:
            self._warn_undelivered()
        if tally.calls or tally.followups:
            report(tally, self.stats, self.config, None, "undelivered")
        if tally.streaks.reminded and continues(messages[0], tally.streaks.turn):
            if len(self._answering) >= self.max_runs:
                self._answering.clear()  # model runs whose end never came
            self._answering[run_id.int] = key

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """After a reminder the model saw: a model that answers without a call recovered."""
        key = self._answering.pop(run_id.int, None)
        if key is None:
            return
        generations = [g for batch in response.generations for g in batch]
        message = getattr(generations[0], "message", None) if generations else None
        if message is None or getattr(message, "tool_calls", None):
            return
        self.stats.add_followup(recovered=True)
        with self._lock:
            streaks = self._agents.get(key)
            if streaks is not None:
                self._agents[key] = streaks._replace(reminded=False)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a model run that failed."""
        self._answering.pop(run_id.int, None)

    # -- what the node asks ---------------------------------------------------------------

    def _node_count(
        self, messages: Sequence[BaseMessage], run_config: RunnableConfig
    ) -> tuple[AgentKey, Streaks, Tally] | None:
        """Count the node's agent's finished tool turn, without keeping the result yet.

        The node keeps it once it has acted on it. None when the node runs outside the
        handler's sight.
        """
        run_id = getattr(run_config.get("callbacks"), "parent_run_id", None)
        run = self._runs.get(run_id.int) if isinstance(run_id, UUID) else None
        if run is None:
            if not self._warned_outside:
                self._warned_outside = True
                logger.warning(
                    "RepeatToolReminderNode ran outside its handler's sight: pass the handler "
                    "in the run's callbacks, e.g. graph.invoke(inputs, "
                    "config={'callbacks': [handler]}). No reminders are added meanwhile."
                )
            return None
        key = self._agent_key(run.root, run.path, run_config.get("metadata"))
        if key is None:
            return None
        before = self._streaks(key)
        tally = tally_conversation(
            before,
            messages,
            self.config,
            self.tool_policies,
            seen_by_model=self.config.mode == "remind",
        )
        return key, before, tally

    def _node_keep(self, key: AgentKey, before: Streaks, streaks: Streaks) -> None:
        self._keep(key, before, streaks)

    # -- bookkeeping ----------------------------------------------------------------------

    def _warn_undelivered(self) -> None:
        if self._warned_undelivered or self.config.mode == "observe":
            return
        self._warned_undelivered = True
        logger.warning(
            "repeat tool reminders are due but reach no model: no RepeatToolReminderNode ran "
            "after the tools node for this agent. In a custom graph, add "
            "RepeatToolReminderNode(handler) between the tools node and the model node; with "
            "create_agent, use RepeatToolReminderMiddleware instead of the handler."
        )

    def _agent_key(
        self, root: int, path: tuple[str, ...], metadata: Mapping[str, Any] | None
    ) -> AgentKey | None:
        namespace = metadata.get("langgraph_checkpoint_ns") if metadata else None
        if not isinstance(namespace, str):
            return None  # not inside a graph, so not inside an agent
        thread = metadata.get("thread_id") if metadata else None
        scope: _Scope = ("run", root) if thread is None else ("thread", thread)
        return scope, namespace.rpartition("|")[0], path

    def _streaks(self, key: AgentKey) -> Streaks:
        with self._lock:
            streaks = self._agents.get(key)
            if streaks is None:
                return _NONE
            self._agents.move_to_end(key)  # used: the last to be forgotten
            return streaks

    def _keep(self, key: AgentKey, before: Streaks, streaks: Streaks) -> None:
        # One agent's steps run one after another, so nothing else wrote this agent's
        # streaks since `before` was read.
        if streaks == before:
            return
        with self._lock:
            known = key in self._agents
            self._agents[key] = streaks
            if known:
                self._agents.move_to_end(key)
                return
            scope = key[0]
            if scope[0] == "run":
                self._by_root.setdefault(scope[1], set()).add(key)
            while len(self._agents) > self.max_agents:
                old, _ = self._agents.popitem(last=False)
                if old[0][0] == "run":
                    self._by_root.get(old[0][1], set()).discard(old)

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
            with self._lock:
                for agent in self._by_root.pop(key, ()):
                    self._agents.pop(agent, None)
