"""A stdio MCP server started by command: counts calls in memory and writes files in its cwd."""

from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("stdio_notes")
_calls = [0]


@mcp.tool
def note(name: str, text: str) -> str:
    """Write a note file in the working directory."""
    if "/" in name or name.startswith("."):
        raise ValueError(f"bad note name {name!r} (cwd is {Path.cwd()})")
    Path(name).write_text(text)
    _calls[0] += 1
    return f"call {_calls[0]}"


@mcp.tool
def read(name: str) -> str:
    """Read a note file from the working directory."""
    return Path(name).read_text()


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
