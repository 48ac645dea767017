"""BatchedGroup: reference calls and checks through a real MegaMCP host in as few requests as
the calls' binds allow, with the same run record as one request per call."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_core.models import ReferenceCall, ReturnContains, Verifier
from weft_tasks.atomic.megamcp import BatchedGroup, megamcp_client

pytestmark = pytest.mark.integration


async def test_binds_split_batches_and_checks_ride_the_last(
    bundle_dirs: dict[str, Path], tmp_path: Path
) -> None:
    calls = [
        ReferenceCall(
            tool="create_customer",
            arguments={"name": "{{who}}", "email": "zed@example.com"},
            bind={"cid": "id"},
        ),
        ReferenceCall(tool="get_customer", arguments={"customer_id": "{{cid}}"}),
        ReferenceCall(tool="update_customer", arguments={"customer_id": "{{cid}}", "city": "Oslo"}),
    ]
    checks = [ReturnContains(id="got", tool="get_customer", value="Zed")]
    async with megamcp_client(data_dir=tmp_path / "mm") as client:
        mcp_id = (await client.register(str(bundle_dirs["crm"]))).mcp_id
        group = BatchedGroup(
            client,
            {mcp_id: None},
            {"crm": mcp_id},
            verifier=Verifier.final([c.model_copy(update={"mcp": mcp_id}) for c in checks]),
            task_id="t1",
        )
        run, tail = await group.run_calls(
            "crm", calls, {"who": "Zed"}, then=[{"op": "verify"}], close=True
        )
        assert run.ok and group.calls == 3
        # [create] then [get, update, verify + close]: the bind of `cid` splits the batch
        assert group.requests == 2 and group.closed
        assert run.env["cid"] == run.steps[0].returned.value["id"]
        assert run.steps[1].arguments == {"customer_id": run.env["cid"]}
        final = tail[0].verification
        assert final is not None and final.passed, final

        failing = BatchedGroup(
            client, {mcp_id: None}, {"crm": mcp_id}, verifier=Verifier.final([]), task_id="t2"
        )
        bad = [
            ReferenceCall(tool="get_customer", arguments={"customer_id": 999_999}),
            ReferenceCall(tool="list_customers", arguments={"tier": "gold"}),
        ]
        assert failing.verifier is None  # nothing to check: no verifier is sent (a host refuses it)
        run, tail = await failing.run_calls("crm", bad, {}, then=[{"op": "verify"}], close=True)
        assert run.failed_at == 0 and tail == [] and len(run.steps) == 1
        assert run.steps[0].error and "tool error" in run.steps[0].error
        assert failing.requests == 1 and failing.closed  # a failed batch still closes
