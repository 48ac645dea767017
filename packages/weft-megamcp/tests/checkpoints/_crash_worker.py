"""A worker process for the crash-recovery test: owns one session, writes rows as fast as it
can, checkpoints with a DebouncedCheckpointer, and prints an acknowledgement line for every
published checkpoint. The test kill -9s it mid-run.

usage: python _crash_worker.py STORE_URL SESSION DB_PATH
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

from weft_megamcp.checkpoints import CheckpointRef, CheckpointStore, DebouncedCheckpointer


async def main(store_url: str, session: str, db_path: str) -> None:
    store = CheckpointStore(store_url)
    lease = store.acquire(session, "crash-worker", steal=True)
    db = Path(db_path)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE IF NOT EXISTS item (id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()

    def acked(ref: CheckpointRef) -> None:
        print(f"DURABLE {ref.state_version}", flush=True)

    ckpt = DebouncedCheckpointer(
        store, lease, db, debounce_s=0.02, max_delay_s=0.1, on_checkpoint=acked
    )
    print(f"READY {lease.generation}", flush=True)
    i = 0
    while True:
        i += 1
        con.execute("INSERT INTO item (id, name) VALUES (?, ?)", (i, f"row-{i}"))
        con.commit()
        ckpt.notify_mutation(i)  # state version == row id
        await asyncio.sleep(0.002)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
