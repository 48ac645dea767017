"""Runtime shared by the generated server.py of an EnvBundle (copied verbatim by weft-envsynth).

State comes from `weft_core.binding.current_binding()` at call time: one SQLAlchemy engine per
session DB path (NullPool, cached, disposed by a release hook) and the session's workspace folder
for file tools. The MCP tools are registered with the spec's exact names and input schemas and
each forwards its arguments to its FastAPI route in-process (a direct ASGI call: no HTTP
client, no socket).
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastmcp import FastMCP
from fastmcp.tools.base import Tool, ToolResult
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.pool import NullPool
from sqlmodel import Session, SQLModel, select

from weft_core.binding import (
    WorkspaceEscapeError,
    current_binding,
    register_release_hook,
    resolve_in_workspace,
)

BUNDLE_DIR = Path(__file__).resolve().parent

_engines: dict[str, sa.Engine] = {}
_paths_by_session: dict[str, set[str]] = {}
_lock = threading.Lock()


class ToolFailure(Exception):
    """An error the tool reports to its caller (becomes an MCP isError result)."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def not_found(entity: str, value: Any = None) -> ToolFailure:
    shown = "" if value is None else f" {str(value)[:80]!r}"
    return ToolFailure("not_found", f"{entity}{shown} not found", 404)


