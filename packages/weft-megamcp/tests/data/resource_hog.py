"""A hosted module that misuses the host's resources: a coroutine that never awaits, a sync
tool that sleeps, and a tool with a huge result (tests of per-call limits)."""

import threading
import time
from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("resource_hog")


@mcp.tool
async def spin(seconds: float) -> int:
    """Burn CPU without ever awaiting, for `seconds` (blocks an event loop it runs on)."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


@mcp.tool
def nap(seconds: float) -> str:
    """Block a thread for `seconds`."""
    time.sleep(seconds)
    return "rested"


@mcp.tool
def hold(folder: str, limit_s: float = 300.0) -> str:
    """Mark `folder`/started/<thread> and block this thread until `folder`/open exists."""
    root = Path(folder)
    (root / "started").mkdir(parents=True, exist_ok=True)
    (root / "started" / str(threading.get_ident())).touch()
    end = time.monotonic() + limit_s
    while not (root / "open").exists() and time.monotonic() < end:
        time.sleep(0.05)
    return "released"


@mcp.tool
def blob(mib: int) -> str:
    """A result of `mib` MiB of text."""
    return "x" * (mib * 1024 * 1024)


@mcp.tool
def ping() -> str:
    """Answer at once."""
    return "pong"
