"""Task traces for the MegaMCP serving benchmark: the same planned calls for both serving modes.

A trace is a list of (tool, arguments) against the benchmark bundle (contacts in SQLite, notes in
the workspace). Traces are deterministic in (task index, seed), so sandbox-local serving and
MegaMCP replay exactly the same calls on the same initial state.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

Call = tuple[str, dict[str, Any]]

BUNDLE_SOURCE = (
    Path(__file__).resolve().parents[2]
    / "packages"
    / "weft-megamcp"
    / "tests"
    / "data"
    / "notes_bundle"
)
SHIPPED_SOURCE = ("__init__.py", "models.py", "server.py", "manifest.json")


def build_bundle(dest: Path, seed_rows: int) -> Path:
    """The benchmark bundle: the hand-written notes bundle with a realistic initialized DB."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(BUNDLE_SOURCE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    con = sqlite3.connect(dest / "seed.sqlite")
    con.execute("DELETE FROM contact")
    rng = random.Random(7)
    tiers = ["basic", "gold", "platinum"]
    con.executemany(
        "INSERT INTO contact (id, name, email, tier) VALUES (?, ?, ?, ?)",
        [
            (i, f"Customer {i:05d}", f"customer{i:05d}@example.com", rng.choice(tiers))
            for i in range(1, seed_rows + 1)
        ],
    )
    con.commit()
    con.execute("VACUUM")
    con.close()
    return dest


def make_trace(task: int, calls: int, seed_rows: int, seed: int = 0) -> list[Call]:
    rng = random.Random(seed * 1_000_003 + task)
    out: list[Call] = []
    notes: list[str] = []
    kinds = ["add", "update", "write", "read", "add", "update", "write", "read", "delete", "add"]
    for i in range(calls):
        kind = kinds[i % len(kinds)]
        if kind == "read" and not notes:
            kind = "write"
        if kind == "add":
            out.append(
                ("add_contact", {"name": f"T{task} P{i}", "email": f"t{task}.p{i}@example.org"})
            )
        elif kind == "update":
            cid = rng.randint(1, seed_rows)
            out.append(
                ("update_email", {"contact_id": cid, "email": f"moved{task}.{i}@example.org"})
            )
        elif kind == "write":
            path = f"/notes/task{task}-{i}.md"
            notes.append(path)
            out.append(
                ("write_note", {"path": path, "text": f"Follow-up {i} for task {task}. " * 8})
            )
        elif kind == "read":
            out.append(("read_note", {"path": rng.choice(notes)}))
        else:
            out.append(("delete_contact", {"contact_id": rng.randint(1, seed_rows)}))
    return out


def trace_bytes(trace: list[Call]) -> bytes:
    return json.dumps(trace).encode()
