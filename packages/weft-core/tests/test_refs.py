"""References between artifacts: content addresses, corpus-relative URIs, object-store URLs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from weft_core.loaders import load_spec_file
from weft_core.models import RLTaskRow, SnapshotRef
from weft_core.refs import (
    CORPUS_MARKER,
    RefError,
    address_digest,
    check_ref,
    content_address,
    corpus_ref,
    corpus_root_for,
    escapes_root,
    find_corpus_root,
    mark_corpus_root,
    resolve_ref,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "mcps"
HEX = "ab" * 32


def test_content_address_round_trip() -> None:
    assert content_address(HEX) == f"sha256:{HEX}"
    assert content_address(f"sha256:{HEX}") == f"sha256:{HEX}"
    assert address_digest(f"sha256:{HEX}") == HEX
    assert address_digest("stages/x") is None
    with pytest.raises(RefError, match="not a sha256 digest"):
        content_address("xyz")


@pytest.mark.parametrize(
    "ref", [f"sha256:{HEX}", "s3://bucket/corpus/tasks/t.json", "tasks/t.json", "../envs/crm"]
)
def test_relocatable_refs_pass(ref: str) -> None:
    assert check_ref(ref) == ref


@pytest.mark.parametrize(
    "ref", ["/tmp/t1/.megamcp/objects/blobs/ab/x", "file:///tmp/x", "C:\\corpus\\t.json", ""]
)
def test_local_absolute_refs_are_refused(ref: str) -> None:
    with pytest.raises(RefError):
        check_ref(ref, field="SnapshotRef.uri")


def test_artifacts_refuse_absolute_paths() -> None:
    with pytest.raises(ValueError, match="absolute local path"):
        SnapshotRef(mcp="crm", uri="/tmp/t1/.megamcp/objects/blobs/ab/" + HEX, sha256=HEX)
    with pytest.raises(ValueError, match=r"RLTaskRow\.task_uri"):
        RLTaskRow(task_id="t", prompt=[], task_uri="/home/me/tasks/t.json")
    ok = SnapshotRef(mcp="crm", uri=f"sha256:{HEX}", sha256=HEX)
    assert ok.uri.startswith("sha256:")


def test_corpus_root_is_found_from_any_depth_and_survives_a_move(tmp_path: Path) -> None:
    root = mark_corpus_root(tmp_path / "corpus")
    target = root / "stages" / "envs" / "k1" / "crm"
    target.mkdir(parents=True)
    referrer = root / "stages" / "atomic" / "k2" / "crm" / "library.json"
    referrer.parent.mkdir(parents=True)
    referrer.write_text("{}")
    assert find_corpus_root(referrer) == root.resolve()
    ref = corpus_ref(target, find_corpus_root(referrer) or root)
    assert ref == "stages/envs/k1/crm"
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(root, moved)
    new_root = find_corpus_root(moved / "stages" / "atomic" / "k2" / "crm" / "library.json")
    assert new_root == moved.resolve()
    assert resolve_ref(ref, new_root).is_dir()


def test_marker_bytes_never_vary(tmp_path: Path) -> None:
    a, b = mark_corpus_root(tmp_path / "a"), mark_corpus_root(tmp_path / "b")
    mark_corpus_root(a)
    assert (a / CORPUS_MARKER).read_bytes() == (b / CORPUS_MARKER).read_bytes()


def test_unmarked_artifact_uses_its_own_folder(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    assert corpus_root_for(tmp_path / "lib" / "library.json") == (tmp_path / "lib").resolve()


def test_escaping_refs_are_detected() -> None:
    assert escapes_root("../envs/crm")
    assert escapes_root("a/../../b")
    assert not escapes_root("a/../b")


def test_resolve_refuses_addresses() -> None:
    with pytest.raises(RefError, match="object store"):
        resolve_ref(f"sha256:{HEX}", "/x")


def test_spec_hash_and_bytes_do_not_depend_on_how_the_path_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLES.parent)
    rel = load_spec_file(os.path.join("mcps", "crm.json")).spec
    absolute = load_spec_file(EXAMPLES / "crm.json").spec
    copy = tmp_path / "deep" / "crm.json"
    copy.parent.mkdir()
    shutil.copy(EXAMPLES / "crm.json", copy)
    moved = load_spec_file(copy).spec
    assert rel.source == absolute.source == moved.source == "crm.json"
    assert rel.content_hash == absolute.content_hash == moved.content_hash
    assert rel.to_json() == absolute.to_json() == moved.to_json()
    assert str(EXAMPLES) not in absolute.to_json()


def test_spec_source_is_not_hashed_but_content_is() -> None:
    spec = load_spec_file(EXAMPLES / "crm.json").spec
    renamed = spec.model_copy(update={"source": "other.json"})
    assert renamed.compute_hash() == spec.compute_hash()
    changed = spec.model_copy(update={"description": spec.description + "!"})
    assert changed.compute_hash() != spec.compute_hash()


def test_files_sealed_by_the_older_hash_rule_still_load() -> None:
    """A spec.json written before `source` left the hash (absolute path inside) is intact: it
    loads, with the file name as source and today's hash; a tampered one is still refused."""
    import json

    from weft_core._hashing import content_hash
    from weft_core.exceptions import ArtifactError
    from weft_core.models import MCPSpec

    spec = load_spec_file(EXAMPLES / "crm.json").spec
    raw = json.loads(spec.to_json())
    raw["source"] = "/home/someone/specs/crm.json"
    raw["content_hash"] = content_hash(
        {k: v for k, v in raw.items() if k not in ("content_hash", "version", "created_at")}
    )
    old = json.dumps(raw)
    loaded = MCPSpec.from_json(old)
    assert loaded.source == "crm.json" and loaded.content_hash == spec.content_hash
    with pytest.raises(ArtifactError, match="content_hash"):
        MCPSpec.from_json(old.replace('"CRM"', '"ERP"', 1))
