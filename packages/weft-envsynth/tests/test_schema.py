from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from weft_core.models import MCPSpec
from weft_envsynth._internal.assemble import load_metadata
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.schema import check_schema, render_models, schema_programmatic


def _models(tmp_path: Path, spec: MCPSpec, name: str = "models.py") -> Path:
    m = schema_programmatic(spec, analyze_programmatic(spec))
    p = tmp_path / name
    p.write_text(render_models(m, title=spec.name))
    return p


def test_models_enforce_types_fk_unique_enum(tmp_path: Path, helpdesk_spec: MCPSpec) -> None:
    import sqlalchemy as sa

    md = load_metadata(_models(tmp_path, helpdesk_spec))
    db = tmp_path / "x.sqlite"
    engine = sa.create_engine(f"sqlite:///{db}")
    md.create_all(engine)
    engine.dispose()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(
        "INSERT INTO customer (customer_id, name, email) VALUES ('CUS-0001', 'A', 'a@example.com')"
    )
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        conn.execute(
            "INSERT INTO customer (customer_id, name, email) VALUES ('CUS-0002', 'B', 'a@example.com')"
        )
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        conn.execute("INSERT INTO ticket (ticket_id, customer_id) VALUES ('TIC-1', 'CUS-9999')")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute(
            "INSERT INTO ticket (ticket_id, customer_id, priority) VALUES ('TIC-1', 'CUS-0001', 'whenever')"
        )
    conn.execute(
        "INSERT INTO ticket (ticket_id, customer_id, priority) VALUES ('TIC-1', 'CUS-0001', 'high')"
    )


def test_two_bundles_with_equal_table_names_coexist(tmp_path: Path, helpdesk_spec: MCPSpec) -> None:
    a = load_metadata(_models(tmp_path, helpdesk_spec, "a.py"))
    other = helpdesk_spec.model_copy(
        update={"name": "Other Desk", "tools": helpdesk_spec.tools[:3]}
    )
    b = load_metadata(_models(tmp_path, other, "b.py"))
    assert "ticket" in a.tables and "ticket" in b.tables and a is not b


def test_check_schema_catches_missing_fields_and_bad_keys(helpdesk_spec: MCPSpec) -> None:
    analysis = analyze_programmatic(helpdesk_spec)
    good = schema_programmatic(helpdesk_spec, analysis)
    assert check_schema(good, analysis) == []
    ticket = good.entity("ticket")
    broken_ticket = ticket.model_copy(
        update={"fields": [f for f in ticket.fields if f.name != "priority"]}
    )
    broken = good.model_copy(
        update={"entities": [broken_ticket if e.name == "ticket" else e for e in good.entities]}
    )
    assert any("ticket.priority" in p for p in check_schema(broken, analysis))
