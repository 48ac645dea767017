"""return_contains against results produced by a real FastMCP server (in-memory client)."""

from __future__ import annotations

from typing import Any

import pytest

from weft_core.checks import Evidence, evaluate
from weft_core.models import LedgerEntry

fastmcp = pytest.importorskip("fastmcp")


def make_server() -> Any:
    server = fastmcp.FastMCP("shop")

    @server.tool
    def get_order(order_id: int) -> dict[str, Any]:
        """Order details."""
        return {"id": order_id, "status": "shipped", "lines": [{"sku": "A-1", "qty": 2}]}

    @server.tool
    def count_orders() -> int:
        """How many orders there are."""
        return 42

    @server.tool
    def describe(order_id: int) -> str:
        """A sentence about the order."""
        return f"Order {order_id} is on its way"

    @server.tool
    def fail(order_id: int) -> str:
        """Always fails."""
        raise ValueError(f"order {order_id} not found")

    return server


def _full(result: Any) -> dict[str, Any]:
    """The MCP wire form of a result: content blocks plus structuredContent."""
    return {
        "content": [c.model_dump(mode="json") for c in result.content],
        "structuredContent": result.structured_content,
        "isError": result.is_error,
    }


def _payload(result: Any) -> Any:
    """The compact form MegaMCP's ledger keeps: structured content, else the joined text."""
    if result.structured_content is not None:
        return result.structured_content
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("form", [_full, _payload])
async def test_return_contains_on_real_mcp_results(form: Any) -> None:
    entries = []
    async with fastmcp.Client(make_server()) as client:
        calls = [
            ("get_order", {"order_id": 7}),
            ("count_orders", {}),
            ("describe", {"order_id": 7}),
            ("fail", {"order_id": 9}),
        ]
        for seq, (tool, args) in enumerate(calls):
            result = await client.call_tool(tool, args, raise_on_error=False)
            entries.append(
                LedgerEntry(
                    seq=seq,
                    session_id="s",
                    mcp="shop",
                    tool=tool,
                    arguments=args,
                    result=form(result),
                    is_error=result.is_error,
                )
            )
    ev = Evidence(mcp="shop", ledger=entries)
    checks = [
        {
            "id": "status",
            "kind": "return_contains",
            "tool": "get_order",
            "value": {"status": "shipped"},
        },
        {
            "id": "line",
            "kind": "return_contains",
            "tool": "get_order",
            "value": {"lines": [{"sku": "A-1"}]},
        },
        {"id": "text", "kind": "return_contains", "tool": "get_order", "value": "shipped"},
        {"id": "count", "kind": "return_contains", "tool": "count_orders", "value": 42},
        {"id": "sentence", "kind": "return_contains", "tool": "describe", "value": "on its way"},
        {"id": "failed-call", "kind": "call_made", "tool": "fail", "ok": False},
        # Wrong expectations the evaluator must catch.
        {
            "id": "wrong-status",
            "kind": "return_contains",
            "tool": "get_order",
            "value": {"status": "pending"},
        },
        {"id": "wrong-count", "kind": "return_contains", "tool": "count_orders", "value": 41},
        {"id": "error-text", "kind": "return_contains", "tool": "fail", "value": "not found"},
    ]
    result = evaluate(checks, ev)
    verdict = {o.check_id: o.passed for o in result.outcomes}
    assert verdict == {
        "status": True,
        "line": True,
        "text": True,
        "count": True,
        "sentence": True,
        "failed-call": True,
        "wrong-status": False,
        "wrong-count": False,
        "error-text": False,
    }, result.outcomes
