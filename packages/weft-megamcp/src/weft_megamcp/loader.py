"""Load a registered server module under a unique package name (the server-module contract).

Each (MCP, version) is imported as its own package `weft_mcp_<slug>_v<version>` from its
materialized source folder, so many modules and versions coexist in one process and relative
imports (`from .models import ...`) resolve to the right sibling. The host never runs a module's
migrations or lifespan; it only obtains its FastMCP instance.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
from pathlib import Path
from types import ModuleType

from fastmcp import FastMCP

from weft_core.pkgimport import forget_package, import_folder
from weft_megamcp.exceptions import ModuleLoadError

_lock = threading.RLock()
# One FastMCP instance per loaded (MCP, version): the module-load contract says the host calls
# create_server() once per module load.
_servers: dict[str, FastMCP] = {}


def package_name(mcp_id: str, version: int, tag: str = "") -> str:
    """Unique per MCP, version and (via `tag`, a source-hash prefix) content."""
    base = f"weft_mcp_{re.sub(r'[^0-9a-zA-Z_]', '_', mcp_id)}_v{version}"
    return f"{base}_{tag}" if tag else base


def find_server(module: ModuleType) -> FastMCP:
    """`create_server()` if the module has it, else its module-level FastMCP instance."""
    factory = getattr(module, "create_server", None)
    if callable(factory):
        server = factory()
        if not isinstance(server, FastMCP):
            raise ModuleLoadError(f"create_server() returned {type(server).__name__}, not FastMCP")
        return server
    for attr in ("mcp", "server", "app"):
        candidate = getattr(module, attr, None)
        if isinstance(candidate, FastMCP):
            return candidate
    found = [v for v in vars(module).values() if isinstance(v, FastMCP)]
    if len(found) == 1:
        return found[0]
    raise ModuleLoadError(
        "module exposes neither create_server() nor exactly one module-level FastMCP instance"
    )


def load_server(
    mcp_id: str, version: int, folder: Path, entry: str, tag: str = ""
) -> tuple[FastMCP, str]:
    """Import `entry` from `folder` as part of a unique package; return (server, package name)."""
    pkg = package_name(mcp_id, version, tag)
    with _lock:
        if pkg in _servers:
            return _servers[pkg], pkg
        try:
            import_folder(pkg, folder)
            module = (
                importlib.import_module(f"{pkg}.{entry}")
                if entry != "__init__"
                else sys.modules[pkg]
            )
        except ModuleLoadError:
            raise
        except Exception as exc:  # third-party code: any import failure is a load failure
            _forget(pkg)
            raise ModuleLoadError(
                f"MCP {mcp_id!r} v{version}: importing {entry!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            server = find_server(module)
        except ModuleLoadError as exc:
            _forget(pkg)
            raise ModuleLoadError(f"MCP {mcp_id!r} v{version}: {exc}") from None
        except Exception as exc:
            _forget(pkg)
            raise ModuleLoadError(
                f"MCP {mcp_id!r} v{version}: create_server() failed: {type(exc).__name__}: {exc}"
            ) from exc
        _servers[pkg] = server
        return server, pkg


def is_loaded(pkg: str) -> bool:
    return pkg in _servers


def loaded(pkg: str) -> FastMCP | None:
    """The server of an already loaded package, if any."""
    return _servers.get(pkg)


def _forget(pkg: str) -> None:
    _servers.pop(pkg, None)
    forget_package(pkg)


def unload(pkg: str) -> None:
    """Drop a module package from sys.modules (offload); the next load imports it afresh."""
    with _lock:
        _forget(pkg)
