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
import re
from typing import Any

from weft_core.models import (
    ChatMessage,
    ReferenceCall,
    TaskGraph,
    TaskNode,
    ToolCall,
    ToolCallFunction,
    ViewMode,
)
from weft_tasks.harness.mcp_tools import (
    group_client,
    openai_tool,
    public_tool_name,
    result_text,
    result_value,
)
from weft_tasks.harness.protocol import HarnessRun, HarnessTask, MCPEndpoint, TurnCallback
from weft_tasks.views import disclosure_order

_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")
_MISSING = object()


class TemplateError(KeyError):
    """A reference call names a value that no input, upstream output or binding provides."""


def dotted_get(value: Any, path: str) -> Any:
    """`dotted_get({"a": [{"b": 1}]}, "a.0.b") == 1`; `_MISSING` when absent."""
    cur = value
    for part in path.split(".") if path else []:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif (
            isinstance(cur, list)
            and part.lstrip("-").isdigit()
            and -len(cur) <= int(part) < len(cur)
        ):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def bind_value(result: Any, path: str) -> Any:
    """A bound output from a tool result, found the way atomic-task validation finds it (exact
    dotted path, else the last segment breadth-first), so replay and validation agree."""
    from weft_tasks.atomic.execution import extract

    try:
        return extract(result, path)
    except KeyError:
        return _MISSING


def render_arguments(arguments: Any, scope: dict[str, Any]) -> Any:
    """Fill `{{name}}` templates from `scope` (recursively through dicts and lists)."""
    if isinstance(arguments, dict):
        return {k: render_arguments(v, scope) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [render_arguments(v, scope) for v in arguments]
    if not isinstance(arguments, str):
        return arguments
    whole = _TEMPLATE.fullmatch(arguments.strip())
    if whole:
        return _lookup(scope, whole.group(1))

    def sub(m: re.Match[str]) -> str:
        v = _lookup(scope, m.group(1))
        return v if isinstance(v, str) else json.dumps(v)

    return _TEMPLATE.sub(sub, arguments)


def _lookup(scope: dict[str, Any], name: str) -> Any:
    if name in scope:
        return scope[name]
    head, _, rest = name.partition(".")
    if head in scope:
        found = dotted_get(scope[head], rest)
        if found is not _MISSING:
            return found
    raise TemplateError(name)


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
        group: Any,
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
                args = render_arguments(call.arguments, scope)
            except TemplateError as exc:
                return (
                    produced,
                    f"Could not do '{node.intent}': no value for {exc.args[0]}.",
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
                if got is not _MISSING:
                    produced[out_name] = got
                    scope[out_name] = got
        shown = ", ".join(f"{k}={v}" for k, v in produced.items())
        return (
            produced,
            f"Done: {node.intent.rstrip('.')}." + (f" ({shown})" if shown else ""),
            counter,
        )
