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


def test_a_killed_composers_folder_is_swept_by_the_next_run(tmp_path: Path) -> None:
    """`kill -9` skips the cleanup; the next run removes the folder once its pid is gone and
    it has not changed for a while, and leaves a live run's folder and a fresh one alone."""
    import os
    import subprocess
    import sys
    import time

    code = (
        "import sys, time\nfrom pathlib import Path\n"
        "from weft_tasks.atomic.megamcp import tmpfs_folder\n"
        "with tmpfs_folder(Path(sys.argv[1]), min_free=1) as f:\n"
        "    (f / 'grp_1').mkdir(); print(f, flush=True); time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    orphan = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait()
    assert orphan.is_dir()  # what kill -9 leaves behind
    fresh_orphan = tmp_path / f"weft-tasks-groups-{proc.pid}-fresh"
    fresh_orphan.mkdir()
    live = tmp_path / f"weft-tasks-groups-{os.getpid()}-live"
    live.mkdir()
    old = time.time() - 3600
    for p in (orphan, live):
        os.utime(p, (old, old))
    with tmpfs_folder(tmp_path, min_free=1) as folder:
        assert folder is not None
        assert not orphan.exists()
        assert live.is_dir() and fresh_orphan.is_dir()
