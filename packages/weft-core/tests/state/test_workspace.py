from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from weft_core.state import StateError, WorkspaceState, capture_workspace, diff_workspace


def test_capture_files_with_text_for_small_utf8(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.md").write_text("héllo\n", encoding="utf-8")
    (tmp_path / "bin.dat").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "big.txt").write_text("a" * 50)
    state = capture_workspace(tmp_path, text_limit=10)
    assert list(state.files) == ["big.txt", "bin.dat", "docs/note.md"]
    note = state.files["docs/note.md"]
    assert note.text == "héllo\n"
    assert note.size == len("héllo\n".encode())
    assert note.sha256 == hashlib.sha256("héllo\n".encode()).hexdigest()
    assert state.files["bin.dat"].text is None
    assert state.files["big.txt"].text is None  # over the limit: hashed only
    assert state.get("/docs/note.md") == note
    assert state.summary()["files"] == 3


def test_missing_root_is_empty_and_file_root_is_an_error(tmp_path: Path) -> None:
    assert capture_workspace(tmp_path / "absent").files == {}
    (tmp_path / "f").write_text("x")
    with pytest.raises(StateError, match="not a directory"):
        capture_workspace(tmp_path / "f")


def test_symlinks_are_recorded_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(outside, ws / "leak.txt")
    os.symlink(tmp_path, ws / "up")
    state = capture_workspace(ws)
    assert set(state.files) == {"leak.txt", "up"}
    assert state.files["leak.txt"].symlink == str(outside)
    assert state.files["leak.txt"].text is None
    assert all("top secret" not in (f.text or "") for f in state.files.values())


def test_diff_added_modified_removed(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("same")
    (tmp_path / "edit.txt").write_text("v1")
    (tmp_path / "gone.txt").write_text("bye")
    before = capture_workspace(tmp_path)
    (tmp_path / "edit.txt").write_text("v2")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new.txt").write_text("hi")
    diff = diff_workspace(before, capture_workspace(tmp_path))
    assert diff.summary() == {"added": 1, "modified": 1, "removed": 1}
    assert diff.modified["edit.txt"].old.text == "v1"
    assert diff.modified["edit.txt"].new.text == "v2"
    assert list(diff.added) == ["new.txt"]
    assert list(diff.removed) == ["gone.txt"]
    assert diff_workspace(before, before).empty
    assert diff_workspace(WorkspaceState(), WorkspaceState()).empty
