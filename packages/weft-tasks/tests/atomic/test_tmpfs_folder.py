"""`tmpfs_folder`: a fresh folder in a RAM file system with room, removed at exit; none where
there is no such file system or too little room."""

from __future__ import annotations

from pathlib import Path

from weft_tasks.atomic.megamcp import tmpfs_folder


def test_a_folder_with_room_is_made_and_removed(tmp_path: Path) -> None:
    with tmpfs_folder(tmp_path, min_free=1) as folder:
        assert folder is not None and folder.is_dir() and folder.parent == tmp_path
        (folder / "grp_x").mkdir()
    assert not folder.exists()


def test_too_little_room_gives_none(tmp_path: Path) -> None:
    with tmpfs_folder(tmp_path, min_free=1 << 62) as folder:
        assert folder is None
    assert list(tmp_path.iterdir()) == []


def test_a_missing_root_gives_none(tmp_path: Path) -> None:
    with tmpfs_folder(tmp_path / "no-such-dir") as folder:
        assert folder is None
