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

# Placeholders a registered command may use in its argv and env values. Third-party servers take
# their state location as a flag or variable (`--db-path`, `MEMORY_FILE_PATH`) and some resolve a
# relative one against their install folder, which every session would then share.
WORKSPACE_PLACEHOLDER = "${WEFT_WORKSPACE}"
DB_PATH_PLACEHOLDER = "${WEFT_DB_PATH}"


def expand_placeholders(value: str, cwd: Path, db: Path | None) -> str:
    """`${WEFT_WORKSPACE}` and `${WEFT_DB_PATH}` replaced by the session's absolute paths."""
    value = value.replace(WORKSPACE_PLACEHOLDER, str(cwd))
    return value.replace(DB_PATH_PLACEHOLDER, str(db if db is not None else cwd / "state.sqlite"))


def command_transport(
    argv: list[str], env: dict[str, str], cwd: Path, db: Path | None
) -> StdioTransport:
    # Only a minimal environment reaches third-party servers: no host credentials.
    base = {k: os.environ[k] for k in _SAFE_ENV if k in os.environ}
    base.update({k: expand_placeholders(v, cwd, db) for k, v in env.items()})
    base["WEFT_WORKSPACE"] = str(cwd)
    if db is not None:
        base["WEFT_DB_PATH"] = str(db)
    argv = [expand_placeholders(a, cwd, db) for a in argv]
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
