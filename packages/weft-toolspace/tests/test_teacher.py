"""The workflow teacher reads values out of results and carries them into the next call; over
many seeded episodes on an in-memory imitation of the five real servers (results shaped as the
real servers return them, RESULTS.md h16f traces) its traces mine a graph whose nodes mostly have
out-edges and whose cycles cross servers. No servers are started."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import networkx as nx

from weft_toolspace.graph import build_graph
from weft_toolspace.models import EdgeKind, TraceCall, TraceRecord
from weft_toolspace.teacher import Notebook, TeacherPolicy, read_result


def _schema(*required: str) -> dict[str, Any]:
    return {"type": "object", "properties": {a: {} for a in required}, "required": list(required)}


TOOLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "filesystem": [
        ("write_file", _schema("path", "content")),
        ("read_text_file", _schema("path")),
        ("read_multiple_files", _schema("paths")),
        ("edit_file", _schema("path", "edits")),
        ("list_directory", _schema("path")),
    ],
    "memory": [
        ("create_entities", _schema("entities")),
        ("add_observations", _schema("observations")),
        ("open_nodes", _schema("names")),
        ("search_nodes", _schema("query")),
        ("create_relations", _schema("relations")),
        ("read_graph", _schema()),
    ],
    "sqlite": [
        ("create_table", _schema("query")),
        ("write_query", _schema("query")),
        ("read_query", _schema("query")),
        ("list_tables", _schema()),
    ],
    "git": [
        ("git_create_branch", _schema("repo_path", "branch_name")),
        ("git_checkout", _schema("repo_path", "branch_name")),
        ("git_branch", _schema("repo_path", "branch_type")),
        ("git_status", _schema("repo_path")),
        ("git_diff", _schema("repo_path", "target")),
        ("git_log", _schema("repo_path")),
        ("git_show", _schema("repo_path", "revision")),
    ],
    "time": [
        ("get_current_time", _schema("timezone")),
        ("convert_time", _schema("source_timezone", "time", "target_timezone")),
    ],
    "helpdesk": [
        ("list_tickets", {"type": "object", "properties": {}}),
        ("get_ticket", _schema("ticket_id")),
        ("add_comment", _schema("ticket_id", "body")),
    ],
}
HASH = "b4fa02047582f3497b23ee81c3e0b75719084ce1"
MUTATES = {"write_file", "edit_file", "create_entities", "add_observations", "create_relations"}
MUTATES |= {"create_table", "write_query", "git_create_branch", "git_checkout", "add_comment"}


class World:
    """Server state of one episode, answering as the real servers do (simplified)."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.entities: dict[str, list[str]] = {}
        self.tables: dict[str, list[dict[str, Any]]] = {}
        self.branches = ["master"]
        self.head = "master"
        self.tickets = {f"TIC-000{i}": f"ticket {i}" for i in range(1, 4)}

    def call(self, tool: str, a: dict[str, Any]) -> tuple[bool, Any]:
        if tool == "write_file":
            self.files[a["path"]] = a["content"]
            return True, f"Successfully wrote to {a['path']}"
        if tool in ("read_text_file", "edit_file"):
            if a["path"] not in self.files:
                return False, "ENOENT"
            if tool == "edit_file":
                diff = f"```diff\nIndex: /session/workspace/{a['path']}\n"
                for e in a["edits"]:
                    if e["oldText"] not in self.files[a["path"]]:
                        return False, "Could not find exact match for edit"
                    self.files[a["path"]] = self.files[a["path"]].replace(
                        e["oldText"], e["newText"]
                    )
                    diff += f"-{e['oldText']}\n+{e['newText']}\n"
                return True, diff + "```"
            return True, self.files[a["path"]]
        if tool == "read_multiple_files":
            return True, "".join(f"{p}:\n{self.files.get(p, 'ENOENT')}\n" for p in a["paths"])
        if tool == "list_directory":
            return True, "\n".join(f"[FILE] {p}" for p in self.files)
        if tool == "create_entities":
            new = [e for e in a["entities"] if e["name"] not in self.entities]
            for e in new:
                self.entities[e["name"]] = list(e["observations"])
            return True, {"entities": new}
        if tool == "add_observations":
            o = a["observations"][0]
            if o["entityName"] not in self.entities:
                return False, "not found"
            self.entities[o["entityName"]] += o["contents"]
            return True, {
                "results": [{"entityName": o["entityName"], "addedObservations": o["contents"]}]
            }
        if tool in ("open_nodes", "read_graph", "search_nodes"):
            names = a.get("names") or [n for n in self.entities if a.get("query", n) in n]
            ents = [
                {"name": n, "entityType": "x", "observations": self.entities[n]}
                for n in names
                if n in self.entities
            ]
            return True, {"entities": ents, "relations": []}
        if tool == "create_relations":
            return True, {"relations": a["relations"]}
        if tool == "create_table":
            t = re.findall(r"TABLE (\w+)", a["query"])[0]
            self.tables[t] = []
            return True, "Table created successfully"
        if tool == "write_query":
            t = re.findall(r"(?:INTO|UPDATE) (\w+)", a["query"])[0]
            if t not in self.tables:
                return False, "no such table"
            m = re.search(r"VALUES \('([^']+)', '([^']*)'\)", a["query"])
            if m:
                self.tables[t].append({"id": len(self.tables[t]) + 1, "name": m[1], "note": m[2]})
            return True, [{"affected_rows": 1}]
        if tool == "read_query":
            t = re.findall(r"FROM (\w+)", a["query"])[0]
            return (t in self.tables), self.tables.get(t, "no such table")
        if tool == "list_tables":
            return True, [{"name": t} for t in self.tables]
        if tool == "git_create_branch":
            self.branches.append(a["branch_name"])
            return True, f"Created branch '{a['branch_name']}' from 'master'"
        if tool == "git_checkout":
            self.head = a["branch_name"]
            return (a["branch_name"] in self.branches), f"Switched to branch '{a['branch_name']}'"
        if tool == "git_branch":
            return True, "\n".join(("* " if b == self.head else "  ") + b for b in self.branches)
        if tool == "git_status":
            return True, f"Repository status:\nOn branch {self.head}\nnothing to commit"
        if tool == "git_diff":
            return True, f"Diff with {a['target']}:\n"
        if tool == "git_log":
            return True, f"Commit history:\nCommit: {HASH}\nMessage: initial commit\n"
        if tool == "git_show":
            return True, f"commit {HASH}\n\n    initial commit\n"
        if tool == "get_current_time":
            z = a["timezone"]
            return True, {
                "timezone": z,
                "datetime": "2026-12-02T16:01:26+00:00",
                "day_of_week": "Wednesday",
            }
        if tool == "convert_time":
            src, dst = a["source_timezone"], a["target_timezone"]
            return True, {"source": {"timezone": src}, "target": {"timezone": dst}}
        if tool == "list_tickets":
            return True, {
                "items": [{"ticket_id": k, "subject": v} for k, v in self.tickets.items()]
            }
        if tool in ("get_ticket", "add_comment"):
            tid = a["ticket_id"]
            if tid not in self.tickets:
                return False, f"ticket '{tid}' not found"
            return True, {"ticket": {"ticket_id": tid, "subject": self.tickets[tid]}}
        raise AssertionError(tool)


