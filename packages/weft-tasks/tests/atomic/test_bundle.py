from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from weft_tasks.atomic.bundle import load_bundle
from weft_tasks.atomic.certify import bundle_dirs as find_bundles
from weft_tasks.atomic.certify import certify_bundle
from weft_tasks.exceptions import BundleError, LibraryError

from .conftest import InProcessValidator


def test_broken_bundles_name_the_file(bundle_dirs: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "crm"
    shutil.copytree(bundle_dirs["crm"], broken)
    (broken / "contracts.json").write_text('{"mcp": "crm", "contracts": [{"tool": 3}]}')
    with pytest.raises(BundleError, match=r"contracts.json: not a valid ContractSet"):
        load_bundle(broken)
    (broken / "contracts.json").unlink()
    with pytest.raises(BundleError, match=r"no contracts\.json"):
        load_bundle(broken)
    with pytest.raises(BundleError, match="not a bundle folder"):
        load_bundle(tmp_path / "nope")


def test_bundle_dirs_expands_folders_of_bundles(bundle_dirs: dict[str, Path]) -> None:
    root = bundle_dirs["crm"].parent
    assert [p.name for p in find_bundles([root])] == ["billing", "crm", "helpdesk", "notes"]
    assert find_bundles([bundle_dirs["crm"]]) == [bundle_dirs["crm"]]


async def test_mcp_without_certifiable_task_writes_nothing(
    bundle_dirs: dict[str, Path], tmp_path: Path
) -> None:
    bundle = load_bundle(bundle_dirs["billing"])
    with pytest.raises(LibraryError, match="no certifiable atomic task"):
        await certify_bundle(
            bundle.path,
            None,
            tmp_path / "lib",
            validator=InProcessValidator(fail_tools=bundle.tools),
        )
    assert not (tmp_path / "lib" / "billing").exists()
    lib = await certify_bundle(bundle.path, None, tmp_path / "lib", validator=InProcessValidator())
    assert lib.manifest.coverage == 1.0 and (tmp_path / "lib" / "billing" / "library.json").exists()
