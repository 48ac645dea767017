"""A small CRM MCP server that reads its DB from the session binding on every call."""

import asyncio
import sqlite3

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from weft_core.binding import current_binding

from .models import DDL  # noqa: F401  (relative sibling import, as the module contract requires)


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(current_binding().db_path)
    conn.row_factory = sqlite3.Row
    return conn


def create_server() -> FastMCP:
    mcp = FastMCP("crm")

    @mcp.tool
    async def get_customer_by_email(email: str) -> dict:
        """Find a customer by email address; returns id, name, email and tier."""
        if email == "slow@example.com":  # lets tests provoke a host-side timeout
            # Awaiting, so MegaMCP cancels it at the deadline and ledgers the timeout then (a
            # sync tool's thread cannot be stopped: it is ledgered only when it returns).
            await asyncio.sleep(3)
        with _db() as conn:
            row = conn.execute("SELECT * FROM customer WHERE email = ?", (email,)).fetchone()
        if row is None:
            raise ToolError(f"no customer with email {email!r}")
        return dict(row)

    @mcp.tool
    def update_customer_tier(customer_id: int, tier: str) -> dict:
        """Set a customer's tier (bronze, silver, gold)."""
        if tier not in ("bronze", "silver", "gold"):
            raise ToolError(f"unknown tier {tier!r}")
        with _db() as conn:
            cur = conn.execute("UPDATE customer SET tier = ? WHERE id = ?", (tier, customer_id))
            if cur.rowcount == 0:
                raise ToolError(f"no customer with id {customer_id}")
            row = conn.execute("SELECT * FROM customer WHERE id = ?", (customer_id,)).fetchone()
        return dict(row)

    return mcp
