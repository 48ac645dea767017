"""The least RSS a forked MegaMCP worker can have: what the imports alone leave in a process.

    uv run python benchmarks/megamcp/rss_floor.py [--workers 8] [--local-mib 5599] [--json FILE]

A fresh interpreter imports what every worker must hold to run a generated environment's tools
(fastmcp, uvicorn, sqlmodel and SQLite's dialect), builds a one-tool FastMCP HTTP app and loads
uvicorn's config; it then forks a child that sleeps. Both report `/proc/self/status`'s RssAnon
and RssFile. Fork copies the page tables of anonymous memory, so the child's RSS holds every
anonymous page its parent made, while file-backed pages (code, shared libraries) join the
child's RSS only once it touches them. `--workers` times the child's RSS is the least any
prefork host of that many such workers can sum to, before its master, its fork server and any
session; printed against `--local-mib`, the 52 local servers' RSS from `run.py` (5,599 MiB in
session 29), as the best RSS change that many workers could reach. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

KIB = 1024


def rss_parts() -> dict[str, int]:
    """RssAnon, RssFile and RssShmem of this process, in bytes."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("Rss") and ":" in line:
                key, _, value = line.partition(":")
                out[key] = int(value.split()[0]) * KIB
    return out


def load_floor() -> int:
    """Import and build what a worker needs to serve one FastMCP tool over HTTP."""
    import sqlalchemy.dialects.sqlite.pysqlite  # noqa: F401  (what generated tools import)
    import sqlmodel  # noqa: F401
    import uvicorn
    from fastmcp import FastMCP

    mcp = FastMCP("floor")

    @mcp.tool
    def ping(x: int) -> int:
        return x

    app = mcp.http_app(stateless_http=True, json_response=True)
    uvicorn.Config(app, ws="none").load()
    return len(sys.modules)


def measure() -> dict[str, Any]:
    modules = load_floor()
    parent = rss_parts()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        time.sleep(0.2)
        os.write(write, json.dumps(rss_parts()).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        child = json.loads(fh.read())
    os.waitpid(pid, 0)
    return {"modules": modules, "interpreter": parent, "forked_child": child}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=8, help="prefork workers of the App. D row")
    ap.add_argument(
        "--local-mib", type=float, default=5599.0, help="RSS of the local fleet to compare with"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    if not Path("/proc/self/status").exists():
        raise SystemExit("rss_floor: needs Linux's /proc/self/status")
    r = measure()
    mib = 1024 * 1024
    for who in ("interpreter", "forked_child"):
        parts = r[who]
        total = parts.get("RssAnon", 0) + parts.get("RssFile", 0) + parts.get("RssShmem", 0)
        r[who]["rss"] = total
        print(
            f"{who:13s} RSS {total / mib:6.1f} MiB = anonymous {parts['RssAnon'] / mib:6.1f}"
            f" + file {parts['RssFile'] / mib:5.1f} ({r['modules']} modules)"
        )
    floor = args.workers * r["forked_child"]["rss"]
    best = (floor / mib - args.local_mib) / args.local_mib * 100
    r.update(workers=args.workers, local_mib=args.local_mib, workers_floor=floor, best_change=best)
    print(
        f"{args.workers} forked workers hold >= {floor / mib:.0f} MiB RSS before any master or "
        f"session: at best {best:+.1f}% against {args.local_mib:.0f} MiB of local servers"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(r, indent=2) + "\n")


if __name__ == "__main__":
    main()
