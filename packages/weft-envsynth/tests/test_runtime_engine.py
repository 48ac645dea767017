"""The bundle runtime's session engines: one kept connection per session DB that never serves a
replaced file, and nothing process-wide that would make MegaMCP's screening cap the bundle."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft_core.binding import SessionBinding, bind_session, release_session
from weft_envsynth.loader import import_bundle, unload_bundle


def _names(bundle: Path, db: Path, ws: Path) -> list[Any]:
    from fastmcp import Client

    mod = import_bundle(bundle)

    async def go() -> list[Any]:
        with bind_session(SessionBinding(session_id="t-engine", db_path=db, workspace=ws)):
            async with Client(mod.create_server()) as c:
                r = await c.call_tool("list_tickets", {"limit": 500}, raise_on_error=False)
                assert not r.is_error, r.content
                data = r.structured_content or {}
                items = next(v for v in data.values() if isinstance(v, list))
                return [t["subject"] for t in items]

    return asyncio.run(go())


def test_a_kept_connection_follows_a_replaced_file(helpdesk_bundle: Path, tmp_path: Path) -> None:
    db, ws = tmp_path / "state.sqlite", tmp_path / "ws"
    shutil.copyfile(helpdesk_bundle / "seed.sqlite", db)
    try:
        before = _names(helpdesk_bundle, db, ws)  # the engine and its connection are kept now
        # A recovery that lost the worker's memory puts another file at the path without the
        # release hook (here: a copy holding one more ticket).
        other = tmp_path / "other.sqlite"
        shutil.copyfile(db, other)
        con = sqlite3.connect(other)
        row = con.execute("SELECT * FROM ticket LIMIT 1").fetchone()
        cols = [d[0] for d in con.execute("SELECT * FROM ticket LIMIT 1").description]
        new = dict(zip(cols, row, strict=True)) | {"ticket_id": "TIC-9999", "subject": "Replaced"}
        con.execute(
            f"INSERT INTO ticket ({', '.join(new)}) VALUES ({', '.join('?' * len(new))})",
            list(new.values()),
        )
        con.commit()
        con.close()
        db.unlink()
        other.rename(db)
        after = _names(helpdesk_bundle, db, ws)
        assert "Replaced" in after and len(after) == len(before) + 1
        # A file removed altogether starts again from the seed, not as an empty database.
        db.unlink()
        assert sorted(_names(helpdesk_bundle, db, ws)) == sorted(before)
    finally:
        release_session("t-engine")
        unload_bundle(import_bundle(helpdesk_bundle))


def test_a_synthesized_bundle_shares_a_process(helpdesk_bundle: Path) -> None:
    screening = pytest.importorskip("weft_megamcp.screening")
    report = screening.screen_path(helpdesk_bundle)
    # The runtime's engines are per-session caches emptied by the release hook; a process-wide
    # memo (sqlrt's table names used to be one) would make the bundle `limited`.
    assert report.load_class is screening.LoadClass.SHARED, [
        (f.rule, f.file, f.line) for f in report.findings if f.severity != screening.Severity.INFO
    ]


def test_sessions_share_compiled_statements_and_keep_foreign_keys(
    helpdesk_bundle: Path, tmp_path: Path
) -> None:
    """A new session's engine reuses what earlier sessions compiled (SQLAlchemy keys its cache by
    dialect: engines made by create_engine() per session missed on every statement of every new
    session), and still gets the connect hooks create_engine() would have added."""
    import importlib

    import sqlalchemy as sa

    mod = import_bundle(helpdesk_bundle)
    rt = importlib.import_module(mod.__name__.rsplit(".", 1)[0] + ".runtime")
    hits: list[str] = []

    def record(_c: Any, _cur: Any, _stmt: str, _p: Any, context: Any, _many: bool) -> None:
        hits.append(str(context.cache_hit).rsplit(".", 1)[-1])

    sa.event.listen(sa.Engine, "before_cursor_execute", record)
    try:
        for sid in ("t-cache-1", "t-cache-2"):
            db = tmp_path / f"{sid}.sqlite"
            shutil.copyfile(helpdesk_bundle / "seed.sqlite", db)
            engine = rt.engine_for(db, sid)
            with engine.connect() as conn:
                fk = conn.exec_driver_sql("PRAGMA foreign_keys").scalar()
                ticket = sa.table("ticket", sa.column("ticket_id"))
                conn.execute(sa.select(ticket.c.ticket_id).where(ticket.c.ticket_id == sid))
                regexp = conn.exec_driver_sql("SELECT 'TIC-1' REGEXP 'TIC-[0-9]'").scalar()
            assert fk == 1 and regexp == 1
            rt.release(sid)
    finally:
        sa.event.remove(sa.Engine, "before_cursor_execute", record)
    compiled = [h for h in hits if h in ("CACHE_MISS", "CACHE_HIT")]
    assert compiled == ["CACHE_MISS", "CACHE_HIT"], hits
    unload_bundle(mod)