def episode(seed: int, steps: int = 24) -> TraceRecord:
    policy, world = TeacherPolicy(TOOLS, seed=seed), World()
    calls = []
    for _ in range(steps):
        mcp, tool, args = policy.next_call()
        ok, result = world.call(tool, args)
        policy.observe(mcp, tool, args, result, ok)
        calls.append(
            TraceCall(
                mcp=mcp,
                tool=tool,
                arguments=args,
                result=result if ok else None,
                error=None if ok else str(result),
                mutated=ok and tool in MUTATES,
            )
        )
    return TraceRecord(id=f"t{seed}", source="ledger", calls=calls)


def test_results_are_read_into_values_to_carry() -> None:
    book = Notebook()
    seen = read_result("parser: draft\nledger: blocked\nsee TIC-0004", book)
    assert {"parser", "ledger"} <= set(seen.subjects) and "draft" in seen.details
    assert read_result("Successfully wrote to parser.md", book).paths == ["parser.md"]
    assert read_result("Created branch 'feature/parser' from 'master'", book).branches == [
        "feature/parser"
    ]
    assert read_result(f"Commit: {HASH}", book).hashes == [HASH]
    assert read_result([{"name": "components"}], book).tables == ["components"]
    rows = read_result([{"id": 1, "name": "gateway", "note": "flaky"}], book)
    assert rows.subjects == ["gateway"] and rows.details == ["flaky"]
    # An id seen under its key is recognised by its shape inside text later.
    read_result({"ticket": {"ticket_id": "TIC-0001"}}, book)
    assert read_result("note: TIC-0042 is open", book).ids == {"ticket_id": ["TIC-0042"]}


