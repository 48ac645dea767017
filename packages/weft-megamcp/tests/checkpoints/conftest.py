from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from weft_megamcp.checkpoints import CheckpointStore


# The S3 runs start a server subprocess and go over HTTP: `slow` (600 s) on a loaded machine.
@pytest.fixture(params=["local", "memory", pytest.param("s3", marks=pytest.mark.slow)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CheckpointStore]:
    """Every store test runs on a local folder, fsspec's memory filesystem and a real S3
    server over HTTP (moto's, see the package conftest: skipped when moto is missing)."""
    if request.param == "local":
        yield CheckpointStore(tmp_path / "objects")
    elif request.param == "s3":
        bucket = request.getfixturevalue("s3_bucket")
        yield CheckpointStore(f"s3://{bucket}/checkpoints", skip_instance_cache=True)
    else:
        root = f"memory://ckpt-{uuid.uuid4().hex}"
        yield CheckpointStore(root)
        fsspec.filesystem("memory").rm(root.removeprefix("memory://"), recursive=True)


def make_db(path: Path, rows: int = 0) -> Path:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE IF NOT EXISTS item (id INTEGER PRIMARY KEY, name TEXT)")
    con.executemany("INSERT INTO item (name) VALUES (?)", [(f"n{i}",) for i in range(rows)])
    con.commit()
    con.close()
    return path


def row_ids(path: Path) -> list[int]:
    con = sqlite3.connect(path)
    try:
        return [r[0] for r in con.execute("SELECT id FROM item ORDER BY id")]
    finally:
        con.close()
