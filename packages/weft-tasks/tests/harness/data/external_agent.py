"""A stand-in external harness (its own loop and tool-call protocol) for the subprocess adapter:
it reads WEFT_MCP_ENDPOINTS, talks MCP over HTTP itself, and solves the sample task in one turn.
With EXTERNAL_AGENT_CRASH=1 it dies mid-turn."""

import asyncio
import json
import os
import sys


def emit(event):
    print(json.dumps(event), flush=True)


async def main():
    endpoints = json.loads(os.environ["WEFT_MCP_ENDPOINTS"])
    first = json.loads(sys.stdin.readline())
    assert first["type"] == "user"
    print("external agent starting (a log line, not JSON)", flush=True)
    emit({"type": "model", "name": "external-stand-in"})
    if os.environ.get("EXTERNAL_AGENT_CRASH"):
        sys.exit(3)
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    clients = {
        m: Client(StreamableHttpTransport(e["url"], auth=e["token"])) for m, e in endpoints.items()
    }
    plan = [
        ("crm", "get_customer_by_email", {"email": "ada@example.com"}),
        ("crm", "update_customer_tier", {"customer_id": 1, "tier": "gold"}),
        (
            "helpdesk",
            "create_ticket",
            {
                "customer_email": "ada@example.com",
                "subject": "Gold tier upgrade",
                "priority": "high",
            },
        ),
    ]
    for i, (mcp, tool, args) in enumerate(plan):
        name = f"{mcp}_{tool}"
        emit(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"x{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ],
                },
            }
        )
        async with clients[mcp] as c:
            res = await c.call_tool(tool, args, raise_on_error=False)
        text = "\n".join(getattr(b, "text", "") for b in res.content)
        emit(
            {
                "type": "message",
                "message": {"role": "tool", "tool_call_id": f"x{i}", "name": name, "content": text},
            }
        )
    emit({"type": "message", "message": {"role": "assistant", "content": "All done."}})
    emit({"type": "turn_end"})
    nxt = json.loads(sys.stdin.readline() or '{"type": "stop"}')
    assert nxt["type"] == "stop", nxt


asyncio.run(main())
