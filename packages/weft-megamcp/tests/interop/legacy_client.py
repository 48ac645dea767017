"""Runs inside the legacy venv (langchain-mcp-adapters 0.3 on mcp 1.x), never in the workspace.

usage: python legacy_client.py URL TOKEN CALLS_JSON
CALLS_JSON is a list of [tool, arguments]. Prints one JSON object on stdout:
{"mcp_version": ..., "tools": [...], "results": [{"tool", "ok", "text"}], "raw": {...}}
"""

import asyncio
import json
import sys
from importlib.metadata import version


async def main(url: str, token: str, calls: list) -> dict:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    headers = {"Authorization": f"Bearer {token}"}
    out: dict = {
        "mcp_version": version("mcp"),
        "adapters_version": version("langchain-mcp-adapters"),
    }

    # 1. the raw mcp 1.x client: initialize handshake and tools/list
    async with (
        streamablehttp_client(url, headers=headers) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        out["raw"] = {
            "protocol_version": init.protocolVersion,
            "server": init.serverInfo.name,
            "tools": sorted(t.name for t in (await session.list_tools()).tools),
        }

    # 2. langchain-mcp-adapters 0.3: LangChain tools, invoked like an agent would
    client = MultiServerMCPClient(
        {"srv": {"url": url, "transport": "streamable_http", "headers": headers}}
    )
    tools = {t.name: t for t in await client.get_tools()}
    out["tools"] = sorted(tools)
    results = []
    for name, args in calls:
        try:
            value = await tools[name].ainvoke(args)
            results.append({"tool": name, "ok": True, "text": str(value)})
        except Exception as exc:  # ToolException carries the server's isError text
            results.append({"tool": name, "ok": False, "text": f"{type(exc).__name__}: {exc}"})
    out["results"] = results
    return out


if __name__ == "__main__":
    result = asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
    print(json.dumps(result))
