"""Benchmark: SQLite state capture, DB diff and check evaluation (weft_core.state / weft_core.checks).

Run: uv run python benchmarks/core/state_checks.py [--rows 1000 10000 50000]
Prints one row per table size: best-of-3 wall time of capture_db, diff_db (50 changed rows and
10% of rows changed) and evaluate (20 checks: 10 row_exists, 9 diff_contains, 1 no_other_changes).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from weft_core.checks import Evidence, evaluate
from weft_core.console import summary_table
from weft_core.state import capture_db, diff_db


def build(path: Path, rows: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, email TEXT, tier TEXT, credit REAL, note TEXT)"
    )
    conn.execute(
        "CREATE TABLE line (order_id INT, line INT, sku TEXT, qty INT, PRIMARY KEY (order_id, line))"
    )
    conn.executemany(
        "INSERT INTO customer VALUES (?, ?, ?, ?, ?, ?)",
        [(i, f"name{i}", f"u{i}@x.com", "basic", i * 1.5, "x" * 100) for i in range(rows)],
    )
    conn.executemany(
        "INSERT INTO line VALUES (?, ?, ?, ?)",
        [(i // 3, i % 3, f"SKU{i}", i % 7) for i in range(rows)],
    )
    conn.commit()
    conn.close()


def mutate(src: Path, dst: Path, sql: str) -> None:
    shutil.copy(src, dst)
    conn = sqlite3.connect(dst)
    conn.executescript(sql)
    conn.commit()
    conn.close()


def best_ms(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3, result


def run_size(rows: int) -> list[Any]:
    tmp = Path(tempfile.mkdtemp())
    try:
        base = tmp / "a.sqlite"
        build(base, rows)
        small, big = tmp / "b.sqlite", tmp / "c.sqlite"
        mutate(
            base,
            small,
            "UPDATE customer SET tier = 'gold' WHERE id < 25; DELETE FROM line WHERE order_id < 5;"
            "INSERT INTO customer (name) VALUES ('new');",
        )
        mutate(base, big, "UPDATE customer SET credit = credit + 1 WHERE id % 10 = 0;")
        t_capture, initial = best_ms(lambda: capture_db(base, immutable=True))
        final_small, final_big = capture_db(small), capture_db(big)
        t_diff_small, diff = best_ms(lambda: diff_db(initial, final_small))
        t_diff_big, _ = best_ms(lambda: diff_db(initial, final_big))
        checks = (
            [
                {"kind": "row_exists", "table": "customer", "where": {"id": i, "tier": "gold"}}
                for i in range(10)
            ]
            + [
                {
                    "kind": "diff_contains",
                    "table": "customer",
                    "change": "update",
                    "where": {"id": i},
                    "fields": ["tier"],
                }
                for i in range(9)
            ]
            + [
                {
                    "kind": "no_other_changes",
                    "allowed": [{"table": "customer"}, {"table": "line"}],
                }
            ]
        )
        evidence = Evidence(initial=initial, final=final_small, diff=diff)
        t_eval, result = best_ms(lambda: evaluate(checks, evidence))
        assert result.passed, result.failures
        return [
            rows,
            f"{base.stat().st_size / 1e6:.1f}",
            f"{t_capture:.1f}",
            f"{t_diff_small:.1f}",
            f"{t_diff_big:.1f}",
            f"{t_eval:.1f}",
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 50000])
    args = parser.parse_args()
    table_rows = [run_size(rows) for rows in args.rows]
    summary_table(
        "weft_core state/checks (best of 3, ms; 2 tables of N rows each)",
        [
            "rows/table",
            "DB MB",
            "capture",
            "diff (50 changes)",
            "diff (10% rows)",
            "evaluate 20 checks",
        ],
        table_rows,
    )


if __name__ == "__main__":
    main()
