"""Importing folders as packages: relative imports, shared compiled code, clean forgetting."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import pytest

from weft_core import pkgimport
from weft_core.pkgimport import forget_package, import_folder

RUNTIME = """
def boom(x):
    def inner():
        raise ValueError(f"bad {x}")
    return inner()


class Thing:
    def where(self):
        return Thing.where.__code__.co_filename
"""


def _bundle(root: Path, name: str, runtime: str = RUNTIME) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "runtime.py").write_text(runtime)
    (folder / "server.py").write_text("from .runtime import Thing, boom\nNAME = __name__\n")
    return folder


def test_two_folders_share_compiled_code_but_keep_their_own_file_names(tmp_path: Path) -> None:
    a, b = _bundle(tmp_path, "a"), _bundle(tmp_path, "b")
    import_folder("weft_test_pkg_a", a)
    try:
        sa = __import__("weft_test_pkg_a.server", fromlist=["x"])
        compiled = len(pkgimport._code_cache)
        import_folder("weft_test_pkg_b", b)
        sb = __import__("weft_test_pkg_b.server", fromlist=["x"])
        assert len(pkgimport._code_cache) == compiled  # nothing compiled for b
        assert sa.NAME == "weft_test_pkg_a.server"
        # One compilation: the bytecode object is the same, only the file names differ.
        ca, cb = sa.boom.__code__, sb.boom.__code__
        assert ca.co_code == cb.co_code
        assert ca.co_filename == str(a / "runtime.py")
        assert cb.co_filename == str(b / "runtime.py")
        assert sb.Thing().where() == str(b / "runtime.py")
        with pytest.raises(ValueError) as info:
            sb.boom(3)
        frames = traceback.extract_tb(info.value.__traceback__)
        # The nested function's frame names b's file and shows its line from that file.
        assert frames[-1].filename == str(b / "runtime.py")
        assert frames[-1].line == 'raise ValueError(f"bad {x}")'
    finally:
        forget_package("weft_test_pkg_a")
        forget_package("weft_test_pkg_b")


def test_a_changed_source_is_compiled_afresh(tmp_path: Path) -> None:
    a = _bundle(tmp_path, "a")
    b = _bundle(tmp_path, "b", RUNTIME.replace("bad {x}", "worse {x}"))
    import_folder("weft_test_pkg_c", a)
    import_folder("weft_test_pkg_d", b)
    try:
        sc = __import__("weft_test_pkg_c.server", fromlist=["x"])
        sd = __import__("weft_test_pkg_d.server", fromlist=["x"])
        with pytest.raises(ValueError, match="bad 1"):
            sc.boom(1)
        with pytest.raises(ValueError, match="worse 1"):
            sd.boom(1)
    finally:
        forget_package("weft_test_pkg_c")
        forget_package("weft_test_pkg_d")


def test_forgetting_drops_the_modules_and_the_folder_finder(tmp_path: Path) -> None:
    a = _bundle(tmp_path, "a")
    import_folder("weft_test_pkg_e", a)
    __import__("weft_test_pkg_e.server")
    assert str(a) in sys.path_importer_cache
    forget_package("weft_test_pkg_e")
    assert not [n for n in sys.modules if n.startswith("weft_test_pkg_e")]
    assert str(a) not in sys.path_importer_cache
    # Re-importing over the same folder after an edit runs the new source.
    (a / "server.py").write_text("NAME = 'edited'\n")
    import_folder("weft_test_pkg_e", a)
    try:
        assert __import__("weft_test_pkg_e.server", fromlist=["x"]).NAME == "edited"
    finally:
        forget_package("weft_test_pkg_e")


def test_a_failing_import_leaves_nothing_behind(tmp_path: Path) -> None:
    a = _bundle(tmp_path, "a")
    (a / "__init__.py").write_text("raise RuntimeError('broken package')\n")
    with pytest.raises(RuntimeError, match="broken package"):
        import_folder("weft_test_pkg_f", a)
    assert "weft_test_pkg_f" not in sys.modules
    assert not isinstance(sys.path_importer_cache.get(str(a)), pkgimport._SharedFinder)
