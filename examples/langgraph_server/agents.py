"""Three agents guarded by repeat-reminder-langchain, served by a LangGraph API server.

* `middleware_agent`: `create_agent` with `RepeatToolReminderMiddleware`.
* `state_node_agent`: a custom graph with `RepeatToolReminderNode()` after its tools node; the
  count is kept in the graph state.
* `handler_node_agent`: a custom graph with `RepeatToolReminderNode(handler)`; the count is kept
  in the handler, bound to the graph with `with_config`.

The model is scripted so the server runs offline: it calls `check_job` with the same job id as
many times in a row as the latest user message asks ("loop 9"), then answers.
"""

import re
import uuid
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from repeat_reminder_langchain import (
    RepeatToolReminderCallbackHandler,
    RepeatToolReminderMiddleware,
    RepeatToolReminderNode,
    RepeatToolReminderState,
    from_guard,
    prepare_messages,
)

_LOOP = re.compile(r"\bloop\s+(\d+)\b")


class LoopingJobModel(BaseChatModel):
    """Calls `check_job` N times in a row after each user message saying "loop N", then answers.

    It decides from the conversation alone, so one instance serves every thread and run of the
    server at once. Only `_generate` is defined: streamed runs then get the whole message in one
    piece, tool calls included.
    """

    job_id: str = "job-42"

    @property
    def _llm_type(self) -> str:
        return "looping-job-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "LoopingJobModel":  # type: ignore[override]
        """The model itself: it knows its one tool already."""
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        made, wanted = 0, 0
        for message in reversed(messages):
            # Reminders reach the model as tagged user turns; they are not the user speaking.
            if isinstance(message, HumanMessage) and not from_guard(message):
                found = _LOOP.search(message.text)
                wanted = int(found.group(1)) if found else 0
                break
            made += isinstance(message, AIMessage) and bool(message.tool_calls)
        if made >= wanted:
            reply = AIMessage(f"Job {self.job_id} checked {made} times.")
        else:
            reply = AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "check_job",
                        "args": {"job_id": self.job_id},
                        "id": f"call_{uuid.uuid4().hex[:16]}",
                        "type": "tool_call",
                    }
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def check_job(job_id: str) -> str:
    """Report the status of a background job."""
    return f"Job {job_id} is still running."


TOOLS = [check_job]

# A real model instead: `model = init_chat_model("openai:gpt-4.1")` (from langchain.chat_models).
model = LoopingJobModel()


# (a) The middleware keeps its count in a private field of the agent's checkpointed state.
middleware_agent = create_agent(model, tools=TOOLS, middleware=[RepeatToolReminderMiddleware()])


async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """The model node of the custom graphs."""
    # Stored system reminders are turned into a form every provider accepts mid-conversation.
    messages = prepare_messages(state["messages"], model)
    return {"messages": [await model.ainvoke(messages)]}


def _custom_agent(state_schema: Any, reminder_node: RepeatToolReminderNode, **schemas: Any) -> Any:
    builder = StateGraph(state_schema, **schemas)
    builder.add_node("agent", call_model)
    builder.add_node("tools", ToolNode(TOOLS))
    # After the tools node, so the reminders follow the whole block of tool results.
    builder.add_node("repeat_reminder", reminder_node)
    builder.add_edge(START, "agent")
    # The model's answer passes through it too: an answer after a reminder is a recovery,
    # counted in the run it ends.
    builder.add_conditional_edges(
        "agent", tools_condition, {"tools": "tools", END: "repeat_reminder"}
    )
    builder.add_edge("tools", "repeat_reminder")
    builder.add_conditional_edges(
        "repeat_reminder", reminder_node.route, {"continue": "agent", "end": END}
    )
    return builder.compile()


# (b) The count lives in the state field `repeat_tool_reminder`, checkpointed with the thread.
# Input and output schemas without that field keep it out of the API's schemas and outputs.
state_node_agent = _custom_agent(
    RepeatToolReminderState,
    RepeatToolReminderNode(),
    input_schema=MessagesState,
    output_schema=MessagesState,
)

# (c) The count lives in the handler, in this process's memory. Run config sent over the API is
# JSON and cannot carry a callback handler, so the handler is bound to the graph itself.
handler = RepeatToolReminderCallbackHandler()
handler_node_agent = _custom_agent(MessagesState, RepeatToolReminderNode(handler)).with_config(
    callbacks=[handler]
)
