"""A state document becomes a MegaMCP initial snapshot: a group created from it serves the
document's records and files through the bundle's own read tools; what did not fit is reported."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from weft_envsynth import EnvSynthUserError
from weft_envsynth.cli import main
from weft_envsynth.statesnapshot import build_initial_state, snapshot_from_state

megamcp = pytest.importorskip("weft_megamcp")

from weft_megamcp.client import MegaMCPClient  # noqa: E402
from weft_megamcp.host import MegaMCPHost  # noqa: E402
from weft_megamcp.settings import MegaMCPSettings  # noqa: E402

_DOC = {
    "customers": {"C-77": {"name": "Ada Lovelace", "email": "ada@example.org"}},
    "tickets": [
        {
            "ticket_id": "T-900",
            "customer_id": "C-77",
            "subject": "Printer on fire",
            "priority": "high",
            "mood": "grumpy",  # no such field: must be reported
        }
    ],
    "weather": {"today": "rain"},  # no such entity: must be reported
    "files": {"notes/handover.txt": "call Ada back"},
}


@pytest.fixture(scope="module")
def files_bundle(tmp_path_factory: pytest.TempPathFactory, examples_dir: Path) -> Path:
    from weft_envsynth.pipeline import synthesize_file

    result = synthesize_file(examples_dir / "files.json", tmp_path_factory.mktemp("files"))
    assert result.status == "certified" and result.bundle is not None, result
    return Path(result.bundle)


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[MegaMCPClient]:
    settings = MegaMCPSettings(
        data_dir=tmp_path / "megamcp", admin_token="admin-secret-token", offload_after_s=3600
    )
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as c,
    ):
        yield c


@pytest.mark.integration
async def test_group_from_a_state_snapshot_serves_its_records_and_files(
    client: MegaMCPClient, helpdesk_bundle: Path, files_bundle: Path
) -> None:
    desk = (await client.register(helpdesk_bundle)).mcp_id
    files = (await client.register(files_bundle)).mcp_id
    s1 = await snapshot_from_state(helpdesk_bundle, _DOC, client, desk)
    # A file tree whose one top folder is the workspace root (the real filesystem server's
    # directory_tree shape).
    q3 = {"q3.md": {"type": "file", "content": "ship it"}}
    tree = {"type": "directory", "contents": {"plan": {"type": "directory", "contents": q3}}}
    s2 = await snapshot_from_state(files_bundle, {"tree": {"root": tree}}, client, files)
    assert s1.db_uri.startswith("sha256:") and s1.workspace_uri and s2.workspace_uri
    # Nothing silently dropped: the unknown field and the unknown entity are named.
    assert any(line.startswith("tickets[0].mood:") for line in s1.report.not_imported)
    assert any(line.startswith("weather:") for line in s1.report.not_imported)
    assert s1.report.rows == {"customer": 1, "ticket": 1} and s1.report.files == 1
    assert s2.report.files == 1 and not s2.report.not_imported

    group = await client.create_group(
        {**s1.mcps(), **s2.mcps()}, workspaces={**s1.workspaces(), **s2.workspaces()}
    )
    ticket = await client.call_tool(group, desk, "get_ticket", {"ticket_id": "T-900"})
    assert not ticket.is_error, ticket.text
    assert "Printer on fire" in ticket.text and "C-77" in ticket.text
    listed = await client.call_tool(group, desk, "list_tickets", {})
    assert "T-900" in listed.text
    note = await client.call_tool(group, files, "read_file", {"path": "/plan/q3.md"})
    assert not note.is_error and "ship it" in note.text
    # A second group from the same snapshot starts from the document again, not from the first
    # group's changes.
    await client.call_tool(group, files, "write_file", {"path": "/plan/q3.md", "content": "x"})
    again = await client.create_group(s2.mcps(), workspaces=s2.workspaces())
    note = await client.call_tool(again, files, "read_file", {"path": "/plan/q3.md"})
    assert "ship it" in note.text


def test_build_writes_db_workspace_and_report(helpdesk_bundle: Path, tmp_path: Path) -> None:
    built = build_initial_state(helpdesk_bundle, _DOC, tmp_path / "out")
    assert built.workspace is not None
    assert (built.workspace / "notes" / "handover.txt").read_text() == "call Ada back"
    con = sqlite3.connect(built.db_path)
    try:
        assert con.execute("SELECT subject FROM ticket WHERE ticket_id='T-900'").fetchone() == (
            "Printer on fire",
        )
        # The seed's rows are still there: the document is loaded on top of the seed.
        assert con.execute("SELECT COUNT(*) FROM ticket").fetchone()[0] > 1
    finally:
        con.close()
    saved = json.loads((tmp_path / "out" / "state-report.json").read_text())
    assert saved["not_imported"] == built.report.not_imported
    # A second build into the same folder would merge rows silently: refused.
    with pytest.raises(EnvSynthUserError, match="already exists"):
        build_initial_state(helpdesk_bundle, _DOC, tmp_path / "out")


def test_no_files_and_no_seed_workspace_means_no_workspace(
    helpdesk_bundle: Path, tmp_path: Path
) -> None:
    built = build_initial_state(helpdesk_bundle, {"customers": [{"name": "Bo"}]}, tmp_path / "o")
    assert built.workspace is None and built.report.rows == {"customer": 1}


def test_cli_snapshot_writes_the_folder_and_lists_what_did_not_fit(
    helpdesk_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps(_DOC))
    out = tmp_path / "snap"
    assert main(["snapshot", str(helpdesk_bundle), "--state", str(state), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "not imported: tickets[0].mood" in err and "not imported: weather" in err
    assert (out / "state.sqlite").is_file() and (out / "workspace" / "notes").is_dir()
    # --strict: something did not fit, so the command fails (the files are still written).
    out2 = tmp_path / "snap2"
    argv = ["snapshot", str(helpdesk_bundle), "--state", str(state), "-o", str(out2), "--strict"]
    assert main(argv) == 1
    assert main(["snapshot", str(tmp_path), "--state", str(state), "-o", str(out2)]) == 2
