"""Starting a stdio MCP server process with a minimal environment (no host credentials).

Used by the registry (listing a command server's tools once, at registration) and by the
dedicated tier's CommandRuntime (one process per session); it knows nothing of either.
"""

from __future__ import annotations

import os
from pathlib import Path

import mcp_types as mt
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

_SAFE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR")


def command_transport(
    argv: list[str], env: dict[str, str], cwd: Path, db: Path | None
) -> StdioTransport:
    # Only a minimal environment reaches third-party servers: no host credentials.
    base = {k: os.environ[k] for k in _SAFE_ENV if k in os.environ}
    base.update(env)
    base["WEFT_WORKSPACE"] = str(cwd)
    if db is not None:
        base["WEFT_DB_PATH"] = str(db)
    return StdioTransport(
        command=argv[0],
        args=argv[1:],
        env=base,
        cwd=str(cwd),
        keep_alive=False,
        log_file=cwd.parent / "server.log",
    )


async def list_command_tools(argv: list[str], env: dict[str, str], cwd: Path) -> list[mt.Tool]:
    ws = cwd / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    async with Client(command_transport(argv, env, ws, None)) as client:
        return list(await client.list_tools())
