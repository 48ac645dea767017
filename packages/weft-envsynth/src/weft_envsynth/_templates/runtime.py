"""Runtime shared by the generated server.py of an EnvBundle (copied verbatim by weft-envsynth).

State comes from `weft_core.binding.current_binding()` at call time: one SQLAlchemy engine per
session DB path (one pooled connection, cached, disposed by a release hook) and the session's
workspace folder for file tools. The MCP tools are registered with the spec's exact names and input schemas and
each forwards its arguments to its FastAPI route in-process (a direct ASGI call: no HTTP
client, no socket).
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastmcp import FastMCP
from fastmcp.tools.base import Tool, ToolResult
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.pool import NullPool, QueuePool
from sqlalchemy.util import LRUCache
from sqlmodel import Session, SQLModel, select

from weft_core.binding import (
    WorkspaceEscapeError,
    current_binding,
    register_release_hook,
    resolve_in_workspace,
)

from .shapert import shaped

BUNDLE_DIR = Path(__file__).resolve().parent
# Result _meta key of a route's own fields that the documented response replaced.
ROUTE_RESULT_META = "weft/route_result"

_engines: dict[str, tuple[sa.Engine, tuple[int, int]]] = {}  # by path: (engine, file id)
_paths_by_session: dict[str, set[str]] = {}
_lock = threading.Lock()
# Every session engine of this bundle shares one SQLite dialect and one compiled-statement cache.
# SQLAlchemy caches compiled SQL per engine, keyed by the dialect object, so engines created by
# create_engine() per session compiled each statement again in every new session: a third of a
# short session's tool CPU. The statements are the same for every session DB of the bundle.
_DIALECT_SOURCE = sa.create_engine("sqlite://", poolclass=NullPool)
_COMPILED: LRUCache[Any, Any] = LRUCache(2000)
_dialect_ready = threading.Event()


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


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _session_engine(db_path: Path) -> sa.Engine:
    """An engine on one session DB: its own pool (one kept connection) on the bundle's shared
    dialect and compiled cache. What create_engine() adds per engine is repeated here: the
    dialect's connect hooks (SQLite's regexp and floor functions) and the foreign-key PRAGMA."""
    dialect = _DIALECT_SOURCE.dialect
    if not _dialect_ready.is_set():
        with _DIALECT_SOURCE.connect():  # first connect: the dialect reads the SQLite version
            pass
        _dialect_ready.set()
    url = sa.make_url(f"sqlite:///{db_path}")
    cargs, cparams = dialect.create_connect_args(url)
    cparams["check_same_thread"] = False
    dialect_hooks = dialect.on_connect_url(url)

    def connected(dbapi_conn: Any, record: Any) -> None:
        if dialect_hooks is not None:
            dialect_hooks(dbapi_conn)
        _enable_foreign_keys(dbapi_conn, record)

    pool = QueuePool(
        lambda: dialect.connect(*cargs, **cparams), pool_size=1, max_overflow=-1, dialect=dialect
    )
    sa.event.listen(pool, "connect", connected)
    return sa.Engine(
        pool, dialect, url, query_cache_size=0, execution_options={"compiled_cache": _COMPILED}
    )


def engine_for(db_path: Path, session_id: str) -> sa.Engine:
    """The cached engine of a session DB; a missing local DB starts as a copy of seed.sqlite.

    One connection is kept per session DB: opening one (and its PRAGMA listeners) cost more CPU
    than a call's statements. Calls of a session rarely overlap; an overlapping one gets a
    connection closed when it returns. The release hook closes it before the host restores,
    offloads or evicts the file; a file replaced without it (a recovery that lost the worker's
    memory, a hand-copied snapshot) is noticed by its identity and gets a new engine, so a kept
    connection never serves a deleted file."""
    key = str(db_path)
    with _lock:
        cached = _engines.get(key)
        file_id = _file_id(db_path)
        if cached is not None and (file_id is None or cached[1] != file_id):
            cached[0].dispose()
            cached = None
        if cached is None:
            if file_id is None:
                seed = BUNDLE_DIR / "seed.sqlite"
                if not seed.exists():
                    raise ToolFailure("unavailable", "the environment has no database", 503)
                db_path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(seed, db_path)
                file_id = _file_id(db_path)
            engine = _session_engine(db_path)
            cached = _engines[key] = (engine, file_id or (0, 0))
        _paths_by_session.setdefault(session_id, set()).add(key)
        return cached[0]


def release(session_id: str) -> None:
    """Release hook: dispose the engines a session used (before restore, offload or evict)."""
    with _lock:
        for key in _paths_by_session.pop(session_id, set()):
            cached = _engines.pop(key, None)
            if cached is not None:
                cached[0].dispose()


async def db_session() -> AsyncIterator[Session]:
    """FastAPI dependency: a SQLModel session on the current binding's DB.

    Async on purpose: FastAPI runs a sync generator dependency's entry and exit in its thread
    pool, two thread hand-offs per call on top of the endpoint's own. Neither side blocks: a
    Session connects lazily (in the endpoint's thread), engine_for only stats the file (or
    copies a small seed DB once per session), and closing returns a connection to its pool."""
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


def _root_relative(root: Path, name: str) -> str:
    """Real file servers are called with absolute paths inside the folder they were given; such a
    path naming the session's own workspace folder means the same place here ("/" + the rest)."""
    for form in {str(root), str(root.resolve())}:
        form = form.rstrip("/")
        if form and (name == form or name.startswith(form + "/")):
            return "/" + name[len(form) :].lstrip("/")
    return name


