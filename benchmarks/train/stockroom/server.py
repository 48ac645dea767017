"""Stockroom: a small SQLite-backed MCP server for the credit-assignment benchmark.

One table `stock(sku, qty)` in the session DB that MegaMCP binds per call; three write tools and
one read tool. Each call opens its own connection, so the module holds no per-session state.
"""

from __future__ import annotations

import sqlite3

from fastmcp import FastMCP

from weft_core.binding import current_binding


def _db() -> sqlite3.Connection:
    return sqlite3.connect(str(current_binding().db_path))


def _qty(con: sqlite3.Connection, sku: str) -> int:
    row = con.execute("SELECT qty FROM stock WHERE sku = ?", (sku,)).fetchone()
    if row is None:
        raise ValueError(f"unknown sku {sku!r}")
    return int(row[0])


def _write(sku: str, qty: int) -> dict[str, object]:
    if qty < 0:
        raise ValueError(f"stock of {sku} cannot go below 0")
    with _db() as con:
        _qty(con, sku)
        con.execute("UPDATE stock SET qty = ? WHERE sku = ?", (qty, sku))
    return {"sku": sku, "qty": qty}


def create_server() -> FastMCP:
    mcp = FastMCP("st")

    @mcp.tool
    def get(sku: str) -> dict[str, object]:
        """The stock of one SKU."""
        with _db() as con:
            return {"sku": sku, "qty": _qty(con, sku)}

    @mcp.tool
    def set(sku: str, qty: int) -> dict[str, object]:
        """Set the stock of a SKU."""
        return _write(sku, qty)

    @mcp.tool
    def add(sku: str, qty: int) -> dict[str, object]:
        """Add units to a SKU's stock."""
        with _db() as con:
            now = _qty(con, sku)
        return _write(sku, now + qty)

    @mcp.tool
    def remove(sku: str, qty: int) -> dict[str, object]:
        """Take units out of a SKU's stock."""
        with _db() as con:
            now = _qty(con, sku)
        return _write(sku, now - qty)

    return mcp
