"""A second stdio MCP server over the same working directory as `stdio_notes`: it lists and
counts the files there, and keeps a call count in memory (so a restart is visible)."""

from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("stdio_shelf")
_calls = [0]


@mcp.tool
def shelf() -> list[str]:
    """The files in the working directory, sorted."""
    _calls[0] += 1
    return sorted(p.name for p in Path.cwd().iterdir() if p.is_file())


@mcp.tool
def words(name: str) -> int:
    """How many words a file of the working directory holds."""
    return len(Path(name).read_text().split())


@mcp.tool
def shelf_calls() -> int:
    """How many times `shelf` ran in this process."""
    return _calls[0]


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
