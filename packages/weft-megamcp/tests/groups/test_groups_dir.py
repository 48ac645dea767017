"""`groups_dir` puts live groups' files outside data_dir (a tmpfs, typically): every lifecycle
step still works, including the ones that move files between the two (a state diff's copy),
and nothing of a group lands under data_dir/groups."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from weft_core.models import RowExists, Verifier
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import CallOp, VerifyOp
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration

VERIFIER = Verifier(
    checkpoints={
        "added": [RowExists(id="ada", table="contact", where={"name": "Ada"})],
        "final": [RowExists(id="ada", table="contact", where={"name": "Ada"})],
    }
)


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A folder on another file system than tmp_path when the machine has a tmpfs (so a rename
    between data_dir and groups_dir would fail with EXDEV), else beside it."""
    shm = Path("/dev/shm")
    if shm.is_dir() and shm.stat().st_dev != tmp_path.stat().st_dev:
        folder = Path(tempfile.mkdtemp(prefix="weft-groups-", dir=shm))
    else:
        folder = tmp_path / "elsewhere"
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def settings(tmp_path: Path, elsewhere: Path) -> MegaMCPSettings:
    return MegaMCPSettings(
        data_dir=tmp_path / "megamcp", admin_token="admin-secret-token", groups_dir=elsewhere
    )


@pytest.fixture
async def client(host: MegaMCPHost) -> AsyncIterator[MegaMCPClient]:
    async with MegaMCPClient(host.url, host.admin_token) as c:
        yield c


async def test_a_group_lives_in_groups_dir_through_its_lifecycle(
    client: MegaMCPClient, bundle_dir: Path, elsewhere: Path, settings: MegaMCPSettings
) -> None:
    m = (await client.register(bundle_dir)).mcp_id
    g = await client.create_group([m], verifier=VERIFIER)
    assert (elsewhere / g.group_id).is_dir()
    assert not (settings.data_dir / "groups" / g.group_id).exists()
    out = await client.batch(
        g,
        [
            CallOp(mcp=m, tool="add_contact", arguments={"name": "Ada", "email": "a@x.y"}),
            VerifyOp(checkpoint="added"),  # with its state diff: a copy moved into the session
            VerifyOp(checkpoint="added", diff=False),  # in place
        ],
    )
    assert [s.error for s in out.steps] == [None] * 3
    assert all(s.verification.passed for s in out.steps[1:] if s.verification is not None)
    diffed = out.steps[1].verification
    assert diffed is not None and diffed.state_diff is not None
    assert diffed.state_diff.error is None, diffed.state_diff.error
    snap = await client.snapshot(g)
    forks = await client.fork(g, 2)
    assert all((elsewhere / f.group_id).is_dir() for f in forks)
    res = await client.verify(forks[0])  # freeze + final checks on a fork
    assert res.passed, res
    await client.restore(g, snap)
    assert (await client.verify(g)).passed
    for handle in (g, *forks):
        await client.close(handle)
    assert not [p for p in elsewhere.iterdir() if p.name.startswith("grp_")]
    assert not list(elsewhere.glob(".megamcp-ckpt-*"))
