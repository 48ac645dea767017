"""Route code a model wrote, run in a restricted namespace (copied verbatim by weft-envsynth).

A tool's route code is one function `route(args, db) -> dict` kept as text in the bundle
(`routes_code/`). It is checked before it is compiled and it runs with a closed set of builtins:
imports only from a small allowlist of pure modules (as proxies: a module an allowed module imports
is not reachable through it), no name or attribute that starts with an underscore, none of the
frame/code attributes that lead back to real globals, no `open`/`eval`/`getattr`/..., no bare
`except:`; execution stops after a time limit. The code reaches state only through `Tables` (rows
as dicts, keyed by table name); the route's changes are committed when it returns and rolled back
when it raises, so a failing call leaves no half-written state.
"""

from __future__ import annotations

import ast
import builtins
import datetime
import gc
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import configure_mappers
from sqlmodel import Session, SQLModel, select

from .runtime import ToolFailure, row_dict

# Pure modules only. Not `string` (Formatter.get_field reads any attribute path, underscores
# included) nor `functools`/`operator` (update_wrapper and attrgetter read attributes by name).
ALLOWED_IMPORTS = frozenset(
    {"collections", "datetime", "decimal", "itertools", "json", "math", "re", "statistics"}
)
# Attributes that lead from an ordinary object back to frames, code or real module globals.
_DENIED_ATTRIBUTES = frozenset(
    {
        "ag_code",
        "ag_frame",
        "cr_code",
        "cr_frame",
        "f_back",
        "f_builtins",
        "f_code",
        "f_globals",
        "f_locals",
        "format",
        "format_map",
        "gi_code",
        "gi_frame",
        "gi_yieldfrom",
        "mro",
        "tb_frame",
        "tb_next",
    }
)
_SAFE_BUILTINS = [
    "abs",
    "all",
    "any",
    "bool",
    "bytes",
    "callable",
    "chr",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "hash",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "ord",
    "pow",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ArithmeticError",
    "AssertionError",
    "Exception",
    "IndexError",
    "KeyError",
    "LookupError",
    "NotImplementedError",
    "OverflowError",
    "RuntimeError",
    "StopIteration",
    "TypeError",
    "ValueError",
    "ZeroDivisionError",
]
MAX_RANGE = 1_000_000
DEFAULT_TIME_LIMIT_S = 2.0


class CodeRefused(ValueError):
    """Route code that is not loaded: the message names the tool, the rule and the line."""


class RouteTimeout(BaseException):
    """Raised inside route code past its time limit (a BaseException: `except Exception` in the
    code cannot swallow it)."""


def _refusal(tree: ast.AST) -> tuple[int, str] | None:
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_IMPORTS:
                    return line, f"import of {alias.name!r} is not allowed"
        elif isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "") not in ALLOWED_IMPORTS:
                return line, f"import from {node.module or '.'!r} is not allowed"
            for alias in node.names:
                if alias.name == "*" or alias.name.startswith("_"):
                    return line, f"import of {alias.name!r} from {node.module!r} is not allowed"
        elif isinstance(node, ast.Attribute) and (
            node.attr.startswith("_") or node.attr in _DENIED_ATTRIBUTES
        ):
            return line, f"attribute {node.attr!r} is not allowed"
        elif isinstance(node, ast.MatchClass) and any(
            a.startswith("_") or a in _DENIED_ATTRIBUTES for a in node.kwd_attrs
        ):
            # `case Exception(__traceback__=tb)` reads an attribute without an ast.Attribute
            return line, "a class pattern on a private attribute is not allowed"
        elif isinstance(node, ast.Name) and node.id.startswith("__"):
            return line, f"name {node.id!r} is not allowed"
        elif isinstance(node, ast.ExceptHandler) and node.type is None:
            return line, "a bare 'except:' is not allowed (catch Exception)"
        elif isinstance(node, ast.Global | ast.Nonlocal):
            return line, "global and nonlocal are not allowed"
        elif isinstance(node, ast.AsyncFunctionDef | ast.Await | ast.AsyncFor | ast.AsyncWith):
            return line, "async code is not allowed"
    return None


