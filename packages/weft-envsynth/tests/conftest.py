"""Shared fixtures: the example specs and one helpdesk bundle synthesized once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_core.models import MCPSpec

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "mcps"


@pytest.fixture(autouse=True)
def _verify_db_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every validation in these tests checks that no check changes rows a DB read shared."""
    from weft_envsynth import validate

    monkeypatch.setattr(validate, "VERIFY_READS", True)


def example_paths() -> list[Path]:
    return sorted(EXAMPLES.glob("*.json"))


def load_example(name: str) -> MCPSpec:
    from weft_core.loaders import load_spec_file

    return load_spec_file(EXAMPLES / f"{name}.json").spec


@pytest.fixture(scope="session")
def helpdesk_spec() -> MCPSpec:
    return load_example("helpdesk")


@pytest.fixture(scope="session")
def helpdesk_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth.pipeline import synthesize_file

    out = tmp_path_factory.mktemp("envs")
    result = synthesize_file(EXAMPLES / "helpdesk.json", out)
    assert result.status == "certified", result
    assert result.bundle is not None
    return Path(result.bundle)


@pytest.fixture(scope="session")
def example():
    """Load an example spec by file stem: example("files")."""
    return load_example


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES
