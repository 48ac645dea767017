"""What the per-turn state diff costs a rollout: checkpoint verification with it on and off.

Two real MegaMCP hosts on 127.0.0.1 (`checkpoint_diff_max_rows` 200 and 0) serve the test
notes bundle from a seed of `--rows` contacts. Each turn adds one contact and updates another
(two real tool calls), then verifies a new checkpoint; the table gives the verification's
latency per turn (median and p90 over `--turns`) with and without the diff, and the extra cost.
A second table times the diff function alone on two SQLite files (`diff_sqlite`, in SQL)
against capturing both files whole and diffing in Python (`diff_db`).

    uv run python benchmarks/megamcp/checkpoint_diff.py [--rows 100 10000 100000] [--turns 20]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from weft_core.console import set_quiet, summary_table
from weft_core.models import RowExists, Verifier
from weft_core.state import capture_db, diff_db, diff_sqlite

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "packages/weft-megamcp/tests/data/notes_bundle"


def seed_db(path: Path, rows: int) -> Path:
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE contact (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "email VARCHAR NOT NULL, tier VARCHAR NOT NULL)"
    )
    conn.executemany(
        "INSERT INTO contact VALUES (?, ?, ?, ?)",
        ((i, f"Person {i}", f"p{i}@example.com", "basic") for i in range(1, rows + 1)),
    )
    conn.commit()
    conn.close()
    return path


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def verify_latencies(tmp: Path, rows: int, turns: int, max_rows: int) -> list[float]:
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings

    data = tmp / f"host-{rows}-{max_rows}"
    bundle = data / "bundle"
    shutil.copytree(BUNDLE, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    settings = MegaMCPSettings(
        data_dir=data / "megamcp", checkpoint_diff_max_rows=max_rows, log_level="warning"
    )
    seed = seed_db(data / "seed.sqlite", rows)
    check = RowExists(id="first", table="contact", where={"id": 1})
    verifier = Verifier(checkpoints={f"n{t}": [check] for t in range(turns)})
    out: list[float] = []
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        mcp = (await client.register(bundle)).mcp_id
        uri = await client.put_snapshot(mcp, seed)
        group = await client.create_group({mcp: uri}, verifier=verifier)
        for t in range(turns):
            await client.call_tool(group, mcp, "add_contact", {"name": f"N{t}", "email": "n@x.y"})
            await client.call_tool(
                group, mcp, "update_email", {"contact_id": t + 1, "email": f"new{t}@x.y"}
            )
            t0 = time.perf_counter()
            result = await client.checkpoint_verify(group, f"n{t}")
            out.append((time.perf_counter() - t0) * 1000)
            assert result.passed, result
            if max_rows:
                assert result.state_diff is not None
                contact = result.state_diff.mcps[mcp].db.tables["contact"]
                assert len(contact.inserts) == 1 and len(contact.updates) == 1, contact.counts()
        await client.close(group)
    return out


def function_times(tmp: Path, rows: int, changed: int, reps: int = 5) -> tuple[float, float]:
    """(ms diff_sqlite, ms capture_db x2 + diff_db) for `changed` updated rows out of `rows`."""
    before = seed_db(tmp / f"f{rows}-{changed}-b.sqlite", rows)
    after = tmp / f"f{rows}-{changed}-a.sqlite"
    shutil.copyfile(before, after)
    conn = sqlite3.connect(after)
    conn.execute("UPDATE contact SET tier = 'gold' WHERE id <= ?", (changed,))
    conn.commit()
    conn.close()
    sql: list[float] = []
    py: list[float] = []
    for _ in range(reps):
        t0 = time.perf_counter()
        a = diff_sqlite(before, after, max_rows=200)
        t1 = time.perf_counter()
        b = diff_db(capture_db(before), capture_db(after))
        t2 = time.perf_counter()
        assert a.tables["contact"].counts() == b.tables["contact"].counts()
        sql.append((t1 - t0) * 1000)
        py.append((t2 - t1) * 1000)
    return statistics.median(sql), statistics.median(py)


async def main(rows_list: list[int], turns: int, json_path: str | None) -> None:
    set_quiet(True)
    verify_rows: list[dict[str, Any]] = []
    func_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for rows in rows_list:
            off = await verify_latencies(tmp, rows, turns, 0)
            on = await verify_latencies(tmp, rows, turns, 200)
            verify_rows.append(
                {
                    "db_rows": rows,
                    "turns": turns,
                    "off_median_ms": statistics.median(off),
                    "on_median_ms": statistics.median(on),
                    "off_p90_ms": _pct(off, 0.9),
                    "on_p90_ms": _pct(on, 0.9),
                    "extra_median_ms": statistics.median(on) - statistics.median(off),
                }
            )
            for changed in (2, 1000):
                if changed > rows:
                    continue
                sql, py = function_times(tmp, rows, changed)
                func_rows.append(
                    {
                        "db_rows": rows,
                        "changed": changed,
                        "diff_sqlite_ms": sql,
                        "capture_diff_ms": py,
                    }
                )
    set_quiet(False)
    summary_table(
        "Checkpoint verification per turn (2 writes), diff off vs on (cap 200 rows)",
        ["DB rows", "turns", "off med ms", "on med ms", "off p90", "on p90", "extra med ms"],
        [
            [
                str(r["db_rows"]),
                str(r["turns"]),
                f"{r['off_median_ms']:.1f}",
                f"{r['on_median_ms']:.1f}",
                f"{r['off_p90_ms']:.1f}",
                f"{r['on_p90_ms']:.1f}",
                f"{r['extra_median_ms']:+.1f}",
            ]
            for r in verify_rows
        ],
    )
    summary_table(
        "The diff alone: diff_sqlite (SQL, capped) vs capture_db x2 + diff_db (median of 5)",
        ["DB rows", "changed rows", "diff_sqlite ms", "capture+diff_db ms"],
        [
            [
                str(r["db_rows"]),
                str(r["changed"]),
                f"{r['diff_sqlite_ms']:.1f}",
                f"{r['capture_diff_ms']:.1f}",
            ]
            for r in func_rows
        ],
    )
    if json_path:
        Path(json_path).write_text(
            json.dumps({"verify": verify_rows, "function": func_rows}, indent=1)
        )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100, 10_000, 100_000])
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    asyncio.run(main(a.rows, a.turns, a.json))
