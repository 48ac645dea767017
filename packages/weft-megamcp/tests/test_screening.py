"""Screening of server modules: clean bundles share a process, side effects force a dedicated tier."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from weft_megamcp.screening import (
    IsolationTier,
    LoadClass,
    ScreenError,
    ScreeningSettings,
    Severity,
    main_inspect,
    render_inspect,
    screen_command,
    screen_path,
    screen_source,
)

GOOD_SERVER = """
from __future__ import annotations

from pathlib import Path

from fastmcp import FastMCP
from sqlalchemy.pool import NullPool
from sqlmodel import Session, create_engine, select
from weft_core.binding import current_binding, register_release_hook, resolve_in_workspace

from .models import Item

_engines: dict[str, object] = {}
DEFAULT_LIMIT = 20


def _engine():
    b = current_binding()
    key = str(b.db_path)
    if key not in _engines:
        _engines[key] = create_engine(f"sqlite:///{b.db_path}", poolclass=NullPool)
    return _engines[key]


def _release(session_id: str) -> None:
    for key in list(_engines):
        _engines.pop(key).dispose()


register_release_hook(_release)


def create_server() -> FastMCP:
    mcp = FastMCP("items")

    @mcp.tool
    def add_item(name: str) -> dict:
        with Session(_engine()) as s:
            item = Item(name=name)
            s.add(item)
            s.commit()
            return {"id": item.id}

    @mcp.tool
    def write_note(path: str, text: str) -> str:
        target = resolve_in_workspace(current_binding().workspace, path)
        with open(target, "w") as fh:
            fh.write(text)
        return "ok"

    @mcp.tool
    def list_items(limit: int = DEFAULT_LIMIT) -> list[str]:
        rows: list[str] = []
        with Session(_engine()) as s:
            for item in s.exec(select(Item).limit(limit)):
                rows.append(item.name)
        return rows

    return mcp
"""

GOOD_MODELS = """
from sqlmodel import Field, SQLModel


