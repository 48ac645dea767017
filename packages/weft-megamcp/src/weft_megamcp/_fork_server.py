"""The prefork workers' fork server: what it preloads, and starting it early.

Workers fork from one multiprocessing "forkserver" process that has already imported the host's
stack and what a worker imports later (`_fork_template`, last in the preload list). It imports
that stack in its own process, so starting it before the master imports the same modules lets
both imports run at once on two cores (a host's boot was the master's imports followed by the
fork server's).
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import forkserver
from multiprocessing.context import ForkServerContext

PRELOAD = [
    "pydantic",
    "sqlalchemy",
    "sqlmodel",
    "fastapi",
    "starlette",
    "uvicorn",
    "httpx",
    "fastmcp",
    "mcp",
    "weft_core.binding",
    "weft_core.checks",
    "weft_megamcp.app",
    "weft_megamcp._fork_template",  # last: it imports what workers import, then freezes
]


def fork_server_context() -> ForkServerContext:
    """The forkserver context, with the host's stack as its preload list."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start_fork_server() -> None:
    """Start the fork server now (it inherits this process's environment as it is now: call it
    after secrets are scrubbed from it); a later fork reuses it."""
    fork_server_context()
    forkserver.ensure_running()
