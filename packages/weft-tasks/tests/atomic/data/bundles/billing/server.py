"""A billing MCP server: invoices keyed by customer email, state from the session binding."""

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
    mcp = FastMCP("billing")

    @mcp.tool
    def find_invoices(customer_email: str) -> list[dict]:
        """List the invoices of a customer email."""
        with _db() as c:
            return [
                dict(r)
                for r in c.execute(
                    "SELECT * FROM invoice WHERE customer_email = ? ORDER BY id", (customer_email,)
                )
            ]

    @mcp.tool
    def get_invoice(invoice_id: int) -> dict:
        """Get an invoice by id."""
        with _db() as c:
            row = c.execute("SELECT * FROM invoice WHERE id = ?", (invoice_id,)).fetchone()
        if row is None:
            raise ToolError(f"no invoice {invoice_id}")
        return dict(row)

    @mcp.tool
    def create_invoice(customer_email: str, amount: float, memo: str = "") -> dict:
        """Issue an invoice."""
        if amount <= 0:
            raise ToolError("amount must be positive")
        with _db() as c:
            cur = c.execute(
                "INSERT INTO invoice (customer_email, amount, memo) VALUES (?, ?, ?)",
                (customer_email, amount, memo),
            )
            return dict(
                c.execute("SELECT * FROM invoice WHERE id = ?", (cur.lastrowid,)).fetchone()
            )

    @mcp.tool
    def pay_invoice(invoice_id: int) -> dict:
        """Mark an unpaid invoice as paid."""
        with _db() as c:
            row = c.execute("SELECT status FROM invoice WHERE id = ?", (invoice_id,)).fetchone()
            if row is None:
                raise ToolError(f"no invoice {invoice_id}")
            if row["status"] != "unpaid":
                raise ToolError(f"invoice {invoice_id} is already paid")
            c.execute("UPDATE invoice SET status = 'paid' WHERE id = ?", (invoice_id,))
            return dict(c.execute("SELECT * FROM invoice WHERE id = ?", (invoice_id,)).fetchone())

    return mcp
