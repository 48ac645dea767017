"""A small helpdesk MCP server that reads its DB from the session binding on every call."""

import sqlite3

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from weft_core.binding import current_binding

from .models import DDL  # noqa: F401


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(current_binding().db_path)
    conn.row_factory = sqlite3.Row
    return conn


def create_server() -> FastMCP:
    mcp = FastMCP("helpdesk")

    @mcp.tool
    def create_ticket(customer_email: str, subject: str, priority: str = "normal") -> dict:
        """Open a support ticket for a customer; returns the new ticket."""
        if priority not in ("low", "normal", "high"):
            raise ToolError(f"unknown priority {priority!r}")
        with _db() as conn:
            cur = conn.execute(
                "INSERT INTO ticket (customer_email, subject, priority, status) VALUES (?, ?, ?, 'open')",
                (customer_email, subject, priority),
            )
            row = conn.execute("SELECT * FROM ticket WHERE id = ?", (cur.lastrowid,)).fetchone()
        return dict(row)

    @mcp.tool
    def list_tickets(customer_email: str) -> list[dict]:
        """List a customer's tickets."""
        with _db() as conn:
            rows = conn.execute(
                "SELECT * FROM ticket WHERE customer_email = ?", (customer_email,)
            ).fetchall()
        return [dict(r) for r in rows]

    return mcp
