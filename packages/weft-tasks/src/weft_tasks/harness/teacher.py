"""Reference-chain teacher: executes each atomic task's reference calls over MegaMCP (paper
§3.1.3). Used for replay, for certification, and as the policy when no model is configured.

It behaves like a harness in both views: in SimUser mode it solves the node of each turn (in the
same stable topological order the simulator discloses), in agentic mode every node in one turn.
Argument templates `{{name}}` resolve against the node's given/retrieved input values, upstream
outputs bound by earlier calls (`ReferenceCall.bind`), and entity-binding values
(`{{customer.email}}`); a whole-string template keeps the value's type.
"""

from __future__ import annotations

import json
from typing import Any

from fastmcp.client.group import ClientGroup

from weft_core.models import (
    ChatMessage,
    ReferenceCall,
    TaskGraph,
    TaskNode,
    ToolCall,
    ToolCallFunction,
    ViewMode,
)
from weft_tasks.atomic.execution import MISSING, TemplateError, extract, render
from weft_tasks.harness.mcp_tools import (
    group_client,
    openai_tool,
    public_tool_name,
    result_text,
    result_value,
)
from weft_tasks.harness.protocol import HarnessRun, HarnessTask, MCPEndpoint, TurnCallback
from weft_tasks.views import disclosure_order


def bind_value(result: Any, path: str) -> Any:
    """A bound output from a tool result, found the way atomic-task validation finds it (exact
    dotted path, else the last segment breadth-first), so replay and validation agree."""
    try:
        return extract(result, path)
    except KeyError:
        return MISSING


def node_scope(
    graph: TaskGraph, node: TaskNode, outputs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Values a node's reference calls may use."""
    scope: dict[str, Any] = {}
    for b in graph.bindings:
        scope[b.name] = dict(b.value)
    for inp in node.task.inputs:
        if inp.value is not None:
            scope[inp.name] = inp.value
    for inp in node.inputs:
        if inp.source == "upstream" and inp.from_node:
            produced = outputs.get(inp.from_node, {})
            key = inp.from_output or inp.name
            if key in produced:
                scope[inp.name] = produced[key]
        elif inp.value is not None:
            scope[inp.name] = inp.value
    return scope


class ReferenceChainTeacher:
    """Replays reference calls; a failing call ends its node (later calls depend on it)."""

    name = "teacher"
    modes = frozenset({ViewMode.AGENTIC, ViewMode.SIMUSER})

    def __init__(self, *, call_timeout_s: float = 120.0) -> None:
        self.call_timeout_s = call_timeout_s

    @property
    def model_name(self) -> str:
        return "reference-chain"

    async def run(
        self, task: HarnessTask, endpoints: dict[str, MCPEndpoint], on_turn: TurnCallback
    ) -> HarnessRun:
        graph = task.graph
        order = disclosure_order(graph)
        group = group_client(endpoints, timeout=self.call_timeout_s)
        messages: list[ChatMessage] = [ChatMessage(role="user", content=task.first_request)]
        outputs: dict[str, dict[str, Any]] = {}
        counter = 0
        turns = 0
        async with group:
            mcp_tools = await group.list_tools()
            tools = [openai_tool(t.name, t.description or "", t.input_schema) for t in mcp_tools]
            per_turn = [order] if task.mode is ViewMode.AGENTIC else [[n] for n in order]
            for i, node_ids in enumerate(per_turn):
                summary: list[str] = []
                for node_id in node_ids:
                    node = graph.node(node_id)
                    produced, note, counter = await self._solve(
                        group, graph, node, outputs, messages, counter
                    )
                    outputs[node_id] = produced
                    summary.append(note)
                messages.append(ChatMessage(role="assistant", content=" ".join(summary)))
                turns += 1
                nxt = await on_turn(list(messages))
                if nxt is None:
                    break
                if i + 1 < len(per_turn):
                    messages.append(ChatMessage(role="user", content=nxt))
        return HarnessRun(
            messages=messages, tools=tools, model=self.model_name, reference=True, turns=turns
        )

    async def _solve(
        self,
        group: ClientGroup,
        graph: TaskGraph,
        node: TaskNode,
        outputs: dict[str, dict[str, Any]],
        messages: list[ChatMessage],
        counter: int,
    ) -> tuple[dict[str, Any], str, int]:
        scope = node_scope(graph, node, outputs)
        produced: dict[str, Any] = {}
        calls: list[ReferenceCall] = node.task.reference_calls
        for call in calls:
            try:
                args = render(call.arguments, scope)
            except TemplateError as exc:
                return (
                    produced,
                    f"Could not do '{node.intent}': no value for {exc.name}.",
                    counter,
                )
            call_id = f"call_{counter}"
            counter += 1
            name = public_tool_name(node.task.mcp, call.tool)
            messages.append(
                ChatMessage(
                    role="assistant",
                    content=None,
                    tool_calls=[
                        ToolCall(
                            id=call_id,
                            function=ToolCallFunction(
                                name=name, arguments=json.dumps(args, sort_keys=True)
                            ),
                        )
                    ],
                )
            )
            result = await group.call_tool(name, args, raise_on_error=False)
            messages.append(
                ChatMessage(
                    role="tool",
                    tool_call_id=call_id,
                    name=name,
                    content=result_text(result.content),
                )
            )
            if result.is_error:
                return (
                    produced,
                    f"'{node.intent}' failed: {result_text(result.content)[:200]}",
                    counter,
                )
            value = result_value(result)
            for out_name, path in call.bind.items():
                got = bind_value(value, path)
                if got is not MISSING:
                    produced[out_name] = got
                    scope[out_name] = got
        shown = ", ".join(f"{k}={v}" for k, v in produced.items())
        return (
            produced,
            f"Done: {node.intent.rstrip('.')}." + (f" ({shown})" if shown else ""),
            counter,
        )
