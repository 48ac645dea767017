"""Starting a stdio MCP server process: sandboxed, with a minimal environment (no host credentials).

Used by the registry (listing a command server's tools once, at registration) and by the
dedicated tier's CommandRuntime (one process per session); it knows nothing of either.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from weft_megamcp.exceptions import RegistrationError
from weft_megamcp.sandbox import SANDBOX_DB, SANDBOX_WORKSPACE, Sandbox

if TYPE_CHECKING:
    import mcp_types as mt
    from fastmcp.client.transports import StdioTransport

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
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    db: Path | None,
    *,
    sandbox: Sandbox,
    module_src: Path | None = None,
    log_file: Path | None = None,
) -> StdioTransport:
    # `${WEFT_WORKSPACE}`/`${WEFT_DB_PATH}` name the session's paths as the process sees them:
    # inside the sandbox those are its bind mounts, not the host's data dir.
    if sandbox.mode == "off":
        seen_ws, seen_db = cwd, db
    else:
        seen_ws, seen_db = SANDBOX_WORKSPACE, SANDBOX_DB if db is not None else None
    argv = [expand_placeholders(a, seen_ws, seen_db) for a in argv]
    env = {k: expand_placeholders(v, seen_ws, seen_db) for k, v in env.items()}
    spec = sandbox.wrap(argv, env=env, workspace=cwd, db=db, module_src=module_src)
    # Imported here: fastmcp's client stack (its auth, key-value stores and beartype under them)
    # is ~500 modules and ~8 MiB that every serving process would carry for a tier few hosts use.
    from fastmcp.client.transports import StdioTransport

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
    from fastmcp import Client  # see command_transport

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
