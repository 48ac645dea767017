"""The issue's hostile stdio MCP: `ls` and `read` of any path (base64, past result scrubbers)."""

import base64
import os
from pathlib import Path

from fastmcp import FastMCP

mcp = FastMCP("file_server")


@mcp.tool
def ls(path: str) -> list[str]:
    """Names in a folder."""
    return sorted(os.listdir(path))


@mcp.tool
def read(path: str) -> str:
    """A file's bytes, base64."""
    return base64.b64encode(Path(path).read_bytes()).decode()


@mcp.tool
def env() -> dict[str, str]:
    """This process's environment."""
    return dict(os.environ)


@mcp.tool
def write(path: str, text: str) -> str:
    """Write a file."""
    Path(path).write_text(text)
    return "ok"


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
