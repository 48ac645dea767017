"""A `ScriptedOpenAIServer` policy that plays a task's reference solution through any harness:
it reads the conversation the harness sends (its own tool names, result wrapping and injected
messages) and answers the reference chain's next tool call, then a closing summary.

Harness quirks it absorbs (see notes/harnesses.md): OpenClaw appends a user-role context message
after every tool result, so in agentic mode only the first user message starts a turn; Hermes
wraps tool results in `<untrusted_tool_result …>…</untrusted_tool_result>`; tool names are
`mcp__<mcp>__<tool>` (Hermes) or `<mcp>__<tool>` (OpenClaw). Labelled `reference`: it reads the
answer key, so its pass rates measure the plumbing, never a policy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)

from weft_core.models import TaskGraph, ViewMode
from weft_tasks.harness.mcp_tools import split_tool_name
from weft_tasks.harness.reference_policy import ReferencePolicyModel
from weft_tasks.testing.openai_server import Policy

_ERROR_CODE = re.compile(r"^\s*(?:Error:\s*)?[a-z]+(?:_[a-z]+)*:\s")
_WRAPPED = re.compile(r"<untrusted_tool_result[^>]*>\s*(.*?)\s*</untrusted_tool_result>", re.S)


def _observation(content: Any) -> Any:
    """The tool's value as the reference policy reads it: Hermes's wrapper and preamble removed,
    OpenClaw's rendering reduced to its JSON line, and an MCP result envelope (`{"result": ..., "structuredContent": ...}`) opened."""
    if not isinstance(content, str):
        return content
    match = _WRAPPED.search(content)
    text = match.group(1) if match else content
    start = text.find("{")
    if match and start > 0:
        text = text[start:]  # Hermes puts a data-not-instructions preamble before the value
    value = _json_in(text)
    if value is None:
        return text
    if isinstance(value, dict) and "structuredContent" in value:
        return json.dumps(value["structuredContent"])
    if isinstance(value, dict) and set(value) == {"result"} and isinstance(value["result"], str):
        return value["result"]
    return json.dumps(value)


def _json_in(text: str) -> Any:
    """The text as JSON, else its last line that is JSON (OpenClaw shows a pretty
    `structuredContent:` block, then the raw text)."""
    for candidate in (text, *reversed(text.splitlines())):
        candidate = candidate.strip()
        if candidate[:1] in ("{", "["):
            try:
                return json.loads(candidate)
            except ValueError:
                continue
    return None


def _conversation(messages: list[dict[str, Any]], mode: ViewMode) -> list[BaseMessage]:
    kept: list[dict[str, Any]] = []
    seen_user = False
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        if role == "user":
            if seen_user and mode is ViewMode.AGENTIC:
                continue  # a harness's own context message, not a new request
            seen_user = True
        m = dict(m)
        if role == "tool":
            m["content"] = _observation(m.get("content"))
        if m.get("content") is None:
            m["content"] = ""
        kept.append(m)
    return list(convert_to_messages(kept))


def reference_replies_by_brief(
    load_graphs: Callable[[], Iterable[TaskGraph]],
    mode: ViewMode = ViewMode.AGENTIC,
    make_model: Callable[[TaskGraph], BaseChatModel] | None = None,
) -> Policy:
    """A policy for a server that serves many tasks (e.g. a whole `weft run`): each request is
    answered by the reference policy of the task whose node intents its first user message names
    (`load_graphs` is called until one matches, so tasks written after the server started are
    found). A request that names no task (a health probe) gets "OK"."""
    policies: dict[str, Policy] = {}

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        first = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
        graph = next(
            (g for g in load_graphs() if g.nodes and all(n.intent in first for n in g.nodes)),
            None,
        )
        if graph is None:
            return {"content": "OK"}
        if graph.id not in policies:
            model = make_model(graph) if make_model is not None else None
            policies[graph.id] = reference_replies(graph, mode, model)
        return policies[graph.id](messages, tools)

    return policy


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else ""


def reference_replies(
    graph: TaskGraph, mode: ViewMode = ViewMode.AGENTIC, model: BaseChatModel | None = None
) -> Policy:
    """The reference policy of `graph`, speaking whatever tool names the harness offers.

    `model` replaces it with another chat model over the same conversation (e.g. a noisy
    reference policy that makes mistakes); it is bound to the offered tools. Tool results that
    open with an error code (`not_found: ...`) reach it as error observations, and a call id's
    suffix after the last `_` survives the renumbering, so it can recognise its own calls."""
    reference = ReferencePolicyModel(graph=graph, mode=mode)

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        history = _conversation(messages, mode)
        if not any(isinstance(m, HumanMessage) for m in history):
            return {"content": "How can I help?"}
        offered = [str((t.get("function") or {}).get("name")) for t in tools]
        if model is None:
            reply: AIMessage = reference._next(history)
        else:
            bound = model.bind_tools(tools) if tools else model
            reply = bound.invoke(_errors_marked(history))
        if not reply.tool_calls:
            return {"content": str(reply.content) or "Done."}
        calls = []
        for call in reply.tool_calls:
            where = split_tool_name(call["name"], graph.mcps)
            name = next(
                (o for o in offered if where and split_tool_name(o, graph.mcps) == where),
                call["name"],  # not offered: the harness will report an unknown tool
            )
            calls.append(
                {
                    "id": _renumbered(str(call["id"]), len(messages)),
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(call["args"], separators=(",", ":")),
                    },
                }
            )
        return {"content": None, "tool_calls": calls}

    return policy


def _renumbered(call_id: str, position: int) -> str:
    """A unique id per request; a trailing `_<tag>` of the model's id (e.g. a noisy policy's
    mistake mark) stays last."""
    head, sep, tag = call_id.rpartition("_")
    if sep and tag.isalpha():
        return f"{head}_{position}_{tag}"
    return f"{call_id}_{position}"


def _errors_marked(history: list[BaseMessage]) -> list[BaseMessage]:
    """OpenAI tool messages carry no error flag; a result that opens with an error code is one."""
    out: list[BaseMessage] = []
    for m in history:
        if isinstance(m, ToolMessage) and _ERROR_CODE.match(str(m.content)):
            m = m.model_copy(update={"status": "error"})
        out.append(m)
    return out
