"""A library refers to its bundle by a corpus-relative URI and the bundle's content hash, so a
corpus folder can be moved or copied and its libraries still load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from weft_core.refs import mark_corpus_root
from weft_tasks.atomic.bundle import load_bundle
from weft_tasks.atomic.library import load_mcp_library, save_library
from weft_tasks.atomic.synthesis import certify
from weft_tasks.exceptions import LibraryError

from .conftest import InProcessValidator


async def test_a_moved_corpus_keeps_its_libraries(
    bundle_dirs: dict[str, Path], tmp_path: Path
) -> None:
    corpus = mark_corpus_root(tmp_path / "corpus")
    bundle_dir = corpus / "envs" / "crm"
    shutil.copytree(bundle_dirs["crm"], bundle_dir)
    bundle = load_bundle(bundle_dir)
    lib_dir = save_library(
        corpus / "libs", bundle, await certify(bundle, InProcessValidator(), budget=1)
    )
    manifest = json.loads((lib_dir / "library.json").read_text())
    assert manifest["bundle_path"] == "envs/crm"
    assert str(tmp_path) not in (lib_dir / "library.json").read_text()

    moved = tmp_path / "other" / "place"
    shutil.copytree(corpus, moved)
    shutil.rmtree(corpus)
    lib = load_mcp_library(moved / "libs" / "crm")
    assert lib.bundle.path == (moved / "envs" / "crm").resolve()
    assert lib.tasks and lib.manifest.content_hash == manifest["content_hash"]

    # another bundle under the same name is not the one the tasks were certified on
    m = moved / "envs" / "crm" / "manifest.json"
    data = json.loads(m.read_text())
    data["description"] = "something else"
    data["content_hash"] = None
    m.write_text(json.dumps(data))
    with pytest.raises(LibraryError, match="not the one the library was certified on"):
        load_mcp_library(moved / "libs" / "crm")


def test_a_library_without_a_corpus_marker_refers_from_its_own_root(
    bundle_dirs: dict[str, Path], tmp_path: Path
) -> None:
    from weft_tasks.atomic.synthesis import SynthesisState

    bundle = load_bundle(bundle_dirs["crm"])
    lib_dir = save_library(
        tmp_path / "lib", bundle, SynthesisState(mcp=bundle.mcp, budget=1, target=1.0)
    )
    ref = json.loads((lib_dir / "library.json").read_text())["bundle_path"]
    assert not ref.startswith("/") and ref.endswith("crm")
    assert load_mcp_library(lib_dir).bundle.path == Path(bundle_dirs["crm"]).resolve()