def ws_path(relative: Any) -> Path:
    if not isinstance(relative, str):
        raise ToolFailure("invalid_path", "path must be a string")
    try:
        root = workspace_root()
        return resolve_in_workspace(root, _root_relative(root, relative))
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


def move_amount(
    session: Session,
    model: type[SQLModel],
    key: Any,
    entity: str,
    field: str,
    sign: int,
    amount: Any,
    no_overdraft: bool,
) -> None:
    """Debit (sign -1) or credit (+1) `amount` on the balance of the row `key` names; a debit
    below zero is refused when the tool's definition documents that constraint."""
    if key is None or amount is None:
        return
    row = session.get(model, key)
    if row is None:
        raise not_found(entity, key)
    current = getattr(row, field) or 0
    new = current + sign * amount
    if no_overdraft and sign < 0 and new < 0:
        raise ToolFailure(
            "insufficient_funds",
            f"{entity} {str(key)[:80]!r} has {field} {current}, {amount} needed",
            409,
        )
    setattr(row, field, new)
    session.add(row)


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


# Punctuation around a query word is not part of it ("zebra?" finds "zebra").
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}<>"


def query_words(query: Any) -> list[str]:
    """The words (2+ characters, lower case, edge punctuation removed) a text query matches."""
    words = (w.strip(_EDGE_PUNCTUATION) for w in str(query).lower().split())
    return [w for w in words if len(w) >= 2]


def text_match(rows: list[Any], query: Any, fields: list[str]) -> list[Any]:
    """Rows where any query word (2+ characters) occurs, case-insensitively, in a text field."""
    if query is None:
        return rows
    words = query_words(query)
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

    def __init__(
        self, *, app: FastAPI, route: str, shape: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._app = app
        self._route = route
        self._shape = shape

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
        meta = None
        if self._shape:
            # The documented response's fields, from what the call touched (shapert). The
            # route's own fields the documented ones replaced stay in the result's _meta: the
            # bundle's validation reads the records there (an agent reads the documented ones).
            raw, data = data, shaped(data, arguments or {}, self._shape)
            if isinstance(raw, dict):
                lost = {k: v for k, v in raw.items() if not isinstance(data, dict) or
                        k not in data or data[k] != v}  # fmt: skip
                meta = {ROUTE_RESULT_META: lost} if lost else None
        if not isinstance(data, dict):
            # A documented scalar or list is answered as itself; structured content wraps it.
            text = data if isinstance(data, str) else json.dumps(data)
            return ToolResult(content=text, structured_content={"result": data}, meta=meta)
        return ToolResult(structured_content=data, meta=meta)


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
    app: FastAPI,
    name: str,
    routes: dict[str, str],
    certified: set[str] | None = None,
    shapes: dict[str, dict[str, Any]] | None = None,
) -> FastMCP:
    """The FastMCP server of `app`: one tool per spec tool that has a route (and is certified, when
    a certified set is given), with the spec's exact name, description and input schema; results
    of a tool in `shapes` are shaped like its documented response."""
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
                shape=(shapes or {}).get(tname),
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


