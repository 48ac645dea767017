from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from weft_core.exceptions import UserError
from weft_core.state import DBState, StateError, capture_db, diff_db


def make_db(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


SCHEMA = """
CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, balance REAL);
CREATE TABLE order_line (order_id INTEGER, line INTEGER, sku TEXT, qty INTEGER,
                         PRIMARY KEY (order_id, line));
CREATE TABLE event_log (kind TEXT, payload TEXT);
CREATE TABLE setting (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
CREATE TABLE attachment (id INTEGER PRIMARY KEY, data BLOB);
CREATE TABLE alembic_version (version_num TEXT);
INSERT INTO alembic_version VALUES ('abc123');
INSERT INTO customer VALUES (1, 'Ada', 'ada@example.com', 10.5), (2, 'Bob', NULL, 0);
INSERT INTO order_line VALUES (7, 1, 'SKU-1', 2), (7, 2, 'SKU-2', 1);
INSERT INTO event_log VALUES ('login', '{"user": 1}'), ('login', '{"user": 1}');
INSERT INTO setting VALUES ('tz', 'UTC');
"""


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    db = make_db(tmp_path / "seed.sqlite", SCHEMA)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO attachment VALUES (1, ?), (2, ?)", (b"\x00\x01", b"x" * 100))
    conn.commit()
    conn.close()
    return db


def test_capture_keys_every_kind_of_table(seed: Path) -> None:
    state = capture_db(seed)
    assert state.table_names == ["attachment", "customer", "event_log", "order_line", "setting"]
    assert state["customer"]["1"] == {
        "id": 1,
        "name": "Ada",
        "email": "ada@example.com",
        "balance": 10.5,
    }
    assert state["customer"]["2"]["email"] is None
    assert set(state["order_line"]) == {"[7,1]", "[7,2]"}
    # Identical rows without a primary key stay distinct through their rowids.
    assert set(state["event_log"]) == {"1", "2"}
    assert state.schemas["event_log"].primary_key == []
    assert state["setting"] == {"tz": {"k": "tz", "v": "UTC"}}
    assert state.schemas["order_line"].primary_key == ["order_id", "line"]
    assert state.summary() == {
        "attachment": 2,
        "customer": 2,
        "event_log": 2,
        "order_line": 2,
        "setting": 1,
    }


def test_blobs_small_as_hex_large_as_sha256(seed: Path) -> None:
    rows = capture_db(seed)["attachment"]
    assert rows["1"]["data"] == "hex:0001"
    assert rows["2"]["data"] == "sha256:" + hashlib.sha256(b"x" * 100).hexdigest()


def test_capture_never_modifies_the_file(seed: Path) -> None:
    before = seed.read_bytes()
    mtime = seed.stat().st_mtime_ns
    capture_db(seed)
    capture_db(seed, immutable=True)
    assert seed.read_bytes() == before
    assert seed.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in seed.parent.iterdir()) == ["seed.sqlite"]


def test_capture_works_on_a_read_only_file(seed: Path) -> None:
    seed.chmod(0o444)
    try:
        assert capture_db(seed).summary()["customer"] == 2
    finally:
        seed.chmod(0o644)


def test_capture_sees_committed_wal_changes_of_a_live_db(tmp_path: Path) -> None:
    db = tmp_path / "live.sqlite"
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    writer.execute("INSERT INTO t VALUES (1, 'a')")
    writer.commit()
    writer.execute("INSERT INTO t VALUES (2, 'uncommitted')")  # open transaction
    try:
        assert capture_db(db)["t"] == {"1": {"id": 1, "v": "a"}}
    finally:
        writer.rollback()
        writer.close()


def test_path_with_uri_special_characters(tmp_path: Path) -> None:
    db = make_db(tmp_path / "we?ird #name%.sqlite", "CREATE TABLE t (id INTEGER PRIMARY KEY);")
    assert capture_db(db).summary() == {"t": 0}


def test_missing_file_is_a_user_error_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    with pytest.raises(StateError, match="no such SQLite file") as info:
        capture_db(missing)
    assert isinstance(info.value, UserError)
    assert not missing.exists()


def test_not_a_database(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.sqlite"
    bogus.write_text("this is not sqlite " * 100)
    with pytest.raises(StateError, match="not a readable SQLite database"):
        capture_db(bogus)


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="not a file"):
        capture_db(tmp_path)


