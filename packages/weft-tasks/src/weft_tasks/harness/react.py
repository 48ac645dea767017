"""ReAct harness: `langchain.agents.create_agent` over the session group's MegaMCP endpoints,
with tools adapted by `langchain.mcp.MCPAdapter`. Supports both views: agentic (one brief, one
turn) and SimUser (a turn per request; a reply without tool calls ends the turn)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from weft_core.llm import model_display_name
from weft_core.models import ViewMode
from weft_tasks.harness.mcp_tools import group_client, openai_tool
from weft_tasks.harness.messages import model_calls, to_chat_messages
from weft_tasks.harness.protocol import HarnessRun, HarnessTask, MCPEndpoint, TurnCallback

SYSTEM_PROMPT = (
    "You are a capable assistant operating business systems through tools. Use the tools to do "
    "exactly what the user asks, look up anything you are not told, and never invent "
    "identifiers. When the request is complete, reply with a short summary and no tool call."
)


class ReActHarness:
    """A ReAct agent on any LangChain chat model with tool calling."""

    name = "react"
    modes = frozenset({ViewMode.AGENTIC, ViewMode.SIMUSER})

    def __init__(
        self,
        model: BaseChatModel | Callable[[HarnessTask], BaseChatModel],
        *,
        system_prompt: str = SYSTEM_PROMPT,
        max_steps_per_turn: int = 40,
        call_timeout_s: float = 120.0,
    ) -> None:
        # A factory builds one model per rollout (e.g. the reference policy, which reads the task).
        self.model = model
        self.system_prompt = system_prompt
        self.max_steps_per_turn = max_steps_per_turn
        self.call_timeout_s = call_timeout_s

    @property
    def model_name(self) -> str:
        return _name_of(self.model)

    async def run(
        self, task: HarnessTask, endpoints: dict[str, MCPEndpoint], on_turn: TurnCallback
    ) -> HarnessRun:
        from langchain.agents import create_agent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # langchain.mcp warns it is beta on import
            from langchain.mcp import MCPAdapter

        adapter = MCPAdapter(group_client(endpoints, timeout=self.call_timeout_s))
        async with adapter:
            tools = await adapter.list_tools()
            model = self.model if isinstance(self.model, BaseChatModel) else self.model(task)
            agent: Any = create_agent(model, tools, system_prompt=self.system_prompt)
            history: list[BaseMessage] = []
            request: str | None = task.first_request
            turns = 0
            while request is not None:
                history.append(HumanMessage(request))
                history = await self._turn(agent, history)
                turns += 1
                request = await on_turn(to_chat_messages(self._with_system(history)))
        full = self._with_system(history)
        return HarnessRun(
            messages=to_chat_messages(full),
            tools=[openai_tool(t.name, t.description, _schema(t)) for t in tools],
            model=_name_of(model),
            reference=bool(getattr(model, "reads_answer_key", False)),
            model_calls=model_calls(full),
            turns=turns,
        )

    async def _turn(self, agent: Any, history: list[BaseMessage]) -> list[BaseMessage]:
        """One atomic-task turn; a step-limit overrun ends the turn as the policy's failure."""
        from langgraph.errors import GraphRecursionError

        latest = history
        try:
            async for state in agent.astream(
                {"messages": history},
                config={"recursion_limit": 2 * self.max_steps_per_turn + 1},
                stream_mode="values",
            ):
                latest = list(state["messages"])
        except GraphRecursionError:
            latest = [*latest, AIMessage(f"[turn stopped after {self.max_steps_per_turn} steps]")]
        return latest

    def _with_system(self, history: list[BaseMessage]) -> list[BaseMessage]:
        from langchain_core.messages import SystemMessage

        return [SystemMessage(self.system_prompt), *history]


def _name_of(model: BaseChatModel | Callable[..., Any]) -> str:
    if isinstance(model, BaseChatModel):
        return model_display_name(model)
    # a factory may name the model it builds (GatewayChatModels: the served model)
    named = getattr(model, "model_name", None)
    if isinstance(named, str) and named:
        return named
    return getattr(model, "__name__", "model-factory").replace("_", "-")


def _schema(tool: Any) -> dict[str, Any]:
    schema = tool.args_schema
    if isinstance(schema, dict):
        return schema
    return schema.model_json_schema() if schema is not None else {"type": "object"}
