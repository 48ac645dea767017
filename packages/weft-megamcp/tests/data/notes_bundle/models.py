"""Tables of the hand-written test bundle (own SQLModel registry so bundles never collide)."""

from __future__ import annotations

from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

_reg = registry()


class Base(SQLModel, registry=_reg):
    pass


class Contact(Base, table=True):
    __tablename__ = "contact"

    id: int | None = Field(default=None, primary_key=True)
    name: str
    email: str
    tier: str = "basic"


METADATA = _reg.metadata