def _enable_foreign_keys(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def engine_for(db_path: Path, session_id: str) -> sa.Engine:
    """The cached engine of a session DB; a missing local DB starts as a copy of seed.sqlite."""
    key = str(db_path)
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            if not db_path.exists():
                seed = BUNDLE_DIR / "seed.sqlite"
                if not seed.exists():
                    raise ToolFailure("unavailable", "the environment has no database", 503)
                db_path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(seed, db_path)
            engine = sa.create_engine(
                f"sqlite:///{db_path}",
                poolclass=NullPool,
                connect_args={"check_same_thread": False},
            )
            sa.event.listen(engine, "connect", _enable_foreign_keys)
            _engines[key] = engine
        _paths_by_session.setdefault(session_id, set()).add(key)
        return engine


def release(session_id: str) -> None:
    """Release hook: dispose the engines a session used (before restore, offload or evict)."""
    with _lock:
        for key in _paths_by_session.pop(session_id, set()):
            engine = _engines.pop(key, None)
            if engine is not None:
                engine.dispose()


def db_session() -> Iterator[Session]:
    """FastAPI dependency: a SQLModel session on the current binding's DB."""
    binding = current_binding()
    with Session(engine_for(binding.db_path, binding.session_id)) as session:
        yield session


def workspace_root() -> Path:
    """The session's workspace; a new one starts as a copy of the bundle's seed_workspace/."""
    root = current_binding().workspace
    if not root.exists():
        seed = BUNDLE_DIR / "seed_workspace"
        if seed.is_dir():
            shutil.copytree(seed, root, dirs_exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    return root


def ws_path(relative: Any) -> Path:
    if not isinstance(relative, str):
        raise ToolFailure("invalid_path", "path must be a string")
    try:
        return resolve_in_workspace(workspace_root(), relative)
    except WorkspaceEscapeError:
        raise ToolFailure("invalid_path", "path is outside the workspace") from None


def ws_rel(path: Path) -> str:
    rel = path.relative_to(workspace_root().resolve()).as_posix()
    return "/" if rel == "." else "/" + rel


def row_dict(row: Any) -> dict[str, Any]:
    """A row as JSON in the model's column order. A loaded table row keeps its attributes in an
    order that follows SQLAlchemy's hashed state (it changes with PYTHONHASHSEED), and tool
    results, ledgers and traces must be the same bytes for the same state."""
    if row is None:
        return {}
    data: dict[str, Any] = json.loads(row.model_dump_json())
    ordered = {name: data[name] for name in type(row).model_fields if name in data}
    return ordered | {k: v for k, v in sorted(data.items()) if k not in ordered}


def get_row(session: Session, model: type[SQLModel], key: Any, entity: str) -> Any:
    if key is None:
        raise ToolFailure("invalid_arguments", f"{entity} key is required")
    row = session.get(model, key)
    if row is None:
        raise not_found(entity, key)
    return row


def require_row(session: Session, model: type[SQLModel], key: Any, entity: str) -> None:
    """A referenced row must exist (foreign keys are also enforced by SQLite)."""
    if key is not None and session.get(model, key) is None:
        raise not_found(entity, key)


def first_row(session: Session, stmt: Any, entity: str) -> Any:
    row = session.exec(stmt).first()
    if row is None:
        raise not_found(f"matching {entity}")
    return row


def next_key(session: Session, model: type[SQLModel], key_field: str, prefix: str) -> str:
    """The next free id of the form PREFIX-0001, deterministic for a given state."""
    n = session.exec(select(sa.func.count()).select_from(model)).one() + 1
    while session.get(model, f"{prefix}-{n:04d}") is not None:
        n += 1
    return f"{prefix}-{n:04d}"


def text_match(rows: list[Any], query: Any, fields: list[str]) -> list[Any]:
    """Rows where any query word (2+ characters) occurs, case-insensitively, in a text field."""
    if query is None:
        return rows
    words = [w for w in str(query).lower().split() if len(w) >= 2]
    if not words:
        return rows
    out = []
    for r in rows:
        hay = " ".join(str(getattr(r, f, "") or "") for f in fields).lower()
        if any(w in hay for w in words):
            out.append(r)
    return out


def page(rows: list[Any], limit: Any, default: int = 50) -> dict[str, Any]:
    n = default
    if isinstance(limit, int | float) and not isinstance(limit, bool) and limit >= 1:
        n = min(int(limit), 500)
    items = [row_dict(r) for r in rows[:n]]
    return {"items": items, "count": len(items), "total": len(rows)}


def check_transition(
    row: Any, field: str, to_value: str, from_values: list[str], entity: str
) -> None:
    current = getattr(row, field)
    if current == to_value or (from_values and current is not None and current not in from_values):
        raise ToolFailure(
            "invalid_state", f"{entity} is {current!r} and cannot become {to_value!r}", 409
        )


def install_error_handlers(app: FastAPI) -> None:
    """Turn every failure into a short JSON error that never reveals file paths."""

    @app.exception_handler(ToolFailure)
    async def _tool_failure(_req: Request, exc: ToolFailure) -> JSONResponse:
        return JSONResponse({"error": exc.code, "message": exc.message}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_req: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        first = errs[0] if errs else {"loc": (), "msg": "invalid"}
        loc = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "arguments"
        return JSONResponse(
            {"error": "invalid_arguments", "message": f"{loc}: {first.get('msg')}"}, status_code=422
        )

    @app.exception_handler(IntegrityError)
    async def _integrity(_req: Request, exc: IntegrityError) -> JSONResponse:
        msg = str(exc.orig).split("\n")[0][:160]
        return JSONResponse(
            {"error": "conflict", "message": f"constraint failed: {msg}"}, status_code=409
        )

    @app.exception_handler(OperationalError)
    async def _operational(_req: Request, exc: OperationalError) -> JSONResponse:
        msg = str(exc.orig).split("\n")[0][:160]
        return JSONResponse({"error": "state_access", "message": msg}, status_code=500)

    @app.exception_handler(Exception)
    async def _internal(_req: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(
            {"error": "internal_error", "message": f"{type(exc).__name__}: {str(exc)[:160]}"},
            status_code=500,
        )


class RouteTool(Tool):
    """An MCP tool with the spec's name and input schema that calls its FastAPI route in-process.

    The route is called as an ASGI request directly (no HTTP client, no socket): FastAPI still
    validates the body, resolves dependencies and runs its exception handlers, but the httpx
    request/response machinery of an ASGITransport is skipped.
    """

    def __init__(self, *, app: FastAPI, route: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._app = app
        self._route = route

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            status, body = await call_route(self._app, self._route, arguments or {})
        except Exception as exc:  # the route crashed outside FastAPI's handlers
            return ToolResult(content=f"internal_error: {type(exc).__name__}", is_error=True)
        try:
            data = json.loads(body)
        except ValueError:
            data = {"error": "internal_error", "message": body[:200].decode("utf-8", "replace")}
        if status >= 400:
            if not isinstance(data, dict):
                data = {"error": "internal_error", "message": str(data)[:200]}
            return ToolResult(
                content=f"{data.get('error', 'error')}: {data.get('message', '')}", is_error=True
            )
        if not isinstance(data, dict):
            data = {"result": data}
        return ToolResult(structured_content=data)


class _RouteCall:
    """One in-process request to a route: the ASGI receive/send pair and what came back."""

    def __init__(self, payload: bytes) -> None:
        self.payload: bytes | None = payload
        self.status = 500
        self.chunks: list[bytes] = []

    async def receive(self) -> dict[str, Any]:
        if self.payload is not None:
            body, self.payload = self.payload, None
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))


async def call_route(app: FastAPI, path: str, arguments: dict[str, Any]) -> tuple[int, bytes]:
    """POST `arguments` as JSON to `path` of `app` through ASGI; (status, response body)."""
    payload = json.dumps(arguments).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"bundle"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ],
        "client": ("127.0.0.1", 0),
        "server": ("bundle", 80),
    }
    call = _RouteCall(payload)
    await app(scope, call.receive, call.send)
    return call.status, b"".join(call.chunks)


def load_tool_specs() -> list[dict[str, Any]]:
    spec = json.loads((BUNDLE_DIR / "spec.json").read_text(encoding="utf-8"))
    return list(spec.get("tools", []))


def build_mcp(
    app: FastAPI, name: str, routes: dict[str, str], certified: set[str] | None = None
) -> FastMCP:
    """The FastMCP server of `app`: one tool per spec tool that has a route (and is certified, when
    a certified set is given), with the spec's exact name, description and input schema."""
    register_release_hook(release)
    server = FastMCP(name=name)
    for tool in load_tool_specs():
        tname = tool["name"]
        if tname not in routes or (certified is not None and tname not in certified):
            continue
        server.add_tool(
            RouteTool(
                app=app,
                route=routes[tname],
                name=tname,
                description=tool.get("description") or "",
                parameters=tool.get("input_schema") or {"type": "object", "properties": {}},
                annotations=_annotations(tool.get("annotations")),
            )
        )
    return server


def _annotations(raw: Any) -> Any:
    """The spec's MCP tool annotations, or None when absent or not valid annotations."""
    if not isinstance(raw, dict) or not raw:
        return None
    from mcp_types import ToolAnnotations

    try:
        return ToolAnnotations.model_validate(raw)
    except ValueError:
        return None


def certified_tools() -> set[str] | None:
    """Tools manifest.json lists as certified; None before certification (validation serves all)."""
    path = BUNDLE_DIR / "manifest.json"
    if not path.exists():
        return None
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return {t["name"] for t in manifest.get("tools", []) if t.get("certified")}