def test_null_in_text_primary_key_falls_back_to_rowid(tmp_path: Path) -> None:
    db = make_db(
        tmp_path / "n.sqlite",
        "CREATE TABLE t (code TEXT PRIMARY KEY, v INT); INSERT INTO t VALUES (NULL, 1), (NULL, 2), ('a', 3);",
    )
    assert set(capture_db(db)["t"]) == {"rowid:1", "rowid:2", "a"}


def test_diff_inserts_updates_deletes(seed: Path, tmp_path: Path) -> None:
    final = tmp_path / "final.sqlite"
    shutil.copy(seed, final)
    make_db(
        final,
        """
        UPDATE customer SET email = 'bob@example.com', balance = 5 WHERE id = 2;
        INSERT INTO customer VALUES (3, 'Cy', 'cy@example.com', 0);
        DELETE FROM order_line WHERE line = 2;
        UPDATE setting SET v = 'CET';
        DELETE FROM event_log WHERE rowid = 2;
        UPDATE alembic_version SET version_num = 'def456';
        """,
    )
    diff = diff_db(capture_db(seed), capture_db(final))
    assert diff.summary() == {
        "customer": {"inserts": 1, "updates": 1, "deletes": 0},
        "event_log": {"inserts": 0, "updates": 0, "deletes": 1},
        "order_line": {"inserts": 0, "updates": 0, "deletes": 1},
        "setting": {"inserts": 0, "updates": 1, "deletes": 0},
    }
    upd = diff.tables["customer"].updates["2"]
    assert {k: (c.old, c.new) for k, c in upd.changed.items()} == {
        "email": (None, "bob@example.com"),
        "balance": (0.0, 5.0),
    }
    assert upd.old["name"] == upd.new["name"] == "Bob"
    assert diff.tables["customer"].inserts["3"]["name"] == "Cy"
    assert diff.tables["order_line"].deletes == {
        "[7,2]": {"order_id": 7, "line": 2, "sku": "SKU-2", "qty": 1}
    }
    assert not diff.empty


def test_diff_of_identical_states_is_empty(seed: Path) -> None:
    diff = diff_db(capture_db(seed), capture_db(seed))
    assert diff.empty
    assert diff.summary() == {}
    assert diff.table("customer").empty


def test_diff_tables_added_removed_and_new_columns() -> None:
    initial = DBState(tables={"old": {"1": {"id": 1}}, "t": {"1": {"id": 1}}})
    final = DBState(tables={"new": {"a": {"k": "a"}}, "t": {"1": {"id": 1, "note": "x"}}})
    diff = diff_db(initial, final)
    assert diff.tables_added == ["new"]
    assert diff.tables_removed == ["old"]
    assert diff.tables["new"].inserts == {"a": {"k": "a"}}
    assert diff.tables["old"].deletes == {"1": {"id": 1}}
    change = diff.tables["t"].updates["1"].changed["note"]
    assert (change.old, change.new) == (None, "x")


def test_state_round_trips_through_json(seed: Path) -> None:
    state = capture_db(seed)
    assert DBState.model_validate_json(state.model_dump_json()) == state


def test_diff_nested_values_and_numeric_spelling() -> None:
    initial = DBState(tables={"t": {"1": {"id": 1, "meta": {"a": [1, 2]}, "n": 1}}})
    same = DBState(tables={"t": {"1": {"id": 1, "meta": {"a": [1, 2]}, "n": 1.0}}})
    assert diff_db(initial, same).empty  # INTEGER 1 read back as REAL 1.0 is the same value
    changed = DBState(tables={"t": {"1": {"id": 1, "meta": {"a": [1, 3]}, "n": 1}}})
    upd = diff_db(initial, changed).tables["t"].updates["1"]
    assert list(upd.changed) == ["meta"]
    assert upd.changed["meta"].new == {"a": [1, 3]}


def test_importing_the_state_and_checks_loads_no_deepdiff() -> None:
    # Every serving process imports these; DeepDiff (and numpy under it) loads only when a
    # nested value is diffed, as in the test above.
    import subprocess
    import sys

    code = (
        "import sys, weft_core.state, weft_core.checks; "
        "print(sorted({'deepdiff', 'numpy'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