# ---------------------------------------------------------------------------------------------
# Workspace tools with shell semantics (weft_envsynth.filesem assigns the verbs): paths are
# relative to the session's current directory, which lives in the session DB (table weft_cwd) so
# that snapshots, forks and restores carry it with the rest of the state.

_CWD_TABLE = "CREATE TABLE IF NOT EXISTS weft_cwd (id INTEGER PRIMARY KEY CHECK (id = 1), path TEXT NOT NULL)"


def _cwd_engine() -> sa.Engine:
    binding = current_binding()
    return engine_for(binding.db_path, binding.session_id)


def shell_cwd() -> Path:
    """The session's current directory (the workspace root until a navigate tool moves it)."""
    root = workspace_root().resolve()
    with _cwd_engine().begin() as conn:
        conn.exec_driver_sql(_CWD_TABLE)
        row = conn.exec_driver_sql("SELECT path FROM weft_cwd WHERE id = 1").fetchone()
    if row is None:
        return root
    try:
        cwd = resolve_in_workspace(root, str(row[0]))
    except WorkspaceEscapeError:
        return root
    return cwd if cwd.is_dir() else root


def _set_cwd(path: Path) -> None:
    rel = ws_rel(path)
    with _cwd_engine().begin() as conn:
        conn.exec_driver_sql(_CWD_TABLE)
        conn.exec_driver_sql(
            "INSERT INTO weft_cwd (id, path) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET path = excluded.path",
            (rel,),
        )


def _resolve(name: Any, *, base: Path | None = None) -> Path:
    if not isinstance(name, str) or not name.strip():
        raise ToolFailure("invalid_arguments", "a file or directory name is required")
    root = workspace_root().resolve()
    start = base or shell_cwd()
    rel = name if name.startswith("/") else (start.relative_to(root) / name).as_posix()
    return ws_path(rel if name.startswith("/") else "/" + rel)


def _file(name: Any) -> Path:
    path = _resolve(name)
    if not path.is_file():
        raise ToolFailure("not_found", f"no such file: {name}", 404)
    return path


def _read(name: Any) -> str:
    return _file(name).read_text(encoding="utf-8", errors="replace")


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} GB"


