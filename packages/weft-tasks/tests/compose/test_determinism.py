"""The same libraries, seed and profiles compose the same corpus, byte for byte, whatever the
output folder, the concurrency of the replays and the order they finish in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_tasks.atomic.megamcp import megamcp_client
from weft_tasks.compose import compose_tasks
from weft_tasks.settings import TasksSettings

pytestmark = pytest.mark.integration


async def _corpus(libraries: list[Any], out: Path, concurrency: int) -> dict[str, bytes]:
    settings = TasksSettings(seed=5, concurrency=concurrency, compose_wave=4)
    async with megamcp_client(data_dir=out / ".megamcp") as client:
        graphs, report = await compose_tasks(libraries, client, out, 5, settings=settings)
    assert len(graphs) == 5, report.rejections
    snaps = out / "snapshots"
    files = [
        *sorted((out / "tasks").glob("*.json")),
        *sorted(snaps.glob("*.sqlite")),
        *sorted(snaps.glob("*.tar.gz")),  # initial workspaces of file MCPs
    ]
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in files}


# two corpora of five replayed tasks through an embedded host: 84 s on the loaded 2-core machine
@pytest.mark.slow
async def test_concurrency_and_folder_do_not_change_the_corpus(
    libraries: list[Any], tmp_path: Path
) -> None:
    one = await _corpus(libraries, tmp_path / "t1", concurrency=1)
    many = await _corpus(libraries, tmp_path / "x" / "y" / "t2", concurrency=8)
    assert list(one) == list(many)
    assert [k for k in one if one[k] != many[k]] == []
    assert not any(str(tmp_path).encode() in data for data in one.values())
