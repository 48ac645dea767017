"""`diff_sqlite` on real SQLite files: the same answer as `diff_db` of two captures, and a cap."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from weft_core.state import StateError, capture_db, diff_db, diff_sqlite

SCHEMA = """
CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, balance REAL);
CREATE TABLE order_line (order_id INTEGER, line INTEGER, sku TEXT, qty INTEGER,
                         PRIMARY KEY (order_id, line));
CREATE TABLE event_log (kind TEXT, payload TEXT);
CREATE TABLE setting (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
CREATE TABLE attachment (id INTEGER PRIMARY KEY, data BLOB);
INSERT INTO customer VALUES (1, 'Ada', 'ada@example.com', 10.5), (2, 'Bob', NULL, 0),
                            (3, 'Cy', 'cy@example.com', 1);
INSERT INTO order_line VALUES (7, 1, 'SKU-1', 2), (7, 2, 'SKU-2', 1);
INSERT INTO event_log VALUES ('login', 'u1'), ('login', 'u2');
INSERT INTO setting VALUES ('tz', 'UTC'), ('lang', 'en');
INSERT INTO attachment VALUES (1, x'00ff');
"""

TURN = """
INSERT INTO customer VALUES (4, 'Dee', 'dee@example.com', 3);
UPDATE customer SET email = 'bob@example.com', balance = 0 WHERE id = 2;
DELETE FROM customer WHERE id = 3;
UPDATE order_line SET qty = 5 WHERE order_id = 7 AND line = 2;
INSERT INTO order_line VALUES (8, 1, 'SKU-9', 1);
INSERT INTO event_log VALUES ('logout', 'u1');
UPDATE event_log SET payload = 'u9' WHERE rowid = 2;
DELETE FROM event_log WHERE rowid = 1;
UPDATE setting SET v = 'fr' WHERE k = 'lang';
DELETE FROM setting WHERE k = 'tz';
UPDATE attachment SET data = x'0102' WHERE id = 1;
"""


def run(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        conn.commit()
    finally:
        conn.close()
    return path


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    before = run(tmp_path / "before.sqlite", SCHEMA)
    after = tmp_path / "after.sqlite"
    shutil.copyfile(before, after)
    return before, run(after, TURN)


def test_insert_update_delete_per_table(pair: tuple[Path, Path]) -> None:
    diff = diff_sqlite(*pair)
    customer = diff.tables["customer"]
    assert customer.inserts == {
        "4": {"id": 4, "name": "Dee", "email": "dee@example.com", "balance": 3.0}
    }
    assert list(customer.deletes) == ["3"]
    assert customer.deletes["3"]["name"] == "Cy"
    # balance 0 -> 0 (INTEGER then REAL) is not a change; only the email changed.
    assert set(customer.updates["2"].changed) == {"email"}
    assert customer.updates["2"].changed["email"].old is None
    assert customer.updates["2"].changed["email"].new == "bob@example.com"
    assert customer.updates["2"].old["name"] == "Bob"
    lines = diff.tables["order_line"]
    assert set(lines.updates) == {"[7,2]"} and set(lines.inserts) == {"[8,1]"}
    assert diff.tables["setting"].updates["lang"].changed["v"].new == "fr"
    assert list(diff.tables["setting"].deletes) == ["tz"]
    assert diff.tables["attachment"].updates["1"].changed["data"].new == "hex:0102"
    assert not diff.truncated


def test_table_without_primary_key_is_keyed_by_rowid(pair: tuple[Path, Path]) -> None:
    log = diff_sqlite(*pair).tables["event_log"]
    assert list(log.inserts) == ["3"] and log.inserts["3"] == {"kind": "logout", "payload": "u1"}
    assert list(log.deletes) == ["1"]
    assert log.updates["2"].changed["payload"].old == "u2"
    assert log.updates["2"].changed["payload"].new == "u9"


def test_same_as_diff_of_two_captures(pair: tuple[Path, Path]) -> None:
    before, after = pair
    assert diff_sqlite(before, after) == diff_db(capture_db(before), capture_db(after))


def test_unchanged_and_empty_baseline(pair: tuple[Path, Path]) -> None:
    before, _ = pair
    assert diff_sqlite(before, before).empty
    from_nothing = diff_sqlite(None, before)
    assert "customer" in from_nothing.tables_added
    assert len(from_nothing.tables["customer"].inserts) == 3


def test_schema_change_falls_back_to_whole_table(pair: tuple[Path, Path]) -> None:
    before, after = pair
    run(
        after,
        "ALTER TABLE customer ADD COLUMN tier TEXT; CREATE TABLE note (id INTEGER PRIMARY KEY);"
        "INSERT INTO note VALUES (1); DROP TABLE attachment;",
    )
    diff = diff_sqlite(before, after)
    assert diff == diff_db(capture_db(before), capture_db(after))
    assert diff.tables_added == ["note"] and diff.tables_removed == ["attachment"]
    assert set(diff.tables["customer"].updates["1"].changed) == {"tier"}


def test_large_diff_is_capped_and_counted(tmp_path: Path) -> None:
    before = run(
        tmp_path / "b.sqlite",
        "CREATE TABLE item (id INTEGER PRIMARY KEY, v TEXT);"
        "CREATE TABLE zz (id INTEGER PRIMARY KEY);",
    )
    after = tmp_path / "a.sqlite"
    shutil.copyfile(before, after)
    conn = sqlite3.connect(after)
    conn.executemany("INSERT INTO item VALUES (?, ?)", [(i, f"v{i}") for i in range(5000)])
    conn.execute("INSERT INTO zz VALUES (1)")
    conn.commit()
    conn.close()
    diff = diff_sqlite(before, after, max_rows=50)
    item = diff.tables["item"]
    assert set(item.inserts) == {str(i) for i in range(50)}  # the first rows in key order
    assert item.omitted == {"inserts": 4950}
    assert item.counts()["inserts"] == 5000
    # The cap is spent: a later table keeps its count but no rows.
    assert diff.tables["zz"].inserts == {} and diff.tables["zz"].omitted == {"inserts": 1}
    assert diff.truncated
    assert diff_sqlite(before, after).tables["item"].counts()["inserts"] == 5000


def test_not_a_database_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not sqlite")
    good = run(tmp_path / "good.sqlite", "CREATE TABLE t (id INTEGER PRIMARY KEY);")
    with pytest.raises(StateError, match=r"bad\.sqlite"):
        diff_sqlite(bad, good)
    with pytest.raises(StateError, match=r"missing\.sqlite"):
        diff_sqlite(good, tmp_path / "missing.sqlite")