def test_the_next_call_carries_what_the_last_result_showed() -> None:
    followed = 0
    for seed in range(20):
        p = TeacherPolicy(TOOLS, seed=seed)
        p.observe("filesystem", "read_text_file", {"path": "a.md"}, "parser: draft", True)
        assert all("parser" in str(a[2]) for a in p._follow())
        _, _, args = p.next_call()
        followed += "parser" in str(args)
    assert followed >= 15  # now and then it opens new work instead (WANDER)


def test_an_entity_that_exists_gets_observations_not_a_second_create() -> None:
    p = TeacherPolicy({"memory": TOOLS["memory"]}, seed=1)
    p.observe("memory", "create_entities", {"entities": [{"name": "parser"}]}, {}, True)
    p.observe("filesystem", "read_text_file", {"path": "a.md"}, "parser: shipped", True)
    tools = {a[1] for a in p._follow()}
    assert "create_entities" not in tools and "add_observations" in tools
    # Looked up only where memory showed it: a lookup of a name read elsewhere may find nothing.
    assert "open_nodes" not in tools
    p.observe("memory", "read_graph", {}, {"entities": [{"name": "parser"}]}, True)
    assert "open_nodes" in {a[1] for a in p._follow()}


def test_ids_a_result_showed_go_into_example_mcp_calls() -> None:
    p = TeacherPolicy({"helpdesk": TOOLS["helpdesk"]}, seed=0)
    p.observe("helpdesk", "list_tickets", {}, {"items": [{"ticket_id": "TIC-0002"}]}, True)
    follow = p._follow()
    assert {(a[1], a[2]["ticket_id"]) for a in follow} == {
        ("get_ticket", "TIC-0002"),
        ("add_comment", "TIC-0002"),
    }


def test_episodes_are_seeded_and_differ_by_seed() -> None:
    assert episode(3) == episode(3)
    assert [c.tool for c in episode(3).calls] != [c.tool for c in episode(4).calls]


def test_episodes_do_different_work() -> None:
    calls = episode(5, steps=30).calls
    assert len({c.tool for c in calls}) >= 10
    assert max(Counter(c.tool for c in calls).values()) <= 8
    assert sum(not c.ok for c in calls) <= 6


def test_recorded_transitions_recur_into_a_cyclic_cross_server_graph() -> None:
    """State edges are not witnessed here (no servers): data edges alone, min_count 2."""
    graph = build_graph([episode(s) for s in range(24)], min_count=2)
    data = [e for e in graph.edges if e.kind is EdgeKind.DATA]
    assert len(data) >= 30
    g = nx.DiGraph((e.source, e.target) for e in data)
    servers = {n: n.split("/")[0] for n in g}
    core = max(nx.strongly_connected_components(g), key=len)
    assert len(core) >= 8 and len({servers[n] for n in core}) >= 3
    sinks = [n for n in g if g.out_degree(n) == 0]
    assert len(sinks) <= len(g) // 4, sinks
