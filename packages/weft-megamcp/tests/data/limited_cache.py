"""A module the screen rates `limited`: it starts a timer thread that outlives the call."""

import threading

from fastmcp import FastMCP

mcp = FastMCP("limited_cache")


@mcp.tool
def warm(key: str) -> str:
    """Schedule a cache warm-up for `key` on a background timer."""
    threading.Timer(0.01, lambda: None).start()
    return key
