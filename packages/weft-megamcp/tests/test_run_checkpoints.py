"""A group that one `POST /admin/runs` creates and closes is discarded at its close: its writes
schedule no write-behind checkpoint. A group the run leaves open is checkpointed as usual."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import RowExists, Verifier
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import CallOp, VerifyOp
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration

VERIFIER = Verifier(
    checkpoints={
        "step1": [RowExists(id="grace", table="contact", where={"name": "Grace"})],
        "step2": [RowExists(id="hopper", table="contact", where={"email": "h@x.y"})],
    }
)


@pytest.fixture
def settings(tmp_path: Path) -> MegaMCPSettings:
    # Every write is checkpointed at once, so any scheduled checkpoint runs within the request.
    return MegaMCPSettings(
        data_dir=tmp_path / "megamcp",
        admin_token="admin-secret-token",
        offload_after_s=3600,
        checkpoint_debounce_s=0,
        checkpoint_max_delay_s=0.001,
        checkpoint_min_interval_s=0,
    )


@pytest.fixture
async def puts(host: MegaMCPHost, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[int]]:
    """The state versions of the checkpoints the host publishes (the real store writes them)."""
    assert host.core is not None
    store = host.core.checkpoints
    seen: list[int] = []
    real = store.put

    def put(*args: Any, **kwargs: Any) -> Any:
        ref = real(*args, **kwargs)
        seen.append(ref.state_version)
        return ref

    monkeypatch.setattr(store, "put", put)
    yield seen


def _ops(m: str) -> list[Any]:
    return [
        CallOp(mcp=m, tool="add_contact", arguments={"name": "Grace", "email": "g@x.y"}),
        VerifyOp(checkpoint="step1"),
        CallOp(mcp=m, tool="update_email", arguments={"contact_id": 1, "email": "h@x.y"}),
        VerifyOp(checkpoint="step2"),
    ]


async def test_a_run_that_closes_its_group_checkpoints_nothing(
    client: MegaMCPClient, bundle_dir: Path, puts: list[int]
) -> None:
    m = (await client.register(bundle_dir)).mcp_id
    out = await client.run([m], _ops(m), verifier=VERIFIER)
    assert out.closed and not any(s.failed for s in out.steps)
    assert puts == []


async def test_a_run_that_keeps_its_group_checkpoints_it(
    client: MegaMCPClient, bundle_dir: Path, puts: list[int]
) -> None:
    m = (await client.register(bundle_dir)).mcp_id
    out = await client.run([m], _ops(m), verifier=VERIFIER, close=False)
    assert not any(s.failed for s in out.steps)
    assert not out.closed and out.handle is not None
    assert await client.checkpoint(out.handle) == {m: 2}
    assert puts and max(puts) == 2


async def test_an_explicit_checkpoint_covers_an_ephemeral_groups_writes(
    host: MegaMCPHost, client: MegaMCPClient, bundle_dir: Path, puts: list[int]
) -> None:
    """Durability that is asked for is kept: a checkpoint request (or a graceful stop) checkpoints
    the writes an ephemeral group scheduled no checkpoint for."""
    assert host.core is not None
    m = (await client.register(bundle_dir)).mcp_id
    handle = await client.create_group([m])
    host.core.manager.get(handle.group_id).ephemeral = True
    out = await client.batch(
        handle, [CallOp(mcp=m, tool="add_contact", arguments={"name": "Ada", "email": "a@x.y"})]
    )
    assert not any(s.failed for s in out.steps) and puts == []
    assert await client.checkpoint(handle) == {m: 1}
    assert puts == [1]


async def test_a_run_that_closes_its_group_takes_no_lease(
    host: MegaMCPHost, client: MegaMCPClient, bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody else can hold an ephemeral group, so its writes are acknowledged without a lease
    (which cost a lease file, three journal writes and a delete per session at the close)."""
    assert host.core is not None
    store = host.core.checkpoints
    leased: list[str] = []
    real = store.acquire

    def acquire(session_id: str, *args: Any, **kwargs: Any) -> Any:
        leased.append(session_id)
        return real(session_id, *args, **kwargs)

    monkeypatch.setattr(store, "acquire", acquire)
    m = (await client.register(bundle_dir)).mcp_id
    out = await client.run([m], _ops(m), verifier=VERIFIER)
    assert out.closed and not any(s.failed for s in out.steps)
    assert leased == []
    kept = await client.run([m], _ops(m), verifier=VERIFIER, close=False)
    assert kept.handle is not None and not any(s.failed for s in kept.steps)
    sid = kept.handle.session(m).session_id
    assert leased and set(leased) == {sid} and store.current_lease(sid) is not None
