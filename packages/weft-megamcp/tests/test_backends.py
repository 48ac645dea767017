"""A whole host on real backing services: the registry on PostgreSQL, the object store and the
checkpoints on an S3 server (moto's, over HTTP): register, call, checkpoint, evict, reload."""

from __future__ import annotations

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.settings import MegaMCPSettings

# Starts a PostgreSQL server and an S3 server, then a host on them.
pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_host_on_postgres_and_s3(tmp_path, bundle_dir, postgres_url, s3_bucket):
    settings = MegaMCPSettings(
        data_dir=tmp_path / "megamcp",
        admin_token="admin-secret-token",
        registry_url=postgres_url,
        object_store_url=f"s3://{s3_bucket}/objects",
        checkpoint_url=f"s3://{s3_bucket}/checkpoints",
        checkpoint_min_interval_s=0,
        offload_after_s=3600,
    )
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        rec = await client.register(bundle_dir)
        g = await client.create_group([rec.mcp_id])
        m = rec.mcp_id
        await client.call_tool(g, m, "add_contact", {"name": "Durable", "email": "d@x.y"})
        await client.call_tool(g, m, "write_note", {"path": "plan.md", "text": "kept in S3"})
        assert await client.checkpoint(g) == {m: 2}
        await client.evict(g)  # local files gone: the next call reloads from S3
        assert "Durable" in (await client.call_tool(g, m, "list_contacts")).text
        assert (await client.call_tool(g, m, "read_note", {"path": "plan.md"})).text == "kept in S3"
        assert host.core is not None
        fs = host.core.checkpoints.fs
        keys = fs.find(f"{s3_bucket}/checkpoints")
        assert any(k.endswith(".sqlite") for k in keys) and any(k.endswith(".tar.gz") for k in keys)
        assert not [k for k in keys if "/.tmp-" in k]  # nothing half-published is left over
        blobs = fs.find(f"{s3_bucket}/objects/blobs")
        assert blobs  # the bundle's sources went to S3, content-addressed
        await client.close(g)
