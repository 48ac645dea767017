"""The programmatic explorer reads results into facts and uses them in the next call (no servers:
schemas as the real servers publish them, results as they return them)."""

from __future__ import annotations

import json
from typing import Any

from weft_toolspace.episodes import considered
from weft_toolspace.explore import (
    BRANCH,
    ENTITY,
    PATH,
    REV,
    ROW,
    ExplorerPolicy,
    Memory,
    observe,
    role,
)


def _schema(*required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {a: {"type": "string"} for a in required},
        "required": list(required),
    }


TOOLS = {
    "sqlite": [
        ("read_query", _schema("query")),
        ("write_query", _schema("query")),
        ("create_table", _schema("query")),
        ("list_tables", _schema()),
        ("describe_table", _schema("table_name")),
    ],
    "memory": [
        ("create_entities", _schema("entities")),
        ("open_nodes", _schema("names")),
        ("read_graph", _schema()),
        ("add_observations", _schema("observations")),
    ],
}
ROWS = [{"id": 1, "name": "Ada Lovelace", "note": "engines"}]


def test_results_become_facts() -> None:
    m = Memory()
    observe(m, "list_directory", {"path": "."}, "[FILE] a.md\n[DIR] docs", True)
    assert {(f.kind, f.value) for f in m.fresh} == {(PATH, "a.md"), ("dir", "docs")}
    observe(m, "read_query", {"query": "SELECT * FROM staff"}, ROWS, True)
    assert [(f.kind, f.scope) for f in m.fresh] == [(ROW, "staff")]
    observe(m, "git_log", {}, "Commit history:\nCommit: b4fa02047582\nAuthor: w", True)
    assert [(f.kind, f.value) for f in m.fresh] == [(REV, "b4fa02047582")]
    observe(m, "git_branch", {}, "* master\n  topic-x", True)
    assert [f.value for f in m.of(BRANCH, fresh=True)] == ["master", "topic-x"]
    observe(m, "open_nodes", {}, {"entities": [{"name": "Ada", "observations": ["x"]}]}, True)
    assert m.of(ENTITY, fresh=True)[0].value == "Ada"
    observe(m, "read_graph", {}, {"entities": []}, False)  # an error shows nothing
    assert m.fresh == [] and len(m.facts) > 5


def test_argument_roles_come_from_names_and_verbs() -> None:
    assert role("write_file", "path") == "new-file"
    assert role("read_text_file", "path") == PATH
    assert role("list_directory", "path") == "dir"
    assert role("read_query", "query") == "sql-read" and role("search_nodes", "query") == "search"
    assert role("git_create_branch", "branch_name") == "new-branch"
    assert role("git_checkout", "branch_name") == BRANCH
    assert considered("Read a file. DEPRECATED: use read_text_file") is False
    assert considered("Read an image or audio file") is False
    assert considered("Read the contents of a text file") is True


def test_the_next_call_uses_what_the_last_result_showed() -> None:
    used = 0
    for seed in range(30):
        p = ExplorerPolicy(TOOLS, seed=seed)
        p.observe("sqlite", "read_query", {"query": "SELECT * FROM staff"}, ROWS, True)
        _mcp, _tool, args = p.next_call()
        used += "Ada Lovelace" in json.dumps(args) or "engines" in json.dumps(args)
    assert used >= 20, used


def test_after_an_error_it_turns_to_another_tool_of_that_server_that_discovers() -> None:
    turned = 0
    for seed in range(20):
        p = ExplorerPolicy(TOOLS, seed=seed)
        p.observe("sqlite", "read_query", {"query": "SELECT * FROM nope"}, "no such table", False)
        mcp, tool, _ = p.next_call()
        turned += mcp == "sqlite" and tool in ("list_tables", "describe_table")
    assert turned >= 14, turned


def test_it_never_repeats_the_call_it_just_made() -> None:
    for seed in range(10):
        tools = [
            ("get_current_time", _schema("timezone")),
            ("convert_time", _schema("source_timezone", "time", "target_timezone")),
        ]
        p = ExplorerPolicy({"time": tools}, seed=seed)
        prev = None
        for _ in range(6):
            call = p.next_call()
            zone = call[2].get("timezone", call[2].get("source_timezone"))
            p.observe(call[0], call[1], call[2], {"timezone": zone}, True)
            assert call != prev
            prev = call


def _ticket_tools() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    return {
        "helpdesk": [
            ("create_ticket", _schema("customer_id", "subject")),
            ("get_ticket", _schema("ticket_id")),
            ("add_comment", _schema("ticket_id", "body")),
            ("assign_ticket", _schema("ticket_id")),
            ("close_ticket", _schema("ticket_id", "resolution")),
        ]
    }


def test_an_object_it_made_is_taken_through_different_tools_not_one_tool_again() -> None:
    """A ticket the explorer opened is commented, assigned, closed: the same id flows from each
    result into the next, different tool (the adjacent pairs data edges are mined from). The old
    rule let a value into any two calls, so the ticket was dropped after two steps and the
    explorer went back to `create_ticket` with the customer id it still had."""
    ticket = {"ticket": {"ticket_id": "TIC-0009", "customer_id": "CUS-0001"}}
    chained: list[int] = []
    for seed in range(20):
        p = ExplorerPolicy(_ticket_tools(), seed=seed, guess=0.0)
        p.observe("crm", "list_customers", {}, {"items": [{"customer_id": "CUS-0001"}]}, True)
        tools: list[str] = []
        for _ in range(5):
            mcp, tool, args = p.next_call()
            p.observe(mcp, tool, args, ticket, True)
            tools.append(tool)
            if tool != "create_ticket" and args.get("ticket_id") != "TIC-0009":
                break
        # Distinct tools in a row that carried the ticket id.
        chained.append(len(set(tools)) if len(tools) == len(set(tools)) else 0)
    assert sum(n >= 4 for n in chained) >= 14, chained
