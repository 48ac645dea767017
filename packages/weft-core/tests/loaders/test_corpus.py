"""Every real Toucan server file either loads or is rejected with a reason, and no tool goes missing.

The eight copies under tests/data/specs/toucan always run; the whole corpus in
../shared/data/toucan-mcp-servers (2,120 files) runs when it is present.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from weft_core.exceptions import SpecError
from weft_core.loaders import LoadedSpec, load_spec_file, load_spec_files
from weft_core.loaders._tools import NAME_RE


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "uv.lock").exists() and (parent / "packages").is_dir():
            return parent
    raise RuntimeError("repository root (with uv.lock) not found above the tests")


CORPUS = _repo_root().parent / "shared" / "data" / "toucan-mcp-servers"


def _source_tool_count(path: Path) -> int:
    meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    tools = (meta.get("server_info_crawled") or {}).get("tools") or []
    if not tools:
        tools = (meta.get("remote_server_response") or {}).get("tools") or []
    return len(tools)


def _check_loaded(item: LoadedSpec) -> None:
    spec = item.spec
    assert spec.content_hash == spec.compute_hash()
    assert spec.name and spec.domain
    names = [t.name for t in spec.tools]
    assert len(names) == len(set(names))
    for t in spec.tools:
        assert NAME_RE.match(t.name)
        assert t.description.strip()
        assert t.input_schema["type"] == "object"
        assert "$ref" not in json.dumps(t.input_schema)
        assert set(t.required) <= set(t.properties)
    for r in item.rejected_tools:
        assert r.reason.strip()
    # Every source tool is kept, rejected with a reason, or dropped as an identical repeat.
    repeats = sum("identical repeat" in w for w in item.warnings)
    total = len(spec.tools) + len(item.rejected_tools) + repeats
    assert total == _source_tool_count(Path(item.source))


def _check_all(folder: Path) -> tuple[int, int]:
    files = sorted(folder.glob("*.json"))
    batch = load_spec_files(folder)
    assert len(batch.loaded) + len(batch.failed) == len(files)
    for item in batch.loaded:
        _check_loaded(item)
    for err in batch.failed:
        assert isinstance(err, SpecError)
        assert err.source and Path(err.source).name.endswith(".json")
        assert err.reason.strip()
        assert "Traceback" not in str(err) and "unexpected" not in err.reason
    return len(batch.loaded), len(batch.failed)


def test_bundled_toucan_copies(specs_dir: Path) -> None:
    loaded, failed = _check_all(specs_dir / "toucan")
    assert (loaded, failed) == (7, 1)
    assert (specs_dir / "toucan" / "LICENSE").read_text().startswith("MIT License")


def test_bundled_duplicate_tools_are_settled(specs_dir: Path) -> None:
    item = load_spec_file(
        specs_dir / "toucan" / "cf_1844.@alexgoller_illumio-mcp-server_labeled.json"
    )
    assert any("identical repeat" in w for w in item.warnings)
    assert "delete_ruleset" in [t.name for t in item.spec.tools]


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"{CORPUS} not present")
def test_whole_toucan_corpus() -> None:
    loaded, failed = _check_all(CORPUS)
    assert loaded + failed == 2120
    # Most of the corpus is usable; a collapse here means a loader regression.
    assert loaded > 2000
