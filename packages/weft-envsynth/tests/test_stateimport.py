"""A state document loads as a session's initial state; what does not fit is reported."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from weft_envsynth import EnvSynthUserError, import_state


def _session(bundle: Path, tmp: Path) -> tuple[Path, Path]:
    db = tmp / "state.sqlite"
    shutil.copyfile(bundle / "seed.sqlite", db)
    return db, tmp / "ws"


def test_records_nested_children_and_files_are_imported(
    helpdesk_bundle: Path, tmp_path: Path
) -> None:
    db, ws = _session(helpdesk_bundle, tmp_path)
    doc = {
        "customers": {"C-77": {"name": "Ada Lovelace", "email": "ada@example.org"}},
        "tickets": [
            {
                "ticket_id": "T-900",
                "customer_id": "C-77",
                "subject": "Printer on fire",
                "priority": "high",
                "comments": [{"body": "Extinguisher on its way"}],
                "mood": "grumpy",
            }
        ],
        "weather": {"today": "rain"},
        "files": {"notes/handover.txt": "call Ada back"},
    }
    report = import_state(helpdesk_bundle, doc, db_path=db, workspace=ws)
    assert report.rows["customer"] == 1 and report.rows["ticket"] == 1
    assert report.rows["comment"] == 1
    assert report.files == 1 and (ws / "notes" / "handover.txt").read_text() == "call Ada back"
    # Nothing silently dropped: the unknown field and the unknown key are both named.
    assert any("mood" in line and "no field" in line for line in report.not_imported)
    assert any(line.startswith("weather:") for line in report.not_imported)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute(
            "SELECT subject, customer_id FROM ticket WHERE ticket_id = 'T-900'"
        ).fetchone() == ("Printer on fire", "C-77")
        assert conn.execute("SELECT name FROM customer WHERE customer_id = 'C-77'").fetchone() == (
            "Ada Lovelace",
        )
        # The nested comment is linked to its ticket through the schema's foreign key.
        assert conn.execute(
            "SELECT ticket_id FROM comment WHERE body = 'Extinguisher on its way'"
        ).fetchone() == ("T-900",)
    finally:
        conn.close()


def test_a_value_the_table_refuses_is_reported_and_the_rest_goes_on(
    helpdesk_bundle: Path, tmp_path: Path
) -> None:
    db, ws = _session(helpdesk_bundle, tmp_path)
    doc = {
        "tickets": [
            {"ticket_id": "T-1", "subject": "ok", "priority": "high"},
            {"ticket_id": "T-2", "subject": "bad", "priority": "not-a-priority"},
        ],
        "customers": ["not a record"],
    }
    report = import_state(helpdesk_bundle, doc, db_path=db, workspace=ws)
    assert report.rows.get("ticket") == 1
    assert any(line.startswith("tickets[1]: rejected") for line in report.not_imported)
    assert any("customers[0]" in line for line in report.not_imported)


def test_a_file_tree_with_one_top_folder_fills_the_workspace(
    helpdesk_bundle: Path, tmp_path: Path
) -> None:
    db, ws = _session(helpdesk_bundle, tmp_path)
    tree = {
        "root": {
            "alice": {
                "type": "directory",
                "contents": {
                    "a.txt": {"type": "file", "content": "A"},
                    "sub": {
                        "type": "directory",
                        "contents": {"b.txt": {"type": "file", "content": "B"}},
                    },
                    "odd": 3,
                    "../escape.txt": {"type": "file", "content": "no"},
                },
            }
        }
    }
    report = import_state(helpdesk_bundle, tree, db_path=db, workspace=ws)
    assert (ws / "a.txt").read_text() == "A" and (ws / "sub" / "b.txt").read_text() == "B"
    assert not (tmp_path / "escape.txt").exists()
    assert any("odd" in line for line in report.not_imported)
    assert any("escape.txt" in line and "outside" in line for line in report.not_imported)


def test_a_bad_state_file_is_a_clear_user_error(helpdesk_bundle: Path, tmp_path: Path) -> None:
    bad = tmp_path / "state.json"
    bad.write_text("[1, 2]")
    db, ws = _session(helpdesk_bundle, tmp_path)
    with pytest.raises(EnvSynthUserError, match="must be a JSON object"):
        import_state(helpdesk_bundle, bad, db_path=db, workspace=ws)
    bad.write_text("{not json")
    with pytest.raises(EnvSynthUserError, match="not a readable JSON"):
        import_state(helpdesk_bundle, bad, db_path=db, workspace=ws)
    json.loads("{}")


def test_a_documents_one_top_folder_is_the_workspace_root(
    helpdesk_bundle: Path, tmp_path: Path
) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    db, ws = _session(helpdesk_bundle, tmp_path / "one")
    doc = {
        "workspace": {"type": "directory", "contents": {"a.txt": {"type": "file", "content": "A"}}}
    }
    import_state(helpdesk_bundle, doc, db_path=db, workspace=ws)
    assert (ws / "a.txt").read_text() == "A" and not (ws / "workspace").exists()
    # Two top nodes are named entries of the root, not roots.
    db, ws = _session(helpdesk_bundle, tmp_path / "two")
    doc = {
        "src": {"type": "directory", "contents": {"m.py": {"type": "file", "content": "x"}}},
        "notes.txt": {"type": "file", "content": "n"},
    }
    import_state(helpdesk_bundle, doc, db_path=db, workspace=ws)
    assert (ws / "src" / "m.py").read_text() == "x" and (ws / "notes.txt").read_text() == "n"
