"""Registry caches: an exact version, the registered ids and stored snapshots are answered
without SQL; what another process sharing the DB may change is still asked of the DB."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from sqlalchemy import event

from weft_megamcp.exceptions import NotFoundError
from weft_megamcp.objectstore import ObjectStore
from weft_megamcp.registry import Registry


def _open(tmp_path: Path, name: str) -> Registry:
    store = ObjectStore(str(tmp_path / "objects"), tmp_path / f"cache-{name}")
    return Registry(f"sqlite:///{tmp_path / 'reg.sqlite'}", store, tmp_path / f"modules-{name}")


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    reg = _open(tmp_path, "a")
    yield reg
    reg.close()


class _Statements:
    """Counts the SQL statements an engine runs."""

    def __init__(self, registry: Registry) -> None:
        self.n = 0
        event.listen(registry.engine, "before_cursor_execute", self._count)

    def _count(self, *_: Any) -> None:
        self.n += 1


def _db(path: Path, value: int) -> Path:
    con = sqlite3.connect(path)
    con.execute("create table t (x)")
    con.execute("insert into t values (?)", (value,))
    con.commit()
    con.close()
    return path


async def test_an_exact_version_is_read_once(registry: Registry, bundle_dir: Path):
    rec = await registry.register(bundle_dir)
    sql = _Statements(registry)
    for _ in range(3):
        assert registry.get(rec.mcp_id, rec.version) == rec
    assert sql.n == 0
    registry.require_registered(rec.mcp_id)
    assert sql.n == 0
    assert registry.get(rec.mcp_id) == rec  # the latest: one query for its number, no row
    assert sql.n == 1
    assert registry.get(rec.mcp_id) == rec  # nothing committed since: no query at all
    assert sql.n == 1


async def test_a_record_a_caller_holds_cannot_be_changed(registry: Registry, bundle_dir: Path):
    rec = await registry.register(bundle_dir)
    with pytest.raises(pydantic.ValidationError):
        rec.name = "changed"  # type: ignore[misc]
    assert registry.get(rec.mcp_id, rec.version).name == rec.name


async def test_another_process_registering_is_seen(tmp_path: Path, bundle_dir: Path):
    """A miss and the latest version are still asked of the shared DB."""
    a, b = _open(tmp_path, "a"), _open(tmp_path, "b")
    try:
        with pytest.raises(NotFoundError):
            b.require_registered("notes")
        with pytest.raises(NotFoundError):
            b.get("notes", 1)
        v1 = await a.register(bundle_dir)
        b.require_registered(v1.mcp_id)
        assert b.get(v1.mcp_id, 1) == v1
        assert b.get(v1.mcp_id).version == 1  # b now remembers 1 as the latest
        (bundle_dir / "README.md").write_text("changed content, next version\n")
        v2 = await a.register(bundle_dir)
        assert v2.version == 2 and b.get(v1.mcp_id).version == 2
    finally:
        a.close()
        b.close()


async def test_a_stored_snapshot_is_stored_once(
    registry: Registry, bundle_dir: Path, tmp_path: Path
):
    rec = await registry.register(bundle_dir)
    db = _db(tmp_path / "one.sqlite", 1)
    first = registry.put_snapshot(rec.mcp_id, db)
    sql = _Statements(registry)
    again = registry.put_snapshot(rec.mcp_id, tmp_path / "one.sqlite")
    assert again == first and sql.n == 0
    other = registry.put_snapshot(rec.mcp_id, _db(tmp_path / "two.sqlite", 2))
    assert other.uri != first.uri and sql.n > 0
    assert registry.snapshot_file(other.uri)[1] == other.sha256
