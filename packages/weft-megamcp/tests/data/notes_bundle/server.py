"""A small hand-written EnvBundle server: contacts in the session DB, notes in the workspace."""

from __future__ import annotations

import os
import threading

from fastmcp import FastMCP
from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import QueuePool
from sqlmodel import Session, select

from weft_core.binding import current_binding, register_release_hook, resolve_in_workspace

from .models import Contact

_engines: dict[str, tuple[Engine, tuple[int, int] | None]] = {}  # path: (engine, file id)
_session_paths: dict[str, str] = {}
_lock = threading.Lock()


def _engine() -> Engine:
    b = current_binding()
    key = str(b.db_path)
    # The kept connection must not outlive its file (a recovery may replace it without release).
    st = os.stat(key) if os.path.exists(key) else None
    file_id = (st.st_dev, st.st_ino) if st else None
    with _lock:
        cached = _engines.get(key)
        if cached is not None and cached[1] != file_id:
            cached[0].dispose()
            cached = None
        if cached is None:
            # One connection kept per session DB (closed by the release hook); an overlapping
            # call gets an extra one, closed when it returns.
            engine = create_engine(
                f"sqlite:///{key}",
                poolclass=QueuePool,
                pool_size=1,
                max_overflow=-1,
                connect_args={"check_same_thread": False},
            )
            cached = _engines[key] = (engine, file_id)
            _session_paths[b.session_id] = key
        return cached[0]


def _release(session_id: str) -> None:
    with _lock:
        key = _session_paths.pop(session_id, None)
        cached = _engines.pop(key, None) if key else None
    if cached is not None:
        cached[0].dispose()


def create_server() -> FastMCP:
    register_release_hook(_release)
    mcp = FastMCP("notes_crm")

    @mcp.tool
    def add_contact(name: str, email: str, tier: str = "basic") -> dict:
        """Create a contact and return it."""
        if "@" not in email:
            raise ValueError(f"invalid email {email!r}")
        with Session(_engine()) as s:
            c = Contact(name=name, email=email, tier=tier)
            s.add(c)
            s.commit()
            s.refresh(c)
            return c.model_dump()

    @mcp.tool
    def list_contacts() -> list[dict]:
        """All contacts, by id."""
        with Session(_engine()) as s:
            return [c.model_dump() for c in s.exec(select(Contact).order_by(Contact.id)).all()]

    @mcp.tool
    def update_email(contact_id: int, email: str) -> dict:
        """Change a contact's email."""
        with Session(_engine()) as s:
            c = s.get(Contact, contact_id)
            if c is None:
                raise ValueError(f"contact {contact_id} not found")
            c.email = email
            s.add(c)
            s.commit()
            s.refresh(c)
            return c.model_dump()

    @mcp.tool
    def delete_contact(contact_id: int) -> str:
        """Delete a contact."""
        with Session(_engine()) as s:
            c = s.get(Contact, contact_id)
            if c is None:
                raise ValueError(f"contact {contact_id} not found")
            s.delete(c)
            s.commit()
            return "deleted"

    @mcp.tool
    def write_note(path: str, text: str) -> str:
        """Write a text note into the workspace."""
        target = resolve_in_workspace(current_binding().workspace, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters"

    @mcp.tool
    def read_note(path: str) -> str:
        """Read a text note from the workspace."""
        target = resolve_in_workspace(current_binding().workspace, path)
        if not target.exists():
            raise ValueError(f"no note at {path}")
        return target.read_text(encoding="utf-8")

    @mcp.tool
    def where_am_i() -> str:
        """A broken tool that leaks its DB path in an exception (the host must scrub it)."""
        raise RuntimeError(f"cannot open {current_binding().db_path} (workspace {current_binding().workspace})")

    @mcp.tool
    def slow_add(name: str, email: str, seconds: float = 1.0) -> dict:
        """Wait, then create a contact (lets tests interrupt a call in flight)."""
        import time

        time.sleep(min(seconds, 30.0))
        return add_contact(name, email)

    @mcp.tool
    def storage_info() -> dict:
        """A careless tool that returns where its state lives (the host must hide it)."""
        b = current_binding()
        return {"db": str(b.db_path), "workspace": str(b.workspace), "note": "see /api/v1/docs"}

    @mcp.tool
    def purge_all() -> str:
        """Uncertified: the host must not expose it."""
        with Session(_engine()) as s:
            for c in s.exec(select(Contact)).all():
                s.delete(c)
            s.commit()
        return "purged"

    return mcp
