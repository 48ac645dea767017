"""The base of every on-disk artifact: JSON form, schema version, content hash, version."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import Field, ValidationError, model_validator

from weft_core._files import atomic_write_text
from weft_core._hashing import content_hash
from weft_core._model import WeftModel
from weft_core.exceptions import ArtifactError

__all__ = ["Artifact", "WeftModel", "artifact_time", "sealed_by_older_rule"]

# Fields that describe an artifact rather than its content, so they never enter its hash.
_HASH_EXCLUDE = {"content_hash", "version", "created_at"}


def artifact_time() -> datetime:
    """When an artifact is created: now, or `SOURCE_DATE_EPOCH` (seconds since 1970, UTC) when
    set, the reproducible-builds convention, so two runs can be compared byte for byte."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if pinned:
        try:
            return datetime.fromtimestamp(int(pinned), UTC)
        except (ValueError, OverflowError, OSError):
            raise ArtifactError(
                f"SOURCE_DATE_EPOCH={pinned!r} is not a whole number of seconds since 1970"
            ) from None
    return datetime.now(UTC)


class Artifact(WeftModel):
    """An artifact that flows between packages.

    Contract: `schema_version` is the format version of the class (newer files are refused);
    `version` is the revision of this content (a revision gets a new version, never overwrites);
    `content_hash` is `sha256:` of the canonical JSON of everything else, filled by `sealed()`
    and checked on load so a hand-edited or truncated file is caught.
    """

    SCHEMA_VERSION: ClassVar[int] = 1
    # Fields a subclass records about where its content came from (never hashed: the same
    # content read from two places must hash the same).
    PROVENANCE_FIELDS: ClassVar[frozenset[str]] = frozenset()
    # Nested fields the clock writes (when something ran, how long it took), in pydantic's
    # `exclude` form: not content, so two runs of the same work hash the same.
    CLOCK_FIELDS: ClassVar[dict[str, Any]] = {}
    # Optional fields added after files were written: left out of the hash while unset, so
    # adding one does not change the hash of existing artifacts.
    OMIT_WHEN_UNSET: ClassVar[frozenset[str]] = frozenset()
    # The same for fields added to the items of a list field: {list field: {item fields}}.
    OMIT_ITEM_FIELDS_WHEN_UNSET: ClassVar[dict[str, frozenset[str]]] = {}

    schema_version: int = Field(default=1, description="Format version of this artifact class.")
    version: int = Field(default=1, ge=1, description="Revision number of this content.")
    content_hash: str | None = Field(
        default=None, description="sha256 of the content; set by sealed()."
    )

    @model_validator(mode="after")
    def _check_schema_version(self) -> Self:
        if self.schema_version > self.SCHEMA_VERSION:
            raise ValueError(
                f"{type(self).__name__} schema_version {self.schema_version} is newer than this "
                f"weft-core understands ({self.SCHEMA_VERSION}); upgrade weft-core"
            )
        return self

    def hashed_content(self) -> dict[str, Any]:
        """The JSON data `content_hash` covers (what is content, not provenance or clock)."""
        exclude: dict[str, Any] = dict.fromkeys(_HASH_EXCLUDE | self.PROVENANCE_FIELDS, True)
        data = self.model_dump(mode="json", exclude=exclude | self.CLOCK_FIELDS)
        for name in self.OMIT_WHEN_UNSET:
            if data.get(name) is None:
                data.pop(name, None)
        for name, fields in self.OMIT_ITEM_FIELDS_WHEN_UNSET.items():
            for item in data.get(name) or []:
                for field in fields:
                    if isinstance(item, dict) and item.get(field) is None:
                        item.pop(field, None)
        return data

    def compute_hash(self) -> str:
        return content_hash(self.hashed_content())

    def sealed(self) -> Self:
        """A copy with `content_hash` filled in."""
        return self.model_copy(update={"content_hash": self.compute_hash()})

    def revised(self, **changes: Any) -> Self:
        """A new revision: changes applied, version bumped, hash recomputed."""
        data = self.model_dump() | changes | {"version": self.version + 1, "content_hash": None}
        return type(self).model_validate(data).sealed()

    def verify_hash(self) -> None:
        if self.content_hash is not None and self.content_hash != self.compute_hash():
            raise ArtifactError(f"{type(self).__name__} content does not match its content_hash")

    def to_json(self, *, indent: int | None = 2) -> str:
        return self.sealed().model_dump_json(indent=indent, exclude_none=False)

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "<string>") -> Self:
        try:
            obj = cls.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise ArtifactError(
                f"{source}: not a valid {cls.__name__}: {loc}: {first['msg']} ({exc.error_count()} error(s))"
            ) from None
        try:
            obj.verify_hash()
        except ArtifactError as exc:
            if not sealed_by_older_rule(text):
                raise ArtifactError(f"{source}: {exc}") from None
            # Intact, but sealed when the hash still covered provenance or clock fields (or
            # before a field was added): the same content under today's rule.
            obj = obj.sealed()
        return obj

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (temp file + rename) so a crash never leaves a half-written file."""
        return atomic_write_text(Path(path), self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ArtifactError(f"{p}: cannot read: {exc.strerror}") from None
        return cls.from_json(text, source=str(p))


def sealed_by_older_rule(text: str | bytes) -> bool:
    """Whether a file's `content_hash` is that of all its other fields but `version` and
    `created_at`, as weft-core hashed every artifact before provenance (`MCPSpec.source`) and
    clock fields (`Trace` ledger times) were left out: an intact file of an older run."""
    try:
        raw = json.loads(text)
    except ValueError:
        return False
    if not isinstance(raw, dict) or not isinstance(raw.get("content_hash"), str):
        return False
    stored = raw.pop("content_hash")
    for key in ("version", "created_at"):
        raw.pop(key, None)
    return bool(stored == content_hash(raw))
