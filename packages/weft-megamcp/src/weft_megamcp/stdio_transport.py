"""Starting a stdio MCP server process: sandboxed, with a minimal environment (no host credentials).

Used by the registry (listing a command server's tools once, at registration) and by the
dedicated tier's CommandRuntime (one process per session); it knows nothing of either.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as mt
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from weft_megamcp.exceptions import RegistrationError
from weft_megamcp.sandbox import Sandbox


def command_transport(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    db: Path | None,
    *,
    sandbox: Sandbox,
    module_src: Path | None = None,
    log_file: Path | None = None,
) -> StdioTransport:
    spec = sandbox.wrap(argv, env=env, workspace=cwd, db=db, module_src=module_src)
    return StdioTransport(
        command=spec.argv[0],
        args=spec.argv[1:],
        env=spec.env,
        cwd=str(spec.cwd),
        keep_alive=False,
        log_file=log_file or cwd.parent / "server.log",
    )


async def list_command_tools(
    argv: list[str], env: dict[str, str], cwd: Path, *, sandbox: Sandbox, timeout_s: float
) -> list[mt.Tool]:
    """The command's tools/list; a command that does not answer within `timeout_s` is stopped
    (closing the client ends its process) and reported as a RegistrationError."""
    ws = cwd / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    client = Client(command_transport(argv, env, ws, None, sandbox=sandbox))
    try:
        async with asyncio.timeout(timeout_s):
            async with client:
                return list(await client.list_tools())
    except TimeoutError:
        raise RegistrationError(
            f"command {' '.join(argv)!r} did not answer tools/list within {timeout_s:g} s "
            "(register_timeout_s)"
        ) from None
