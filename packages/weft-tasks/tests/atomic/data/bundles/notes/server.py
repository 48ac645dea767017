"""A notes MCP server: files in the session workspace."""

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from weft_core.binding import current_binding, resolve_in_workspace

from .models import DDL  # noqa: F401


def create_server() -> FastMCP:
    mcp = FastMCP("notes")

    @mcp.tool
    def write_note(path: str, content: str) -> dict:
        """Write a text file in the workspace."""
        p = resolve_in_workspace(current_binding().workspace, path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")
        return {"path": path, "bytes": len(content.encode())}

    @mcp.tool
    def read_note(path: str) -> str:
        """Read a text file from the workspace."""
        p = resolve_in_workspace(current_binding().workspace, path)
        if not p.is_file():
            raise ToolError(f"no file {path!r}")
        return p.read_text(encoding="utf-8")

    @mcp.tool
    def list_notes(folder: str) -> list[str]:
        """List the files in a workspace folder."""
        p = resolve_in_workspace(current_binding().workspace, folder)
        return sorted(x.name for x in p.iterdir()) if p.is_dir() else []

    @mcp.tool
    def delete_note(path: str) -> dict:
        """Delete a workspace file."""
        p = resolve_in_workspace(current_binding().workspace, path)
        if not p.is_file():
            raise ToolError(f"no file {path!r}")
        p.unlink()
        return {"deleted": path}

    return mcp
