"""Importing a bundle folder as a Python package, and opening its server.

A bundle is imported under a unique package name (`weft_mcp_<slug>_<hash>`) with its folder as the
package path, so its `server.py` can import `models` and `runtime` relatively and many bundles (or
versions of one) coexist in one process. This is what MegaMCP does too (contract C).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from weft_core.pkgimport import forget_package, import_folder
from weft_envsynth.errors import BundleError


def import_bundle(bundle_dir: str | Path, *, package: str | None = None) -> ModuleType:
    """Import `bundle_dir` as a package and return its `server` module."""
    root = Path(bundle_dir).resolve()
    for name in ("__init__.py", "models.py", "server.py"):
        if not (root / name).is_file():
            raise BundleError(f"{root}: not an EnvBundle (missing {name})")
    if package is None:
        digest = hashlib.sha256(
            (root / "server.py").read_bytes() + (root / "models.py").read_bytes()
        ).hexdigest()[:10]
        package = f"weft_mcp_{root.name.replace('-', '_').replace('.', '_')}_{digest}"
    if f"{package}.server" in sys.modules:
        return sys.modules[f"{package}.server"]
    try:
        import_folder(package, root)
        server = importlib.import_module(f"{package}.server")
    except Exception as exc:
        forget_package(package)
        raise BundleError(
            f"{root}: importing the bundle failed: {type(exc).__name__}: {exc}"
        ) from exc
    return server


def unload_bundle(server_module: ModuleType) -> None:
    forget_package(server_module.__name__.rsplit(".", 1)[0])


def create_bundle_server(bundle_dir: str | Path) -> Any:
    """Import a bundle and call its `create_server()` -> fastmcp.FastMCP."""
    return import_bundle(bundle_dir).create_server()
