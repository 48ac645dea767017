from __future__ import annotations

from pathlib import Path

import pytest

SPECS = Path(__file__).resolve().parents[1] / "data" / "specs"


@pytest.fixture
def specs_dir() -> Path:
    return SPECS
