"""What a registered path is (bundle, module file, module package) and its file tree."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weft_core.models import slugify
from weft_megamcp.exceptions import RegistrationError
from weft_megamcp.objectstore import file_sha256
from weft_megamcp.registry._records import MCPKind

_SKIP_DIRS = {"__pycache__", ".git", ".venv", "node_modules", ".mypy_cache", ".pytest_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo", "-journal", "-wal", "-shm")
MAX_SOURCE_FILES = 5000


@dataclass
class SourceInfo:
    kind: MCPKind
    mcp_id: str
    name: str
    entry: str
    root: Path
    files: dict[str, Path] = field(default_factory=dict)
    description: str = ""
    domain: str = "general"
    seed: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def tree(self) -> dict[str, str]:
        return {rel: file_sha256(p) for rel, p in sorted(self.files.items())}

    def identity(self, tree: dict[str, str]) -> dict[str, str]:
        """The tree as versions are keyed: a bundle's manifest counts by its content hash, not
        its bytes, so re-synthesizing the same environment (a new `created_at`) or loading its
        spec from another path is the same version."""
        content = self.metadata.get("manifest_hash")
        if self.kind is MCPKind.BUNDLE and isinstance(content, str) and "manifest.json" in tree:
            return tree | {"manifest.json": content}
        return tree


def _walk(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in sorted(root.rglob("*")):
        rel_parts = p.relative_to(root).parts
        if any(part in _SKIP_DIRS or part.startswith(".") for part in rel_parts):
            continue
        if p.is_symlink():
            continue  # a link could pull files from outside the registered folder
        if p.is_file() and not p.name.endswith(_SKIP_SUFFIXES):
            out["/".join(rel_parts)] = p
            if len(out) > MAX_SOURCE_FILES:
                raise RegistrationError(
                    f"{root}: more than {MAX_SOURCE_FILES} files; is this the right folder?"
                )
    return out


def _manifest_hash(manifest: Path) -> str | None:
    """The manifest's verified content hash, or None when it does not verify (then its bytes
    key the version)."""
    from weft_core.exceptions import ArtifactError
    from weft_core.models import EnvBundleManifest

    try:
        return EnvBundleManifest.load(manifest).content_hash
    except ArtifactError:
        return None


def inspect_source(path: Path, name: str | None = None) -> SourceInfo:
    """Classify `path` as an EnvBundle folder, a module package folder or a module file."""
    path = Path(path)
    if not path.exists():
        raise RegistrationError(f"{path}: no such file or folder")
    if path.is_file():
        if path.suffix != ".py":
            raise RegistrationError(f"{path}: a module file must be a .py file")
        mcp_id = slugify(name or path.stem)
        return SourceInfo(
            kind=MCPKind.MODULE,
            mcp_id=mcp_id,
            name=name or path.stem,
            entry=path.stem,
            root=path.parent,
            files={path.name: path},
        )
    if not path.is_dir():
        raise RegistrationError(f"{path}: neither a file nor a folder")
    files = _walk(path)
    manifest = path / "manifest.json"
    if manifest.exists() and (path / "server.py").exists():
        try:
            meta = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise RegistrationError(f"{manifest}: not valid JSON: {exc}") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise RegistrationError(f"{manifest}: has no 'name'")
        certified = [
            t.get("name")
            for t in meta.get("tools", [])
            if isinstance(t, dict) and t.get("certified")
        ]
        seed = path / "seed.sqlite"
        return SourceInfo(
            kind=MCPKind.BUNDLE,
            mcp_id=slugify(name or meta["name"]),
            name=name or meta["name"],
            entry="server",
            root=path,
            files=files,
            description=str(meta.get("description", "")),
            domain=str(meta.get("domain", "general")),
            seed=seed if seed.exists() else None,
            metadata={
                "manifest_hash": _manifest_hash(manifest),
                "bundle_version": meta.get("version"),
                "spec_hash": meta.get("spec_hash"),
                "schema_revision": meta.get("schema_revision"),
                "certified_tools": certified,
                "seed_workspace": (path / "seed_workspace").is_dir(),
            },
        )
    for entry in ("server", "__init__"):
        if (path / f"{entry}.py").exists():
            seed = path / "seed.sqlite"
            return SourceInfo(
                kind=MCPKind.MODULE,
                mcp_id=slugify(name or path.name),
                name=name or path.name,
                entry=entry,
                root=path,
                files=files,
                seed=seed if seed.exists() else None,
                metadata={"seed_workspace": (path / "seed_workspace").is_dir()},
            )
    raise RegistrationError(
        f"{path}: not an EnvBundle (manifest.json + server.py) nor a module package (server.py or __init__.py)"
    )
