"""What task synthesis reads from one EnvBundle folder: spec, entities, contracts, seed rows."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weft_core.exceptions import ArtifactError
from weft_core.models import ContractSet, EntityModel, EnvBundleManifest, MCPSpec, ToolContract
from weft_tasks.exceptions import BundleError


@dataclass
class BundleView:
    """A read-only view of one certified MCP environment, as task synthesis needs it."""

    path: Path
    spec: MCPSpec
    entities: EntityModel
    contracts: ContractSet
    manifest: EnvBundleManifest | None = None
    _rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def mcp(self) -> str:
        return self.manifest.name if self.manifest else self.spec.slug

    @property
    def domain(self) -> str:
        return self.manifest.domain if self.manifest else self.spec.domain

    @property
    def tools(self) -> list[str]:
        """Every tool of the MCP: the denominator of coverage."""
        return [t.name for t in self.spec.tools]

    @property
    def certified_tools(self) -> list[str]:
        if self.manifest is None:
            return self.tools
        tools = set(self.tools)
        return [t for t in self.manifest.certified_tools if t in tools]

    @property
    def seed_path(self) -> Path:
        return self.path / "seed.sqlite"

    def contract(self, tool: str) -> ToolContract | None:
        try:
            return self.contracts.contract(tool)
        except KeyError:
            return None

    def rows(self, table: str) -> list[dict[str, Any]]:
        """Rows of `table` in the seed DB (cached; read-only connection)."""
        if table not in self._rows:
            self._rows[table] = read_rows(self.seed_path, table)
        return self._rows[table]


def read_rows(db: Path, table: str, limit: int = 500) -> list[dict[str, Any]]:
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        con.row_factory = sqlite3.Row
        try:
            cur = con.execute(f'SELECT * FROM "{table}" LIMIT ?', (limit,))
        except sqlite3.OperationalError:
            return []
        return [dict(r) for r in cur.fetchall()]
    finally:
        con.close()


def load_bundle(path: str | Path) -> BundleView:
    """Load the parts of an EnvBundle that task synthesis uses; name the missing or bad file."""
    root = Path(path)
    if not root.is_dir():
        raise BundleError(f"{root}: not a bundle folder")
    try:
        spec = MCPSpec.load(_need(root, "spec.json"))
        entities = EntityModel.load(_need(root, "entities.json"))
        contracts = ContractSet.load(_need(root, "contracts.json"))
        manifest_path = root / "manifest.json"
        manifest = EnvBundleManifest.load(manifest_path) if manifest_path.exists() else None
    except ArtifactError as exc:
        raise BundleError(str(exc)) from None
    if not (root / "seed.sqlite").exists():
        raise BundleError(f"{root}: bundle has no seed.sqlite")
    return BundleView(
        path=root.resolve(), spec=spec, entities=entities, contracts=contracts, manifest=manifest
    )


def _need(root: Path, name: str) -> Path:
    p = root / name
    if not p.exists():
        raise BundleError(f"{root}: bundle has no {name}")
    return p
