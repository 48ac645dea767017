"""Tasks name snapshots by content address; re-grounding reads their bytes from a local store."""

import hashlib

import pytest

from weft_evolve.exceptions import EvolveRuntimeError
from weft_evolve.revision.task import snapshot_file


def test_content_address_resolves_to_a_blob_whose_bytes_match(tmp_path):
    data = b"SQLite format 3\x00 fake"
    sha = hashlib.sha256(data).hexdigest()
    store, corpus = tmp_path / "megamcp", tmp_path / "corpus"
    (store / "objects" / "blobs" / sha[:2]).mkdir(parents=True)
    (corpus / "snapshots").mkdir(parents=True)
    # a copy with other bytes under the right name is not the snapshot
    (store / "objects" / "blobs" / sha[:2] / sha).write_bytes(b"tampered")
    (corpus / "snapshots" / f"{sha}.sqlite").write_bytes(data)
    assert snapshot_file(f"sha256:{sha}", [store, corpus]) == corpus / "snapshots" / f"{sha}.sqlite"


def test_unknown_address_names_where_it_looked(tmp_path):
    with pytest.raises(EvolveRuntimeError, match="held in none of"):
        snapshot_file("sha256:" + "a" * 64, [tmp_path])


def test_a_path_or_url_is_read_as_is(tmp_path):
    assert snapshot_file(str(tmp_path / "x.sqlite")) == str(tmp_path / "x.sqlite")
    assert snapshot_file("memory://snap/x") == "memory://snap/x"
