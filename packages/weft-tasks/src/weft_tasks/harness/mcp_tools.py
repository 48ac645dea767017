"""One client per session-group endpoint, the group's public tool names, and OpenAI tool defs.

Tools of a group are named `<mcp>_<tool>` (fastmcp `ClientGroup` naming) for Weft's own
harnesses, so a teacher trace and a policy trace of the same task offer the same tool names.
External harnesses keep their own naming in their traces — Hermes `mcp__<server>__<tool>`,
OpenClaw `<server>__<tool>` — and `split_tool_name` reads all three.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastmcp import Client
from fastmcp.client.group import ClientGroup
from fastmcp.client.transports import StreamableHttpTransport

from weft_tasks.harness.protocol import MCPEndpoint


def endpoint_client(endpoint: MCPEndpoint, *, timeout: float = 120.0) -> Client[Any]:
    transport = StreamableHttpTransport(endpoint.url, auth=endpoint.token)
    return Client(transport, timeout=timeout)


def group_client(endpoints: dict[str, MCPEndpoint], *, timeout: float = 120.0) -> ClientGroup:
    """A fastmcp ClientGroup over the session group's endpoints (keys are MCP ids)."""
    return ClientGroup({mcp: endpoint_client(ep, timeout=timeout) for mcp, ep in endpoints.items()})


def public_tool_name(mcp: str, tool: str) -> str:
    return f"{mcp}_{tool}"


def server_alias(mcp: str) -> str:
    """The MCP's server name in an external harness's config: provider-safe characters only."""
    return re.sub(r"[^A-Za-z0-9_]", "_", mcp)


def split_tool_name(name: str, mcps: list[str]) -> tuple[str, str] | None:
    """(mcp, tool) for a tool name as any harness spells it: `<mcp>_<tool>` (Weft),
    `mcp__<mcp>__<tool>` (Hermes) or `<mcp>__<tool>` (OpenClaw), the MCP id possibly made
    provider-safe (`server_alias`). The longest matching MCP id wins."""
    for mcp in sorted(mcps, key=len, reverse=True):
        for server in dict.fromkeys((mcp, server_alias(mcp))):
            for prefix in (f"mcp__{server}__", f"{server}__", f"{server}_"):
                if name.startswith(prefix) and len(name) > len(prefix):
                    return mcp, name[len(prefix) :]
    return None


def openai_tool(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An MCP tool as an OpenAI function. The schema's `type` comes first whatever runtime served
    it (an in-process server and a registry record order it differently), so the tool block a
    policy sees, and the trace, are the same bytes wherever the session was placed."""
    parameters = {"type": schema.get("type", "object")}
    parameters.update((k, v) for k, v in schema.items() if k != "type")
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def result_text(content: list[Any]) -> str:
    """The text the agent sees from an MCP result's content blocks."""
    parts: list[str] = []
    for block in content:
        text = getattr(block, "text", None)
        if text is None and isinstance(block, dict):
            text = block.get("text")
        parts.append(text if isinstance(text, str) else f"[{type(block).__name__}]")
    return "\n".join(parts)


def result_value(result: Any) -> Any:
    """The structured value of a fastmcp CallToolResult: `.data`, else structured content, else
    the text parsed as JSON, else the text."""
    data = getattr(result, "data", None)
    if data is not None:
        return _plain(data)
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        if isinstance(structured, dict) and set(structured) == {"result"}:
            return structured["result"]
        return structured
    text = result_text(getattr(result, "content", []) or [])
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text


def _plain(value: Any) -> Any:
    """fastmcp may return dataclass-like objects for typed outputs; make them JSON-able."""
    if isinstance(value, dict | list | str | int | float | bool) or value is None:
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)
