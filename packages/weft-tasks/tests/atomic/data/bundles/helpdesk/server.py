"""A helpdesk MCP server: requesters and tickets, state from the session binding."""

import sqlite3

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from weft_core.binding import current_binding

from .models import DDL  # noqa: F401

PRIORITIES = ("low", "normal", "high")


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(current_binding().db_path)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def create_server() -> FastMCP:
    mcp = FastMCP("helpdesk")

    @mcp.tool
    def find_requester(email: str) -> dict:
        """Find a helpdesk requester by email."""
        with _db() as c:
            row = c.execute("SELECT * FROM requester WHERE email = ?", (email,)).fetchone()
        if row is None:
            raise ToolError(f"no requester with email {email!r}")
        return dict(row)

    @mcp.tool
    def create_ticket(requester_id: int, subject: str, priority: str = "normal") -> dict:
        """Open a ticket for a requester."""
        if priority not in PRIORITIES:
            raise ToolError(f"unknown priority {priority!r}")
        with _db() as c:
            if (
                c.execute("SELECT 1 FROM requester WHERE id = ?", (requester_id,)).fetchone()
                is None
            ):
                raise ToolError(f"no requester {requester_id}")
            cur = c.execute(
                "INSERT INTO ticket (requester_id, subject, priority) VALUES (?, ?, ?)",
                (requester_id, subject, priority),
            )
            return dict(c.execute("SELECT * FROM ticket WHERE id = ?", (cur.lastrowid,)).fetchone())

    @mcp.tool
    def get_ticket(ticket_id: int) -> dict:
        """Get a ticket by id."""
        with _db() as c:
            row = c.execute("SELECT * FROM ticket WHERE id = ?", (ticket_id,)).fetchone()
        if row is None:
            raise ToolError(f"no ticket {ticket_id}")
        return dict(row)

    @mcp.tool
    def close_ticket(ticket_id: int) -> dict:
        """Close an open ticket."""
        with _db() as c:
            row = c.execute("SELECT status FROM ticket WHERE id = ?", (ticket_id,)).fetchone()
            if row is None:
                raise ToolError(f"no ticket {ticket_id}")
            if row["status"] != "open":
                raise ToolError(f"ticket {ticket_id} is not open")
            c.execute("UPDATE ticket SET status = 'closed' WHERE id = ?", (ticket_id,))
            return dict(c.execute("SELECT * FROM ticket WHERE id = ?", (ticket_id,)).fetchone())

    @mcp.tool
    def list_tickets(status: str) -> list[dict]:
        """List tickets with a status (open or closed)."""
        with _db() as c:
            return [
                dict(r)
                for r in c.execute("SELECT * FROM ticket WHERE status = ? ORDER BY id", (status,))
            ]

    return mcp
