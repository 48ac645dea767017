"""A programmatic chat model that plays the reference chain inside any tool-calling loop.

With no LLM configured, `ReActHarness(model=reference_policy)` still runs the real ReAct loop
(`create_agent` + `MCPAdapter` over MegaMCP): this model decides each step from the conversation
alone — which turn it is (one node per SimUser turn, every node in the agentic turn), which
reference calls of the turn are done, and the values earlier tool results bound — exactly as a
model would, so its traces exercise the same path as an LLM's.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from weft_core.models import TaskGraph, ViewMode
from weft_tasks.atomic.execution import MISSING, TemplateError, render
from weft_tasks.harness.mcp_tools import public_tool_name
from weft_tasks.harness.protocol import HarnessTask
from weft_tasks.harness.teacher import bind_value, node_scope
from weft_tasks.views import disclosure_order


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content or []
    )


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text


class ReferencePolicyModel(BaseChatModel):
    """Chat model whose every reply is the reference solution's next step."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    graph: TaskGraph
    mode: ViewMode = ViewMode.AGENTIC
    # It reads the task's reference calls: its traces are labelled `reference`, never a policy's.
    reads_answer_key: bool = True

    @property
    def _llm_type(self) -> str:
        return "weft-reference-policy"

    @property
    def model_name(self) -> str:
        return "reference-policy"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReferencePolicyModel:
        return self

    def _turn_nodes(self, turn: int) -> list[str]:
        order = disclosure_order(self.graph)
        if self.mode is ViewMode.AGENTIC:
            return order if turn == 1 else []
        return order[turn - 1 : turn] if 0 < turn <= len(order) else []

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
        outputs: dict[str, dict[str, Any]] = {}
        turn = 0
        idx = 0
        while idx < len(messages):
            if not isinstance(messages[idx], HumanMessage):
                idx += 1
                continue
            turn += 1
            # The calls made in this turn, in order, with their results.
            made: list[tuple[ToolCall, ToolMessage | None]] = []
            j = idx + 1
            while j < len(messages) and not isinstance(messages[j], HumanMessage):
                m = messages[j]
                if isinstance(m, AIMessage):
                    made += [(tc, results.get(tc.get("id") or "")) for tc in m.tool_calls]
                j += 1
            is_current = j >= len(messages)
            reply = self._play_turn(turn, made, outputs, is_current)
            if is_current:
                return reply
            idx = j
        return AIMessage("How can I help?")

    def _play_turn(
        self,
        turn: int,
        made: list[tuple[ToolCall, ToolMessage | None]],
        outputs: dict[str, dict[str, Any]],
        is_current: bool,
    ) -> AIMessage:
        k = 0
        notes: list[str] = []
        for node_id in self._turn_nodes(turn):
            node = self.graph.node(node_id)
            scope = node_scope(self.graph, node, outputs)
            produced = outputs.setdefault(node_id, {})
            for call in node.task.reference_calls:
                if k < len(made):
                    _, result = made[k]
                    k += 1
                    if result is None or result.status == "error":
                        return AIMessage(
                            f"I could not complete '{node.intent}': the tool reported an error."
                        )
                    value = _json(_content_text(result.content))
                    for name, path in call.bind.items():
                        got = bind_value(value, path)
                        if got is not MISSING:
                            produced[name] = got
                            scope[name] = got
                    continue
                if not is_current:
                    return AIMessage("")
                try:
                    args = render(call.arguments, scope)
                except TemplateError as exc:
                    return AIMessage(f"I could not complete '{node.intent}': I have no {exc.name}.")
                return AIMessage(
                    "",
                    tool_calls=[
                        {
                            "id": f"call_{turn}_{k}",
                            "name": public_tool_name(node.task.mcp, call.tool),
                            "args": args,
                        }
                    ],
                )
            shown = ", ".join(f"{n}={v}" for n, v in produced.items())
            notes.append(f"Done: {node.intent.rstrip('.')}." + (f" ({shown})" if shown else ""))
        return AIMessage(" ".join(notes) or "Nothing else to do.")


def reference_policy(task: HarnessTask) -> ReferencePolicyModel:
    """Model factory for `ReActHarness`: the reference policy of this task in this view."""
    return ReferencePolicyModel(graph=task.graph, mode=task.mode)