class Item(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str
"""


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def _rules(source: str) -> dict[str, Severity]:
    return {f.rule: f.severity for f in screen_source(textwrap.dedent(source), "m.py")}


def test_clean_bundle_shares_a_process(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    _write(bundle, "__init__.py", "")
    _write(bundle, "models.py", GOOD_MODELS)
    _write(bundle, "server.py", GOOD_SERVER)
    # migrations are never loaded by the host, so their side effects do not count
    _write(bundle, "migrations/env.py", "import os\nos.chdir('/tmp')\n")

    report = screen_path(bundle, ScreeningSettings(shared_cap=50))

    assert report.load_class is LoadClass.SHARED
    assert report.tier is IsolationTier.SHARED_PROCESS
    assert report.cap == 50
    assert sorted(report.files) == ["__init__.py", "models.py", "server.py"]
    assert [f.rule for f in report.findings] == ["session-cache", "session-cache"]
    assert all(f.severity is Severity.INFO for f in report.findings)


def test_module_state_written_by_tool_is_dedicated(tmp_path: Path) -> None:
    server = _write(
        tmp_path,
        "leaky.py",
        """
        from fastmcp import FastMCP

        mcp = FastMCP("leaky")
        CART = []
        COUNTER = 0

        @mcp.tool
        def add(item: str) -> int:
            CART.append(item)
            return len(CART)

        @mcp.tool
        def bump() -> int:
            global COUNTER
            COUNTER += 1
            return COUNTER
        """,
    )
    report = screen_path(server)
    rules = {(f.rule, f.line) for f in report.findings}
    assert ("module-state-write", 10) in rules
    assert ("global-write", 14) in rules
    assert report.load_class is LoadClass.DEDICATED
    assert report.cap == 1
    assert report.tier is IsolationTier.DEDICATED_PROCESS
    assert "global-write" in report.reasons[0] and "module-state-write" in report.reasons[0]
    snippet = next(f.snippet for f in report.findings if f.rule == "module-state-write")
    assert snippet == "CART.append(item)"


def test_closure_state_in_server_factory_is_caught() -> None:
    rules = _rules(
        """
        from fastmcp import FastMCP

        def create_server():
            mcp = FastMCP("x")
            seen = {}
            total = 0

            @mcp.tool
            def remember(k: str, v: str) -> None:
                seen[k] = v

            @mcp.tool
            def inc() -> int:
                nonlocal total
                total += 1
                return total

            return mcp
        """
    )
    assert rules["closure-state-write"] is Severity.ERROR


def test_state_of_a_helper_called_per_request_is_not_shared() -> None:
    # The owner of the closure state is not a server factory (it registers nothing), so its
    # locals are fresh on every call: nested writes to them share nothing between sessions.
    assert (
        _rules(
            """
        from fastmcp import FastMCP

        mcp = FastMCP("x")

        def summarize(items: list[int], labels: dict[str, str]) -> dict[str, int]:
            total = 0
            seen = {}
            unit = labels.get("unit", "")  # a dict's get is no route registration

            def add(x: int) -> None:
                nonlocal total
                total += x
                seen[x] = seen.get(x, 0) + 1

            for i in items:
                add(i)
            return {"total": total, "distinct": len(seen), "unit": len(unit)}

        @mcp.tool
        def stats(items: list[int]) -> dict[str, int]:
            counts = []

            def note(n: int) -> None:
                counts.append(n)

            note(len(items))
            return summarize(items, {})
        """
        )
        == {}
    )


def test_factory_registering_tools_by_call_is_still_a_factory() -> None:
    rules = _rules(
        """
        from fastmcp import FastMCP

        def create_server():
            mcp = FastMCP("x")
            hits = 0

            def hit() -> int:
                nonlocal hits
                hits += 1
                return hits

            mcp.add_tool(hit)
            return mcp
        """
    )
    assert rules["closure-state-write"] is Severity.ERROR


def test_local_containers_are_not_findings() -> None:
    assert (
        _rules(
            """
        def tool(items: list[str]) -> list[str]:
            out = []
            seen = set()
            for i in items:
                seen.add(i)
                out.append(i)
            items.append("x")  # the caller's list, not shared state
            return out
        """
        )
        == {}
    )


@pytest.mark.parametrize(
    ("source", "rule", "severity"),
    [
        ("import os\ndef f():\n    os.environ['A'] = '1'\n", "environ-write", Severity.ERROR),
        (
            "from os import environ\ndef f():\n    environ.update(A='1')\n",
            "environ-write",
            Severity.ERROR,
        ),
        ("import os as o\ndef f(p):\n    o.chdir(p)\n", "chdir", Severity.ERROR),
        ("import sys\nsys.path.insert(0, 'x')\n", "sys-path", Severity.ERROR),
        ("import sys\ndef f(m):\n    sys.modules['m'] = m\n", "sys-modules", Severity.ERROR),
        ("import signal\nsignal.signal(2, print)\n", "signal-handler", Severity.ERROR),
        ("import atexit\natexit.register(print)\n", "atexit", Severity.WARNING),
        (
            "import threading\ndef f():\n    threading.Thread(target=f).start()\n",
            "threads",
            Severity.WARNING,
        ),
        (
            "import subprocess\ndef f():\n    subprocess.run(['ls'])\n",
            "subprocess",
            Severity.WARNING,
        ),
        (
            "import multiprocessing\ndef f():\n    multiprocessing.Pool(2)\n",
            "multiprocessing",
            Severity.ERROR,
        ),
        (
            "from functools import lru_cache\n@lru_cache\ndef f(x):\n    return x\n",
            "global-cache",
            Severity.WARNING,
        ),
        ("def f():\n    return open('/etc/app/data.json').read()\n", "fixed-path", Severity.ERROR),
        ("def f():\n    return open('data.json').read()\n", "fixed-path", Severity.ERROR),
        (
            "import sqlite3\ndef f():\n    return sqlite3.connect('/var/app.db')\n",
            "fixed-path",
            Severity.ERROR,
        ),
        (
            "from sqlmodel import create_engine\nE = create_engine('sqlite:////srv/app.db')\n",
            "fixed-path",
            Severity.ERROR,
        ),
        ("DB = '/srv/data/app.sqlite'\n", "fixed-path", Severity.ERROR),
        ("def f(p):\n    return open(p).read()\n", "unbound-open", Severity.WARNING),
        ("import logging\nlogging.basicConfig(level=10)\n", "process-setting", Severity.WARNING),
        ("def f(x=[]):\n    return x\n", "mutable-default", Severity.WARNING),
        (
            "import json\ndef f():\n    json.dumps = None\n",
            "module-attribute-write",
            Severity.ERROR,
        ),
    ],
)
def test_rules(source: str, rule: str, severity: Severity) -> None:
    assert _rules(source).get(rule) is severity, _rules(source)


def test_memory_sqlite_and_binding_paths_are_fine() -> None:
    assert (
        _rules(
            """
        import sqlite3
        from weft_core.binding import current_binding

        def f():
            a = sqlite3.connect(':memory:')
            b = sqlite3.connect(current_binding().db_path)
            with open(current_binding().workspace / 'x') as fh:
                return fh.read()
        """
        )
        == {}
    )


def test_warnings_give_limited_class(tmp_path: Path) -> None:
    server = _write(tmp_path, "s.py", "import threading\ndef f():\n    threading.Timer(1, f)\n")
    report = screen_path(server, ScreeningSettings(limited_cap=3))
    assert report.load_class is LoadClass.LIMITED
    assert report.cap == 3
    assert report.tier is IsolationTier.SHARED_PROCESS


def test_syntax_error_and_bad_paths(tmp_path: Path) -> None:
    broken = _write(tmp_path, "broken.py", "def f(:\n    pass\n")
    report = screen_path(broken)
    assert report.findings[0].rule == "syntax-error"
    assert report.tier is IsolationTier.DEDICATED_PROCESS

    with pytest.raises(ScreenError, match="no such file"):
        screen_path(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScreenError, match=r"no \.py files"):
        screen_path(tmp_path / "empty")
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(ScreenError, match=r"not a \.py file"):
        screen_path(tmp_path / "x.txt")


def test_undecodable_file_is_an_error_finding(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_bytes(b"\xff\xfe\x00garbage")
    report = screen_path(tmp_path / "pkg")
    assert report.findings[0].rule == "unreadable"
    assert report.load_class is LoadClass.DEDICATED


def test_command_servers_are_dedicated() -> None:
    report = screen_command(["npx", "-y", "@mcp/server-fs"])
    assert report.tier is IsolationTier.DEDICATED_PROCESS
    assert report.cap == 1
    assert "command-based" in report.reasons[0]


def test_render_and_main_inspect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = _write(tmp_path, "s.py", "import os\ndef f():\n    os.environ['X'] = 'y'\n")
    text = render_inspect(screen_path(server))
    assert "tier:       dedicated_process" in text
    assert "environ-write" in text and "s.py:3" in text
    assert main_inspect(server) == 1
    assert "dedicated" in capsys.readouterr().out
    good = _write(tmp_path, "g.py", "def f(x: int) -> int:\n    return x + 1\n")
    assert main_inspect(good, as_json=True) == 0
    assert '"load_class": "shared"' in capsys.readouterr().out


def test_release_hook_only_excuses_the_caches_it_empties(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    _write(
        pkg,
        "runtime.py",
        """
        _engines = {}
        _last_query = {}

        def engine_for(key):
            _engines[key] = object()
            _last_query["q"] = key  # not released: leaks the previous session's query
            return _engines[key]

        def release(session_id):
            _engines.pop(session_id, None)
        """,
    )
    # registered from another module of the package, as EnvBundles do
    _write(
        pkg,
        "server.py",
        """
        from weft_core.binding import register_release_hook
        from . import runtime

        def create_server():
            register_release_hook(runtime.release)
        """,
    )
    report = screen_path(pkg)
    by_rule = {(f.rule, f.snippet.split("[")[0]) for f in report.findings}
    assert ("session-cache", "_engines") in by_rule
    assert ("module-state-write", "_last_query") in by_rule
    assert report.load_class is LoadClass.DEDICATED
