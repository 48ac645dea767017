"""Session DBs get scratch SQLite settings; other SQLite files (the registry) keep the defaults."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from weft_megamcp.session_sqlite import apply_to_sessions_under


def _pragmas(path: Path) -> tuple[int, str]:
    engine = sa.create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with engine.connect() as con:
            sync = con.exec_driver_sql("PRAGMA synchronous").scalar_one()
            journal = con.exec_driver_sql("PRAGMA journal_mode").scalar_one()
            return int(sync), str(journal).lower()
    finally:
        engine.dispose()


def test_session_db_under_groups_dir_is_scratch(tmp_path: Path) -> None:
    groups = tmp_path / "data" / "groups"
    session = groups / "grp_1" / "notes" / "state.sqlite"
    session.parent.mkdir(parents=True)
    other = tmp_path / "data" / "registry.sqlite"
    apply_to_sessions_under(groups)
    assert _pragmas(session) == (0, "persist")  # synchronous=OFF, a kill-safe file journal
    assert _pragmas(other) == (2, "delete")  # SQLite's defaults: FULL, file journal
