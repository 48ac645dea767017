"""Each package builds a wheel on its own; weft-core and weft-megamcp install and import in a fresh venv
with only their declared dependencies (catches a missing dependency that the workspace venv hides)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "weft-core",
    "weft-envsynth",
    "weft-megamcp",
    "weft-tasks",
    "weft-evolve",
    "weft-train",
    "weft-toolspace",
    "weft-rl",  # the umbrella (command `weft`): "weft" on PyPI is another project
]

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _uv() -> str:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    return uv


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    built: dict[str, Path] = {}
    for name in PACKAGES:
        subprocess.run(
            [_uv(), "build", "--package", name, "--wheel", "--out-dir", str(out / name)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        (wheel,) = (out / name).glob("*.whl")
        built[name] = wheel
    return built


def test_every_package_builds_a_wheel(wheels: dict[str, Path]) -> None:
    assert set(wheels) == set(PACKAGES)
    for name, wheel in wheels.items():
        assert wheel.name.startswith(name.replace("-", "_") + "-")


def test_core_and_megamcp_import_with_declared_deps_only(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run(
        [_uv(), "venv", "--python", sys.executable, str(venv)], check=True, capture_output=True
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [
            _uv(),
            "pip",
            "install",
            "--python",
            str(python),
            # the `openai` extra is declared: weft_core.llm._tito (vllm: models) needs it
            f"weft-core[openai] @ {wheels['weft-core'].resolve().as_uri()}",
            str(wheels["weft-megamcp"]),
        ],
        check=True,
        capture_output=True,
    )
    code = (
        "import weft_core, weft_core.models, weft_core.binding, weft_megamcp;"
        "import importlib, pkgutil;"
        "[importlib.import_module(m.name) for pkg in (weft_core, weft_megamcp)"
        " for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.')"
        " if not m.name.endswith('__main__')];"
        "print('ok')"
    )
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("ok")
    # The venv must not have picked up the synthesis or task packages: MegaMCP hosts any MCP server alone.
    proc = subprocess.run(
        [str(python), "-c", "import weft_envsynth"], capture_output=True, text=True
    )
    assert proc.returncode != 0
    # Without the [langchain] extra, langchain is absent and asking for its tools names the extra.
    code = (
        "import importlib.util, weft_megamcp.client as c, weft_megamcp.exceptions as e\n"
        "assert importlib.util.find_spec('langchain') is None\n"
        "try:\n    c.langchain_mcp_adapter()\nexcept e.MissingExtraError as exc:\n    print(exc)"
    )
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "weft-megamcp[langchain]" in proc.stdout
