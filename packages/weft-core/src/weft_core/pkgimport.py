"""Importing a folder of Python files (an EnvBundle, a registered MCP server) as a package.

The folder is imported under a caller-chosen unique package name with the folder as the package
path, so its modules can import each other relatively and many folders (or versions of one)
coexist in one process. EnvSynth (certifying a bundle) and MegaMCP (serving it) both import
bundles this way, so a bundle that imports in one imports in the other.

Every bundle carries its own copy of the same runtime modules (about 100 kB of source); compiling
each copy again was a tenth of the time to certify a bundle. The folder's modules are therefore
loaded by a loader that compiles each distinct source once per process and gives the shared code
the file's own path, so tracebacks still name the bundle's file.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from weft_core.exceptions import UserError

_CODE_CACHE_SIZE = 256
_code_cache: OrderedDict[bytes, CodeType] = OrderedDict()
_code_lock = threading.Lock()


def _retitle(code: CodeType, path: str) -> CodeType:
    """`code` with `path` as its file name, nested functions and classes included."""
    if code.co_filename == path:
        return code
    consts = tuple(_retitle(c, path) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


class SharedCodeLoader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles each distinct source text once per process."""

    def source_to_code(  # type: ignore[override]
        self, data: Any, path: Any, *, _optimize: int = -1
    ) -> CodeType:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        key = hashlib.sha256(raw).digest() + _optimize.to_bytes(2, "little", signed=True)
        with _code_lock:
            code = _code_cache.get(key)
            if code is not None:
                _code_cache.move_to_end(key)
        if code is None:
            code = super().source_to_code(data, path, _optimize=_optimize)
            with _code_lock:
                _code_cache[key] = code
                while len(_code_cache) > _CODE_CACHE_SIZE:
                    _code_cache.popitem(last=False)
        return _retitle(code, str(path))


class _SharedFinder(importlib.machinery.FileFinder):
    """The finder of a folder imported by `import_folder` (its sources through SharedCodeLoader)."""


def _folder_finder(folder: str) -> importlib.machinery.FileFinder:
    return _SharedFinder(
        folder,
        (SharedCodeLoader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    )


def import_folder(package: str, folder: Path) -> ModuleType:
    """The package `package` over `folder` (its `__init__.py` run if present; a namespace-like
    package otherwise). Idempotent per name; a failed import leaves nothing in `sys.modules`."""
    if package in sys.modules:
        return sys.modules[package]
    init = folder / "__init__.py"
    if init.exists():
        spec = importlib.util.spec_from_file_location(
            package,
            init,
            loader=SharedCodeLoader(package, str(init)),
            submodule_search_locations=[str(folder)],
        )
    else:
        spec = importlib.util.spec_from_loader(package, loader=None, is_package=True)
    if spec is None:
        raise UserError(f"{folder}: cannot build an import spec for a package")
    module = importlib.util.module_from_spec(spec)
    if not init.exists():
        module.__path__ = [str(folder)]
    # The package's submodules are found through this entry (PathFinder asks the cache first).
    sys.path_importer_cache[str(folder)] = _folder_finder(str(folder))
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
    top = sys.modules.get(package)
    for entry in getattr(top, "__path__", None) or []:
        # Only our own finder goes; a later import over the folder gets a default one.
        if isinstance(sys.path_importer_cache.get(entry), _SharedFinder):
            del sys.path_importer_cache[entry]
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
