"""What a page-patch checkpoint costs against a whole copy, side by side in one run.

A live SQLite session DB (a CRM-like `contact` table of `--rows` rows) takes one write per
checkpoint (an update of a random row, every fifth write an insert) and is checkpointed through
the real `DebouncedCheckpointer` into a real local `CheckpointStore`, once with page patches
off (`max_patches` 0: a whole copy every time) and once on (`--max-patches`), alternating in
`--rounds` rounds of `--checkpoints` each so that machine noise hits both alike. Per policy:
process CPU per checkpoint, bytes the store received per checkpoint, and the time to restore
the latest checkpoint (a whole copy, or a whole copy and its patches); the restored DB is
compared with the live one, so a wrong patch fails the run.

    uv run python benchmarks/megamcp/checkpoint_pages.py [--rows 200 2000 20000]
        [--checkpoints 50] [--rounds 3] [--max-patches 16] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from weft_core.console import set_quiet, summary_table
from weft_megamcp.checkpoints import CheckpointStore, DebouncedCheckpointer


def make_db(path: Path, rows: int) -> None:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=PERSIST")
    con.execute(
        "CREATE TABLE contact (id INTEGER PRIMARY KEY, name TEXT, email TEXT UNIQUE, "
        "phone TEXT, company TEXT, notes TEXT)"
    )
    con.executemany(
        "INSERT INTO contact (name, email, phone, company, notes) VALUES (?, ?, ?, ?, ?)",
        [
            (f"Person {i}", f"p{i}@example.com", f"+1-555-{i:07d}", f"Co {i % 97}", "note " * 8)
            for i in range(rows)
        ],
    )
    con.commit()
    con.close()


def write(con: sqlite3.Connection, rng: random.Random, i: int, rows: int) -> None:
    if i % 5 == 4:
        con.execute(
            "INSERT INTO contact (name, email, phone, company, notes) VALUES (?, ?, ?, ?, ?)",
            (f"New {i}", f"new{i}-{rng.random()}@example.com", "+1-555-0000", "New Co", "x"),
        )
    else:
        con.execute(
            "UPDATE contact SET notes = ? WHERE id = ?", (f"call back {i}", rng.randint(1, rows))
        )
    con.commit()


def dump(path: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(path)
    try:
        return list(con.execute("SELECT * FROM contact ORDER BY id"))
    finally:
        con.close()


async def run_policy(
    root: Path, rows: int, checkpoints: int, max_patches: int, seed: int
) -> dict[str, float]:
    db = root / "live.sqlite"
    make_db(db, rows)
    store = CheckpointStore(root / "store")
    ckpt = DebouncedCheckpointer(
        store,
        store.acquire("s", "bench"),
        db,
        debounce_s=0,
        max_delay_s=0,
        max_patches=max_patches,
    )
    rng = random.Random(seed)
    con = sqlite3.connect(db)
    cpu = 0.0
    for i in range(1, checkpoints + 1):
        write(con, rng, i, rows)
        t0 = time.process_time()
        ckpt.notify_mutation(i)
        await ckpt.wait_durable(i, timeout=60)
        cpu += time.process_time() - t0
    con.close()
    stored = sum(
        f.stat().st_size
        for f in (root / "store").rglob("g*/*")
        if f.suffix in {".sqlite", ".pages"}
    )
    w0 = time.perf_counter()
    ref = store.restore_latest("s", root / "restored.sqlite")
    restore_ms = (time.perf_counter() - w0) * 1000
    if dump(root / "restored.sqlite") != dump(db):
        raise SystemExit(f"max_patches={max_patches}: the restored DB differs from the live one")
    return {
        "cpu_ms": cpu / checkpoints * 1000,
        "kib": stored / checkpoints / 1024,
        "restore_ms": restore_ms,
        "chain": len(ref.db_patches),
        "db_kib": ref.db_bytes / 1024,
        "patches": ckpt.patches,
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": []}
    for rows in args.rows:
        samples: dict[int, list[dict[str, float]]] = {0: [], args.max_patches: []}
        for r in range(args.rounds):
            for policy in (0, args.max_patches) if r % 2 == 0 else (args.max_patches, 0):
                with tempfile.TemporaryDirectory() as tmp:
                    samples[policy].append(
                        await run_policy(Path(tmp), rows, args.checkpoints, policy, seed=r)
                    )
        for policy, runs in samples.items():
            out["rows"].append(
                {
                    "db_rows": rows,
                    "max_patches": policy,
                    "db_kib": runs[-1]["db_kib"],
                    "cpu_ms_per_checkpoint": [round(x["cpu_ms"], 3) for x in runs],
                    "kib_per_checkpoint": statistics.median(x["kib"] for x in runs),
                    "restore_ms": statistics.median(x["restore_ms"] for x in runs),
                    "page_patches": sum(x["patches"] for x in runs),
                    "checkpoints": args.checkpoints * len(runs),
                }
            )
    return out


def cli() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[200, 2000, 20000])
    p.add_argument("--checkpoints", type=int, default=50, help="checkpoints per policy per round")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per policy")
    p.add_argument("--max-patches", type=int, default=16, help="checkpoint_max_patches when on")
    p.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = p.parse_args()
    if args.max_patches < 1:
        p.error("--max-patches must be >= 1 (0 is the whole-copy policy it is compared with)")
    set_quiet(False)
    out = asyncio.run(main(args))
    summary_table(
        "Checkpoint per write: whole copy (max patches 0) vs page patches, alternating rounds",
        [
            "DB rows",
            "DB KiB",
            "max patches",
            "CPU ms / checkpoint (per round)",
            "KiB stored / checkpoint",
            "patches / checkpoints",
            "restore ms",
        ],
        [
            [
                str(r["db_rows"]),
                f"{r['db_kib']:.0f}",
                str(r["max_patches"]),
                " / ".join(f"{x:.2f}" for x in r["cpu_ms_per_checkpoint"]),
                f"{r['kib_per_checkpoint']:.1f}",
                f"{r['page_patches']} / {r['checkpoints']}",
                f"{r['restore_ms']:.1f}",
            ]
            for r in out["rows"]
        ],
    )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    cli()
