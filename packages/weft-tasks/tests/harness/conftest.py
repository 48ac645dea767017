"""Harness tests run against real MCP servers over streamable HTTP on 127.0.0.1: the sample
bundles hosted by a minimal token-checking host (the harness, not the host, is under test here;
rollout tests go through MegaMCP)."""

import asyncio
import importlib.util
import shutil
import socket
import sys
from pathlib import Path

import pytest
import uvicorn
from fastmcp.server.middleware import Middleware
from starlette.responses import JSONResponse

from weft_core.binding import SessionBinding, bind_session
from weft_core.testing import ScriptedChatModel
from weft_tasks.harness import MCPEndpoint

_path = Path(__file__).parents[1] / "rollout" / "data" / "sample_task.py"
_spec = importlib.util.spec_from_file_location("weft_tasks_tests_sample_task", _path)
assert _spec and _spec.loader
sample = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample)


@pytest.fixture
def scripted():
    def make(responses):
        return ScriptedChatModel(list(responses))

    return make


@pytest.fixture
def graph():
    return sample.sample_graph()


class _Bind(Middleware):
    def __init__(self, binding: SessionBinding) -> None:
        self.binding = binding

    async def on_call_tool(self, context, call_next):
        with bind_session(self.binding):
            return await call_next(context)


class _TokenCheck:
    def __init__(self, app, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {self.token}":
                await JSONResponse({"error": "bad token"}, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load(bundle: Path, name: str):
    spec = importlib.util.spec_from_file_location(
        name, bundle / "__init__.py", submodule_search_locations=[str(bundle)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return importlib.import_module(f"{name}.server")


@pytest.fixture
async def endpoints(tmp_path):
    """{mcp: MCPEndpoint} for the sample crm + helpdesk; DB paths in `.db_paths`."""
    servers = []
    result: dict[str, MCPEndpoint] = {}
    db_paths: dict[str, Path] = {}
    for mcp in ("crm", "helpdesk"):
        bundle = sample.build_bundle(mcp, tmp_path / "bundles")
        db = tmp_path / "sessions" / mcp / "state.sqlite"
        db.parent.mkdir(parents=True)
        shutil.copy(bundle / "seed.sqlite", db)
        db_paths[mcp] = db
        module = _load(bundle, f"weft_harness_test_{mcp}_{tmp_path.name}")
        server = module.create_server()
        server.add_middleware(_Bind(SessionBinding(mcp, db, tmp_path / "ws" / mcp)))
        token = f"tok-{mcp}"
        app = _TokenCheck(server.http_app(path="/mcp"), token)
        port = _free_port()
        uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        task = asyncio.create_task(uv.serve())
        servers.append((uv, task))
        result[mcp] = MCPEndpoint(mcp=mcp, url=f"http://127.0.0.1:{port}/mcp", token=token)
    for uv, _ in servers:
        while not uv.started:
            await asyncio.sleep(0.02)
    result_obj = _Endpoints(result)
    result_obj.db_paths = db_paths
    yield result_obj
    for uv, task in servers:
        uv.should_exit = True
        await task


class _Endpoints(dict):
    db_paths: dict
