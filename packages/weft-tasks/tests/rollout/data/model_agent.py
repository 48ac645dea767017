"""A minimal external harness with its own loop that calls a model: it lists the session's MCP
tools, sends them to the OpenAI-compatible endpoint in WEFT_MODEL_BASE_URL (the capture gateway),
runs the tool calls the model makes over MCP, and reports its transcript in the JSON-lines
protocol of `SubprocessHarness`."""

import asyncio
import json
import os
import sys

from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from openai import AsyncOpenAI


def emit(event):
    print(json.dumps(event), flush=True)


async def main():
    endpoints = json.loads(os.environ["WEFT_MCP_ENDPOINTS"])
    model = AsyncOpenAI(base_url=os.environ["WEFT_MODEL_BASE_URL"], api_key="sk-local")
    first = json.loads(sys.stdin.readline())
    clients = {
        m: Client(StreamableHttpTransport(e["url"], auth=e["token"])) for m, e in endpoints.items()
    }
    for c in clients.values():
        await c.__aenter__()
    tools, route = [], {}
    for mcp, c in clients.items():
        for t in await c.list_tools():
            name = f"{mcp}_{t.name}"
            route[name] = (mcp, t.name)
            tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": t.description or "",
                        "parameters": t.inputSchema,
                    },
                }
            )
    emit({"type": "tools", "tools": tools})
    messages = [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": first["content"]},
    ]
    for _ in range(10):
        reply = (
            (
                await model.chat.completions.create(
                    model="weft-scripted", messages=messages, tools=tools
                )
            )
            .choices[0]
            .message
        )
        message = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                }
                for tc in reply.tool_calls
            ]
        messages.append(message)
        emit({"type": "message", "message": message})
        if not reply.tool_calls:
            break
        for tc in reply.tool_calls:
            mcp, tool = route[tc.function.name]
            result = await clients[mcp].call_tool(
                tool, json.loads(tc.function.arguments), raise_on_error=False
            )
            text = "\n".join(getattr(b, "text", "") for b in result.content)
            out = {"role": "tool", "tool_call_id": tc.id, "content": text}
            messages.append(out)
            emit({"type": "message", "message": out})
    emit({"type": "turn_end"})
    for c in clients.values():
        await c.__aexit__(None, None, None)
    assert json.loads(sys.stdin.readline())["type"] == "stop"


asyncio.run(main())
