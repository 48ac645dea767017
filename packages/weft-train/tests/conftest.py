"""A tiny from-scratch policy shared by the weft-train tests (built once per session, ~27k params)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_train.policy import init_policy

    return init_policy(tmp_path_factory.mktemp("policy") / "tiny", "tiny", seed=0)


@pytest.fixture(scope="session")
def tiny_policy(tiny_policy_dir: Path):  # type: ignore[no-untyped-def]
    from weft_train.policy import Policy

    return Policy.load(tiny_policy_dir)
