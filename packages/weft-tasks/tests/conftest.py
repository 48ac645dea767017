"""Composition and grounding tests share libraries certified from the fixture bundles.

The libraries are certified by the atomic tests' in-process validator (the bundle's real server on a
real SQLite copy, without a MegaMCP host) so these unit tests stay fast; E2E validation through a
real MegaMCP host is covered by tests/atomic and tests/test_cli.py."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

_ATOMIC = Path(__file__).resolve().parent / "atomic" / "conftest.py"


def _atomic_conftest() -> Any:
    name = "_weft_tasks_atomic_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _ATOMIC)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


helpers = _atomic_conftest()
bundle_dirs = helpers.bundle_dirs
scripted = helpers.scripted


@pytest.fixture(scope="session")
def library_root(bundle_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_tasks.atomic.bundle import load_bundle
    from weft_tasks.atomic.library import save_library
    from weft_tasks.atomic.synthesis import certify

    root = tmp_path_factory.mktemp("weft-tasks-lib")  # pytest removes old ones (mkdtemp leaked)

    async def build() -> None:
        validator = helpers.InProcessValidator()
        for path in bundle_dirs.values():
            bundle = load_bundle(path)
            save_library(root, bundle, await certify(bundle, validator, budget=3))

    asyncio.run(build())
    return root


@pytest.fixture
def libraries(library_root: Path) -> list[Any]:
    from weft_tasks.atomic.library import load_library

    return load_library(library_root)
