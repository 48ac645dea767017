"""One client per session-group endpoint, the group's public tool names, and OpenAI tool defs.

Tools of a group are named `<mcp>_<tool>` (fastmcp `ClientGroup` naming) for every harness, so a
teacher trace and a policy trace of the same task offer the same tool names.
"""

from __future__ import annotations

import json
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


def split_tool_name(name: str, mcps: list[str]) -> tuple[str, str] | None:
    """(mcp, tool) for a public name; the longest matching MCP id wins."""
    for mcp in sorted(mcps, key=len, reverse=True):
        if name.startswith(mcp + "_"):
            return mcp, name[len(mcp) + 1 :]
    return None


def openai_tool(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
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
