"""An id an example MCP returned is noted in a real server (a file, a memory observation) and read
back to act on the object again, so mined graphs join the real servers and the example MCPs.

Before, the explorer wrote notes only from entities, observations, rows and lines, and read ids
only under their own key: no real server's argument ever held an example MCP's id (seed-7 corpus
of h16e: 0 of its real calls), so no data edge joined the two. Servers are simulated in memory
with the schemas and result shapes the real ones publish; the mining is the real `build_graph`."""

from __future__ import annotations

import random
from typing import Any

from weft_toolspace.explore import ExplorerPolicy, Memory, observe
from weft_toolspace.fill import fill_arguments, id_shape
from weft_toolspace.graph import build_graph
from weft_toolspace.models import TraceCall, TraceRecord


def _schema(*required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {a: {"type": "string"} for a in required},
        "required": list(required),
    }


TOOLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "helpdesk": [
        ("create_ticket", _schema("customer_id", "subject")),
        ("update_ticket", _schema("ticket_id")),
        ("get_ticket", _schema("ticket_id")),
        ("add_comment", _schema("ticket_id", "body")),
        ("list_tickets", _schema()),
    ],
    "filesystem": [
        ("write_file", _schema("path", "content")),
        ("read_text_file", _schema("path")),
        ("list_directory", _schema("path")),
    ],
}


class _Servers:
    """A helpdesk numbering its tickets and a folder of text files, in memory."""

    def __init__(self) -> None:
        self.tickets: dict[str, dict[str, Any]] = {
            "TIC-0001": {"ticket_id": "TIC-0001", "customer_id": "CUS-0001", "status": "open"}
        }
        self.files: dict[str, str] = {}

    def call(self, tool: str, a: dict[str, Any]) -> tuple[Any, str | None]:
        if tool == "create_ticket":
            tid = f"TIC-{len(self.tickets) + 1:04d}"
            self.tickets[tid] = {"ticket_id": tid, "customer_id": a["customer_id"]}
            return {"ticket": self.tickets[tid]}, None
        if tool in ("update_ticket", "get_ticket", "add_comment"):
            t = self.tickets.get(a["ticket_id"])
            return ({"ticket": t}, None) if t else (None, f"ticket {a['ticket_id']!r} not found")
        if tool == "list_tickets":
            return {"items": list(self.tickets.values())}, None
        if tool == "write_file":
            self.files[a["path"]] = a["content"]
            return f"Successfully wrote to {a['path']}", None
        if tool == "read_text_file":
            text = self.files.get(a["path"])
            return (text, None) if text is not None else (None, "ENOENT")
        return "\n".join(f"[FILE] {p}" for p in self.files), None


def _episode(seed: int, steps: int = 30) -> TraceRecord:
    policy, servers = ExplorerPolicy(TOOLS, seed=seed), _Servers()
    calls = []
    for _ in range(steps):
        mcp, tool, args = policy.next_call()
        result, error = servers.call(tool, args)
        calls.append(TraceCall(mcp=mcp, tool=tool, arguments=args, result=result, error=error))
        policy.observe(mcp, tool, args, result if error is None else error, error is None)
    return TraceRecord(id=f"sim-{seed}", source="ledger", calls=calls)


def test_an_id_read_back_from_a_note_is_known_as_that_kind_of_id() -> None:
    m = Memory()
    observe(m, "create_ticket", {}, {"ticket": {"ticket_id": "TIC-0007"}}, True)
    observe(m, "read_text_file", {"path": "a.md"}, "TIC-0009: engines\nmeadow", True)
    assert ("id:ticket_id", "TIC-0009") in {(f.kind, f.value) for f in m.fresh}
    # An id the call was given and only echoes back is not news.
    observe(m, "create_entities", {"entities": [{"name": "TIC-0009"}]}, {"name": "TIC-0009"}, True)
    assert not [f for f in m.fresh if f.kind.startswith("id:")]


def test_mined_graph_joins_the_helpdesk_and_the_files_through_noted_ids() -> None:
    traces = [_episode(seed) for seed in range(12)]
    noted = [
        c
        for t in traces
        for c in t.calls
        if c.tool == "write_file" and id_shape(str(c.arguments["content"]).split(":")[0])
    ]
    assert noted, "the explorer never notes an id in a file"
    graph = build_graph(traces, min_count=2)
    across = {
        (e.source, e.target)
        for e in graph.edges
        if e.kind.value == "data" and graph.nodes[e.source].mcp != graph.nodes[e.target].mcp
    }
    assert (
        "helpdesk/create_ticket(customer_id,subject)",
        "filesystem/write_file(content,path)",
    ) in across, across


def test_a_noted_id_read_back_is_rebound_to_the_ticket_this_chain_made() -> None:
    """A read -> update edge recorded with TIC-0002 and TIC-0003; a walk that made TIC-0042 and
    wrote it into its note reads TIC-0042 back: the argument takes the id of the same shape from
    the actual text (the recorded ids are not in it)."""
    traces = [
        TraceRecord(
            id=f"t{i}",
            source="ledger",
            calls=[
                TraceCall(
                    mcp="filesystem",
                    tool="read_text_file",
                    arguments={"path": "a.md"},
                    result=f"{tid}: engines",
                ),
                TraceCall(
                    mcp="helpdesk",
                    tool="update_ticket",
                    arguments={"ticket_id": tid},
                    result={"ticket": {"ticket_id": tid}},
                ),
            ],
        )
        for i, tid in enumerate(("TIC-0002", "TIC-0003"))
    ]
    graph = build_graph(traces, min_count=2)
    (edge,) = [e for e in graph.edges if e.kind.value == "data"]
    args = fill_arguments(graph, edge, "TIC-0042: orbits", random.Random(0), {"path": "x.md"})
    assert args == {"ticket_id": "TIC-0042"}
    # Nothing of that shape in the text: not admissible.
    assert fill_arguments(graph, edge, "engines", random.Random(0), {"path": "x.md"}) is None
