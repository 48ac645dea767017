"""Sandbox-local serving: ONE MCP server process for one session, from the files shipped into
its sandbox (the bundle source and an initialized DB), on streamable HTTP at 127.0.0.1.

usage: python sandbox_server.py SANDBOX_DIR      (prints "PORT <n>" once listening)

The DB and workspace come from the default session binding (WEFT_DB_PATH / WEFT_WORKSPACE), so
the very same server.py runs here and in MegaMCP. The HTTP app is configured like MegaMCP's
front (stateless, JSON responses) so the comparison is about deployment, not transport.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import socket
import sys
from pathlib import Path


def main(sandbox: Path) -> None:
    os.environ["WEFT_DB_PATH"] = str(sandbox / "state.sqlite")
    os.environ["WEFT_WORKSPACE"] = str(sandbox / "workspace")
    pkg = "sandbox_mcp"
    spec = importlib.util.spec_from_file_location(
        pkg,
        sandbox / "server_pkg" / "__init__.py",
        submodule_search_locations=[str(sandbox / "server_pkg")],
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[pkg] = module
    spec.loader.exec_module(module)
    server = importlib.import_module(f"{pkg}.server").create_server()

    import uvicorn

    app = server.http_app(path="/mcp", stateless_http=True, json_response=True)
    # IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (as MegaMCP's bind_socket).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
