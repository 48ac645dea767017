"""A session DB survives a kill -9 in the middle of a write transaction (recovery resumes from
the local file, so it must never be torn): a real subprocess with the host's SQLite settings."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a subprocess writing ~2 MB: 20-35 s on a loaded 2-core machine

WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import sqlalchemy as sa
    from weft_megamcp.session_sqlite import apply_to_sessions_under

    groups = Path(sys.argv[1])
    db = groups / "grp_0" / "m" / "state.sqlite"
    apply_to_sessions_under(groups)
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as con:
        con.exec_driver_sql("create table t (id integer primary key, v text)")
        for i in range(2000):
            con.exec_driver_sql("insert into t (v) values (?)", (f"committed {i} " + "y" * 200,))
    with engine.connect() as con:
        con.exec_driver_sql("PRAGMA cache_size=8")  # spill pages into the file mid-transaction
        con.exec_driver_sql("begin")
        con.exec_driver_sql("update t set v = 'torn ' || v")
        for i in range(3000):
            con.exec_driver_sql("insert into t (v) values (?)", ("x" * 500,))
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_kill_9_mid_transaction_leaves_the_committed_state(tmp_path: Path) -> None:
    groups = tmp_path / "groups"
    (groups / "grp_0" / "m").mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(groups)], capture_output=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    con = sqlite3.connect(groups / "grp_0" / "m" / "state.sqlite")  # rolls a hot journal back
    try:
        check = con.execute("PRAGMA integrity_check").fetchall()
        rows = [r[0] for r in con.execute("select v from t order by id")]
    finally:
        con.close()
    # With the old in-memory journal the spilled pages of the update stayed in the file:
    # "Rowid out of order" and a wrong row count.
    assert check == [("ok",)], str(check)[:300]
    assert rows == [f"committed {i} " + "y" * 200 for i in range(2000)]
