"""A third-party style module that keeps process-global state: it must run one process per session."""

from fastmcp import FastMCP

COUNTER = {"n": 0}
mcp = FastMCP("global_counter")


@mcp.tool
def bump() -> int:
    """Increment the process-wide counter and return it."""
    global COUNTER
    COUNTER = {"n": COUNTER["n"] + 1}
    return COUNTER["n"]