def shell(verb: str, a: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """Run one workspace verb with real semantics; the result carries the documented fields."""
    root = workspace_root().resolve()
    cwd = shell_cwd()
    value: Any = None
    extra: dict[str, Any] = {}
    if verb == "navigate":
        target = _resolve(a.get("path"))
        if not target.is_dir():
            raise ToolFailure("not_found", f"no such directory: {a.get('path')}", 404)
        _set_cwd(target)
        value = ws_rel(target)
    elif verb == "where":
        value = ws_rel(cwd)
    elif verb == "list":
        base = _resolve(a["path"]) if a.get("path") else cwd
        if not base.is_dir():
            raise ToolFailure("not_found", f"no such directory: {a.get('path')}", 404)
        names = sorted(p.name for p in base.iterdir())
        value = names if a.get("flag") else [n for n in names if not n.startswith(".")]
    elif verb == "read":
        value = _read(a.get("path"))
    elif verb in {"tail", "head"}:
        lines = _read(a.get("path")).splitlines()
        n = int(a.get("count") or 10)
        value = "\n".join(lines[-n:] if verb == "tail" else lines[:n])
    elif verb == "grep":
        pattern = str(a.get("pattern") or "")
        value = [line for line in _read(a.get("path")).splitlines() if pattern in line]
    elif verb == "sort":
        value = "\n".join(sorted(_read(a.get("path")).splitlines()))
    elif verb == "count":
        text = _read(a.get("path"))
        mode = str(a.get("mode") or "l").lower()[:1]
        value = {"w": len(text.split()), "c": len(text)}.get(mode, len(text.splitlines()))
        extra = {"mode": {"w": "words", "c": "characters"}.get(mode, "lines")}
    elif verb == "diff":
        import difflib

        left, right = _read(a.get("path")).splitlines(), _read(a.get("target")).splitlines()
        value = "\n".join(
            line for line in difflib.ndiff(left, right) if line.startswith(("- ", "+ "))
        )
    elif verb == "find":
        base = _resolve(a["path"]) if a.get("path") else cwd
        if not base.is_dir():
            raise ToolFailure("not_found", f"no such directory: {a.get('path')}", 404)
        needle = str(a.get("pattern") or "")
        value = sorted(
            "./" + p.relative_to(base).as_posix() for p in base.rglob("*") if needle in p.name
        )
    elif verb == "usage":
        n = _size(cwd)
        value = _human(n) if a.get("flag") else f"{n} bytes"
    elif verb == "write":
        content = a.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if a.get("path"):
            path = _resolve(a["path"])
            if path.is_dir():
                raise ToolFailure("invalid_path", f"{a['path']} is a directory")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            value = None
        else:
            value = text
    elif verb == "touch":
        path = _resolve(a.get("path"))
        if path.is_dir():
            raise ToolFailure("conflict", f"{a.get('path')} is a directory", 409)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    elif verb == "mkdir":
        path = _resolve(a.get("path"))
        if path.exists():
            raise ToolFailure("conflict", f"{a.get('path')} already exists", 409)
        path.mkdir(parents=True)
    elif verb in {"move", "copy"}:
        src = _resolve(a.get("path"))
        if not src.exists():
            raise ToolFailure("not_found", f"no such file or directory: {a.get('path')}", 404)
        dst = _resolve(a.get("target"))
        if dst.is_dir():
            dst = dst / src.name
        if dst.exists():
            raise ToolFailure("conflict", f"{ws_rel(dst)} already exists", 409)
        if src == root or src in dst.parents:
            raise ToolFailure("invalid_path", "cannot move or copy a directory into itself")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if verb == "move":
            shutil.move(str(src), str(dst))
        elif src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
        value = f"{'moved' if verb == 'move' else 'copied'} {ws_rel(src)} to {ws_rel(dst)}"
    elif verb in {"remove", "rmdir"}:
        path = _resolve(a.get("path"))
        if path in (root, cwd) or path in cwd.parents:
            raise ToolFailure(
                "invalid_path", "cannot remove the workspace root or the current directory"
            )
        if verb == "rmdir":
            if not path.is_dir():
                raise ToolFailure("not_found", f"no such directory: {a.get('path')}", 404)
            if any(path.iterdir()):
                raise ToolFailure("invalid_state", f"directory not empty: {a.get('path')}", 409)
            path.rmdir()
        elif path.is_dir():
            shutil.rmtree(path)
        elif path.is_file():
            path.unlink()
        else:
            raise ToolFailure("not_found", f"no such file or directory: {a.get('path')}", 404)
        value = f"removed {ws_rel(path)}"
    else:
        raise ToolFailure("unsupported", f"file verb {verb} is not supported", 501)
    return shape_result(value, extra, fields)


def shape_result(value: Any, extra: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """The primary value under the first documented field, known extras under fields named like
    them (e.g. a count's mode under 'type'), the rest of the documented fields as null."""
    if not fields:
        return {"result": value, **extra} if value is not None or extra else {}
    out: dict[str, Any] = {fields[0]: value}
    spare = list(extra.values())
    for f in fields[1:]:
        out[f] = extra.get(f, spare.pop(0) if spare else None)
    return out