class _ModuleProxy:
    """The public, non-module attributes of an allowed module (`json.codecs` is not reachable)."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if name.startswith("_") or isinstance(value, types.ModuleType):
            raise AttributeError(f"module {self._module.__name__!r} has no attribute {name!r}")
        return value


def _import(
    name: str,
    globals: Any = None,
    locals: Any = None,
    fromlist: Any = (),
    level: int = 0,
) -> Any:
    if level or name not in ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed")
    return _ModuleProxy(__import__(name))


def _range(*args: int) -> range:
    r = range(*args)
    if len(r) > MAX_RANGE:
        raise ValueError(f"range of {len(r)} items is more than {MAX_RANGE}")
    return r


def fail(code: str, message: str, status: int = 400) -> None:
    """Refuse the call: an MCP error whose text starts with `code`."""
    raise ToolFailure(str(code), str(message)[:200], status)


def _namespace() -> dict[str, Any]:
    safe = {name: getattr(builtins, name) for name in _SAFE_BUILTINS}
    safe["range"] = _range
    safe["__import__"] = _import
    return {"__builtins__": safe, "__name__": "route_code", "fail": fail}


def load_route(tool: str, source: str) -> Callable[..., Any]:
    """Check and compile `source`; its `route(args, db)`. Raises CodeRefused naming the tool."""
    filename = f"<route code of {tool}>"
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise CodeRefused(
            f"{tool}: route code refused: syntax error at line {exc.lineno}: {exc.msg}"
        ) from None
    found = _refusal(tree)
    if found is not None:
        raise CodeRefused(f"{tool}: route code refused at line {found[0]}: {found[1]}")
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "route"), None)
    if fn is None or len(fn.args.args) != 2:
        raise CodeRefused(f"{tool}: route code refused: it defines no function route(args, db)")
    for node in tree.body:
        if not isinstance(
            node, ast.FunctionDef | ast.Import | ast.ImportFrom | ast.Assign | ast.Expr
        ) or (isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant)):
            raise CodeRefused(
                f"{tool}: route code refused at line {node.lineno}: only imports, constants and "
                "functions may be at the top level"
            )
    namespace = _namespace()
    try:
        exec(compile(tree, filename, "exec"), namespace)  # the checked tree, restricted builtins
    except Exception as exc:
        raise CodeRefused(
            f"{tool}: route code refused: loading it raised {type(exc).__name__}: {exc}"
        ) from None
    route = namespace.get("route")
    if not callable(route):
        raise CodeRefused(f"{tool}: route code refused: `route` is not a function")
    route.source_lines = source.splitlines()
    return route  # type: ignore[no-any-return]


def _time_limit() -> float:
    try:
        return max(0.01, float(os.environ.get("WEFT_ENVSYNTH_CODE_TIME_LIMIT_S", "")))
    except ValueError:
        return DEFAULT_TIME_LIMIT_S


def _where(exc: BaseException, filename: str, lines: list[str]) -> str:
    """' at line N `source`' of the deepest frame of the route code in the traceback."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            found = tb.tb_lineno
        tb = tb.tb_next
    if found is None:
        return ""
    text = lines[found - 1].strip() if 0 < found <= len(lines) else ""
    return f" at line {found} `{text[:80]}`"


