"""Reading a session DB during validation: cached reads see every change, from any writer."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from weft_core.models import Entity, EntityField, EntityModel
from weft_envsynth._internal.dbstate import DbReader, read_db

MODEL = EntityModel(
    mcp="tickets",
    entities=[
        Entity(
            name="ticket",
            key="id",
            fields=[
                EntityField(name="id", type="integer"),
                EntityField(name="title", type="string"),
                EntityField(name="open", type="boolean"),
            ],
        )
    ],
)


def _db(path: Path, rows: list[tuple[int, str, int]]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ticket (id INTEGER PRIMARY KEY, title TEXT, open INTEGER)")
    conn.executemany("INSERT INTO ticket VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def test_a_commit_by_another_connection_is_seen_by_the_next_read(tmp_path: Path) -> None:
    db = _db(tmp_path / "s.sqlite", [(1, "a", 1)])
    reader = DbReader(db, MODEL)
    try:
        assert reader.read() == {"ticket": {1: {"id": 1, "title": "a", "open": True}}}
        writer = sqlite3.connect(db)
        # Several commits within one clock tick: size and mtime may not move, data_version does.
        for i in range(2, 6):
            writer.execute("UPDATE ticket SET title = ? WHERE id = 1", (f"v{i}",))
            writer.commit()
            assert reader.read()["ticket"][1]["title"] == f"v{i}"
        writer.execute("DELETE FROM ticket")
        writer.commit()
        writer.close()
        assert reader.read() == {"ticket": {}}
        assert reader.read() == read_db(db, MODEL)
    finally:
        reader.close()


def test_a_replaced_file_is_read_afresh(tmp_path: Path) -> None:
    db = _db(tmp_path / "s.sqlite", [(1, "a", 1)])
    other = _db(tmp_path / "o.sqlite", [(7, "seven", 0)])
    reader = DbReader(db, MODEL)
    try:
        assert set(reader.read()["ticket"]) == {1}
        os.replace(other, db)  # a new inode under the same name
        assert reader.read() == {"ticket": {7: {"id": 7, "title": "seven", "open": False}}}
        third = _db(tmp_path / "t.sqlite", [(9, "nine " * 2000, 1)])
        shutil.copyfile(third, db)  # the same inode, rewritten outside SQLite
        assert set(reader.read()["ticket"]) == {9}
    finally:
        reader.close()


def test_an_unchanged_db_is_not_read_again_and_a_caller_s_change_is_caught(
    tmp_path: Path,
) -> None:
    db = _db(tmp_path / "s.sqlite", [(1, "a", 1)])
    reader = DbReader(db, MODEL, verify=True)
    try:
        first = reader.read()
        assert reader.read() is first  # shared: nothing changed
        first["ticket"][1]["title"] = "scribbled"
        with pytest.raises(RuntimeError, match="changed by a caller"):
            reader.read()
    finally:
        reader.close()
