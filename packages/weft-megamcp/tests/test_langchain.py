"""The LangChain tools of a group (langchain.mcp.MCPAdapter) call the group's sessions."""

from __future__ import annotations

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.registry import MCPRecord

pytestmark = pytest.mark.integration


async def test_langchain_tools_reach_the_session(client: MegaMCPClient, notes: MCPRecord):
    group = await client.create_group([notes.mcp_id])
    other = await client.create_group([notes.mcp_id])
    tools = {t.name: t for t in await client.langchain_tools(group)}
    assert {"add_contact", "list_contacts"} <= set(tools) and "purge_all" not in tools
    await tools["add_contact"].ainvoke({"name": "Via LangChain", "email": "lc@x.y"})
    ledger = (await client.ledger(group))[notes.mcp_id]
    assert [e.tool for e in ledger] == ["add_contact"]
    assert (
        "Via LangChain" not in (await client.call_tool(other, notes.mcp_id, "list_contacts")).text
    )
    out = await tools["list_contacts"].ainvoke({})
    assert "Via LangChain" in str(out)