class Tables:
    """What route code sees of the session DB: rows as dicts, by table name."""

    __slots__ = ("_classes", "_session")

    def __init__(self, session: Session, models: types.ModuleType) -> None:
        self._session = session
        self._classes: dict[str, type[SQLModel]] = {
            cls.__tablename__: cls  # type: ignore[misc]
            for cls in vars(models).values()
            if isinstance(cls, type) and issubclass(cls, SQLModel) and hasattr(cls, "__table__")
        }

    def _cls(self, table: str) -> type[SQLModel]:
        cls = self._classes.get(table)
        if cls is None:
            raise KeyError(f"no table {table!r}; tables: {sorted(self._classes)}")
        return cls

    def _key(self, table: str) -> str:
        return str(self._cls(table).__table__.primary_key.columns.keys()[0])  # type: ignore[attr-defined]

    def _columns(self, table: str, values: dict[str, Any]) -> None:
        cols = set(self._cls(table).__table__.columns.keys())  # type: ignore[attr-defined]
        unknown = sorted(set(values) - cols)
        if unknown:
            raise KeyError(f"table {table!r} has no column {unknown[0]!r}")

    def tables(self) -> list[str]:
        return sorted(self._classes)

    def key_of(self, table: str) -> str:
        """The primary-key column of `table`."""
        return self._key(table)

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        row = self._session.get(self._cls(table), key)
        return row_dict(row) if row is not None else None

    def rows(self, table: str, **equals: Any) -> list[dict[str, Any]]:
        """Rows whose columns equal the given values, in key order."""
        cls = self._cls(table)
        self._columns(table, equals)
        stmt = select(cls)
        for col, value in equals.items():
            stmt = stmt.where(getattr(cls, col) == value)
        stmt = stmt.order_by(getattr(cls, self._key(table)))
        return [row_dict(r) for r in self._session.exec(stmt).all()]

    def new_key(self, table: str) -> Any:
        """The next free key: PREFIX-0001 style for text keys, max + 1 for integer keys."""
        rows = self.rows(table)
        key = self._key(table)
        ints = [r[key] for r in rows if isinstance(r[key], int)]
        if ints or not rows:
            column = self._cls(table).__table__.columns[key]  # type: ignore[attr-defined]
            if ints or column.type.python_type is int:
                return max(ints, default=0) + 1
        prefix = table[:3].upper()
        n = len(rows) + 1
        taken = {r[key] for r in rows}
        while f"{prefix}-{n:04d}" in taken:
            n += 1
        return f"{prefix}-{n:04d}"

    def insert(self, table: str, values: dict[str, Any]) -> dict[str, Any]:
        """Insert one row (the key is `new_key` when not given); the stored row."""
        self._columns(table, values)
        key = self._key(table)
        values = dict(values)
        if values.get(key) is None:
            values[key] = self.new_key(table)
        row = self._cls(table)(**values)
        self._session.add(row)
        self._session.flush()
        return row_dict(row)

    def update(self, table: str, key: Any, values: dict[str, Any]) -> dict[str, Any]:
        """Set columns of the row with `key`; the stored row (KeyError when there is none)."""
        self._columns(table, values)
        row = self._session.get(self._cls(table), key)
        if row is None:
            raise KeyError(f"no {table} row with key {key!r}")
        for col, value in values.items():
            setattr(row, col, value)
        self._session.add(row)
        self._session.flush()
        return row_dict(row)

    def delete(self, table: str, key: Any) -> bool:
        """Delete the row with `key`; False when there was none."""
        row = self._session.get(self._cls(table), key)
        if row is None:
            return False
        self._session.delete(row)
        self._session.flush()
        return True


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def run_route(
    route: Callable[..., Any], args: dict[str, Any], session: Session, models: types.ModuleType
) -> dict[str, Any]:
    """Run route code on one call: a time limit, one transaction, errors that say where."""
    code = route.__code__
    filename = code.co_filename
    lines: list[str] = getattr(route, "source_lines", [])
    # The limit is on the thread's CPU time, so a starved process (a loaded machine) does not
    # fail correct code; a wall-clock backstop catches code that only waits.
    limit = _time_limit()
    db = Tables(session, models)
    configure_mappers()  # a new bundle's first query configures its classes: not the code's time
    cpu_deadline = time.thread_time() + limit
    wall_deadline = time.monotonic() + max(10 * limit, 30.0)
    # A full garbage collection of a large host process (0.6 s measured in a test process) runs
    # in whichever thread allocates: it is the host's time, not the code's.
    thread, gc_spent, gc_started = threading.get_ident(), [0.0], [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() != thread:
            return
        if phase == "start":
            gc_started[0] = time.thread_time()
        else:
            gc_spent[0] += time.thread_time() - gc_started[0]

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        if time.thread_time() - gc_spent[0] > cpu_deadline or time.monotonic() > wall_deadline:
            raise RouteTimeout
        return local

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == filename else None

    previous = sys.gettrace()
    gc.callbacks.append(on_gc)
    sys.settrace(calls)
    try:
        result = route(dict(args), db)
    except RouteTimeout as exc:
        session.rollback()
        raise ToolFailure(
            "internal_error",
            f"route code ran past its {limit:g} s time limit" + _where(exc, filename, lines),
            500,
        ) from None
    except (ToolFailure, SQLAlchemyError):
        session.rollback()
        raise
    except Exception as exc:
        session.rollback()
        raise ToolFailure(
            "internal_error",
            f"route code failed{_where(exc, filename, lines)}: {type(exc).__name__}: "
            f"{str(exc)[:160]}",
            500,
        ) from None
    finally:
        sys.settrace(previous)
        gc.callbacks.remove(on_gc)
    if not isinstance(result, dict):
        session.rollback()
        raise ToolFailure(
            "internal_error", f"route code returned {type(result).__name__}, not a dict", 500
        )
    session.commit()
    return _jsonable(result)  # type: ignore[no-any-return]
