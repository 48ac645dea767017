from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from weft_core.checks import Evidence, evidence_from_paths
from weft_core.models import LedgerEntry

SEED = """
CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, email TEXT, tier TEXT, credit REAL, active INTEGER);
CREATE TABLE "order" (id INTEGER PRIMARY KEY, customer_id INTEGER, status TEXT, total REAL,
                      updated_at TEXT, tags TEXT);
CREATE TABLE audit (event TEXT, at TEXT);
INSERT INTO customer VALUES (1, 'Ada Lovelace', 'ada@example.com', 'gold', 120.5, 1),
                            (2, 'Bob Stone', 'bob@example.com', 'basic', 0, 1),
                            (3, 'Cy Young', NULL, 'basic', 10, 0);
INSERT INTO "order" VALUES (10, 1, 'pending', 99.9, '2026-01-01T10:00:00', '["gift"]'),
                           (11, 2, 'pending', 15, '2026-01-02T10:00:00', '[]');
"""

# What the agent did: shipped order 10, created order 12 for Bob, upgraded Bob, logged an event.
MUTATION = """
UPDATE "order" SET status = 'shipped', updated_at = '2026-02-01T09:00:00' WHERE id = 10;
INSERT INTO "order" VALUES (12, 2, 'pending', 42, '2026-02-01T09:05:00', '["rush", "b2b"]');
UPDATE customer SET tier = 'silver' WHERE id = 2;
INSERT INTO audit VALUES ('order.create', '2026-02-01T09:05:00');
"""


def _ledger() -> list[LedgerEntry]:
    return [
        LedgerEntry(
            seq=0,
            session_id="s1",
            mcp="shop",
            tool="get_order",
            arguments={"order_id": 10},
            result={
                "content": [
                    {"type": "text", "text": '{"id": 10, "status": "pending", "total": 99.9}'}
                ],
                "structuredContent": {
                    "id": 10,
                    "status": "pending",
                    "total": 99.9,
                    "items": [{"sku": "A-1", "qty": 2}],
                },
            },
        ),
        LedgerEntry(
            seq=1,
            session_id="s1",
            mcp="shop",
            tool="ship_order",
            arguments={"order_id": 10, "carrier": "UPS"},
            result="Order 10 shipped via UPS",
            mutated=True,
        ),
        LedgerEntry(
            seq=2,
            session_id="s1",
            mcp="shop",
            tool="create_order",
            arguments={"customer_id": "2", "total": 42},
            result="not valid",
            is_error=True,
            error_kind="invalid_arguments",
        ),
        LedgerEntry(
            seq=3,
            session_id="s1",
            mcp="shop",
            tool="create_order",
            arguments={"customer_id": 2, "total": 42.0, "tags": ["rush", "b2b"]},
            result=[{"type": "text", "text": '{"order": {"id": 12, "status": "pending"}}'}],
            mutated=True,
        ),
    ]


@pytest.fixture
def shop_paths(tmp_path: Path) -> dict[str, Path]:
    initial = tmp_path / "initial.sqlite"
    conn = sqlite3.connect(initial)
    conn.executescript(SEED)
    conn.close()
    final = tmp_path / "final.sqlite"
    shutil.copy(initial, final)
    conn = sqlite3.connect(final)
    conn.executescript(MUTATION)
    conn.close()
    before = tmp_path / "ws_before"
    after = tmp_path / "ws_after"
    before.mkdir()
    (before / "notes.txt").write_text("draft\n")
    shutil.copytree(before, after, dirs_exist_ok=True)
    (after / "reports").mkdir()
    (after / "reports" / "summary.md").write_text("# Orders\nShipped order 10 to Ada Lovelace\n")
    (after / "blob.bin").write_bytes(b"\xff\x00\xfe")
    return {"initial": initial, "final": final, "before": before, "after": after}


@pytest.fixture
def shop(shop_paths: dict[str, Path]) -> Evidence:
    return evidence_from_paths(
        shop_paths["initial"],
        shop_paths["final"],
        _ledger(),
        shop_paths["before"],
        shop_paths["after"],
        mcp="shop",
    )


@pytest.fixture
def bindings() -> dict[str, object]:
    return {
        "customer": {"id": 2, "email": "bob@example.com", "name": "Bob Stone"},
        "order": {"id": 10, "carrier": "UPS"},
        "new_order": {"total": "42.00"},
    }
