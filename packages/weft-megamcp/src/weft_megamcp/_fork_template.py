"""The last module of the fork server's preload list: what makes the fork server a template.

multiprocessing's fork server preloads modules by name and nothing else, so importing this module
is the one hook that runs in the fork server after the rest of the preload and before any worker
forks from it. Nothing else imports it.

A worker's memory is the template's pages (shared copy-on-write) plus what it writes. Modules a
worker would import on its own (the sqlite dialect when its first engine opens, uvicorn's
protocol and loop classes when it serves, anyio's backend on the first request, the worker
module itself) are imported here once instead of into each worker's private memory:
a worker's private memory (USS) with its sessions fell from 61 to 51 MiB (benchmarks/megamcp
README, session 27).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import sys

WORKER_IMPORTS = (
    "weft_megamcp.worker",  # aiohttp stays out: a worker imports it only to forward (rare)
    "sqlalchemy.dialects.sqlite.pysqlite",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "pydantic.v1",
    "fastmcp.server.middleware.dereference",
    "fastmcp.server.transforms.catalog",
    "fsspec.implementations.chained",
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "h11",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.h11_impl",
)


def prepare() -> None:
    """Import what every worker imports, then freeze the collector's view of the template."""
    for name in WORKER_IMPORTS:
        # A module a dependency's new release moved only costs memory, never a worker.
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    # Frozen, the template's objects are never traversed by a worker's collector, whose writes
    # to their GC headers would copy their pages into every worker. No collection first: the
    # holes it would free get reused by workers' allocations, which copies those pages too.
    gc.freeze()
    _return_free_heap()


def _return_free_heap() -> None:
    """Give the heap's free pages back to the kernel: every worker would otherwise map the
    buffers the imports freed (~1.5 MiB of each worker's RSS)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):  # a libc without malloc_trim (musl)
        ctypes.CDLL(None).malloc_trim(0)


prepare()
