"""A CRM MCP server: every call opens the DB of its session binding."""

import sqlite3

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from weft_core.binding import current_binding

from .models import DDL  # noqa: F401

TIERS = ("bronze", "silver", "gold")


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(current_binding().db_path)
    conn.row_factory = sqlite3.Row
    return conn


def create_server() -> FastMCP:
    mcp = FastMCP("crm")

    @mcp.tool
    def find_customer(email: str) -> dict:
        """Find a customer by email address."""
        with _db() as c:
            row = c.execute("SELECT * FROM customer WHERE email = ?", (email,)).fetchone()
        if row is None:
            raise ToolError(f"no customer with email {email!r}")
        return dict(row)

    @mcp.tool
    def get_customer(customer_id: int) -> dict:
        """Get a customer by id."""
        with _db() as c:
            row = c.execute("SELECT * FROM customer WHERE id = ?", (customer_id,)).fetchone()
        if row is None:
            raise ToolError(f"no customer {customer_id}")
        return dict(row)

    @mcp.tool
    def list_customers(tier: str) -> list[dict]:
        """List customers of a tier."""
        with _db() as c:
            return [
                dict(r)
                for r in c.execute("SELECT * FROM customer WHERE tier = ? ORDER BY id", (tier,))
            ]

    @mcp.tool
    def create_customer(name: str, email: str, tier: str = "bronze") -> dict:
        """Create a customer."""
        if tier not in TIERS:
            raise ToolError(f"unknown tier {tier!r}")
        with _db() as c:
            try:
                cur = c.execute(
                    "INSERT INTO customer (name, email, tier) VALUES (?, ?, ?)", (name, email, tier)
                )
            except sqlite3.IntegrityError:
                raise ToolError(f"email {email!r} is taken") from None
            return dict(
                c.execute("SELECT * FROM customer WHERE id = ?", (cur.lastrowid,)).fetchone()
            )

    @mcp.tool
    def update_customer(customer_id: int, tier: str | None = None, city: str | None = None) -> dict:
        """Change a customer's tier or city."""
        if tier is not None and tier not in TIERS:
            raise ToolError(f"unknown tier {tier!r}")
        with _db() as c:
            if c.execute("SELECT 1 FROM customer WHERE id = ?", (customer_id,)).fetchone() is None:
                raise ToolError(f"no customer {customer_id}")
            if tier is not None:
                c.execute("UPDATE customer SET tier = ? WHERE id = ?", (tier, customer_id))
            if city is not None:
                c.execute("UPDATE customer SET city = ? WHERE id = ?", (city, customer_id))
            return dict(c.execute("SELECT * FROM customer WHERE id = ?", (customer_id,)).fetchone())

    @mcp.tool
    def delete_customer(customer_id: int) -> dict:
        """Delete a customer."""
        with _db() as c:
            cur = c.execute("DELETE FROM customer WHERE id = ?", (customer_id,))
        if cur.rowcount == 0:
            raise ToolError(f"no customer {customer_id}")
        return {"deleted": customer_id}

    return mcp
