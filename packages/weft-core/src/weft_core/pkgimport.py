"""Importing a folder of Python files (an EnvBundle, a registered MCP server) as a package.

The folder is imported under a caller-chosen unique package name with the folder as the package
path, so its modules can import each other relatively and many folders (or versions of one)
coexist in one process. EnvSynth (certifying a bundle) and MegaMCP (serving it) both import
bundles this way, so a bundle that imports in one imports in the other.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from weft_core.exceptions import UserError


def import_folder(package: str, folder: Path) -> ModuleType:
    """The package `package` over `folder` (its `__init__.py` run if present; a namespace-like
    package otherwise). Idempotent per name; a failed import leaves nothing in `sys.modules`."""
    if package in sys.modules:
        return sys.modules[package]
    init = folder / "__init__.py"
    if init.exists():
        spec = importlib.util.spec_from_file_location(
            package, init, submodule_search_locations=[str(folder)]
        )
    else:
        spec = importlib.util.spec_from_loader(package, loader=None, is_package=True)
    if spec is None:
        raise UserError(f"{folder}: cannot build an import spec for a package")
    module = importlib.util.module_from_spec(spec)
    if not init.exists():
        module.__path__ = [str(folder)]
    sys.modules[package] = module
    try:
        if spec.loader is not None:
            spec.loader.exec_module(module)
    except BaseException:
        forget_package(package)
        raise
    return module


def forget_package(package: str) -> None:
    """Drop `package` and its submodules from `sys.modules` (the next import runs it afresh)."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
