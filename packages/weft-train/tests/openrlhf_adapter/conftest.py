# Named openrlhf_adapter, not openrlhf: a tests package called openrlhf would shadow the real one.
"""OpenRLHF 0.11.2 parity tests run only where openrlhf is installed (the separate parity venv of
notes/training-stack.md); flash-attn and vLLM are stubbed there, as OpenRLHF's own tests do."""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import sys
import types
from pathlib import Path

import pytest


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


HAVE_OPENRLHF = _installed("openrlhf")
NEEDS_OPENRLHF = {"test_parity.py", "test_adapter.py", "test_sft_dataset.py"}


def _stub(name: str, **attrs: object) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, loader=None)
    for k, v in attrs.items():
        setattr(mod, k, v)
    sys.modules.setdefault(name, mod)
    return sys.modules[name]


if HAVE_OPENRLHF:

    def _unavailable(*a: object, **k: object) -> None:
        raise RuntimeError("stubbed for CPU parity tests")

    _stub("flash_attn", __version__="2.8.3")
    _stub(
        "flash_attn.bert_padding",
        pad_input=_unavailable,
        unpad_input=_unavailable,
        index_first_axis=_unavailable,
        rearrange=_unavailable,
    )
    _stub("flash_attn.utils")
    _stub("flash_attn.utils.distributed", all_gather=_unavailable)
    vllm = _stub(
        "vllm",
        __version__="0.29.0",
        SamplingParams=type("SamplingParams", (), {}),
        AsyncEngineArgs=type("AsyncEngineArgs", (), {}),
        AsyncLLMEngine=type("AsyncLLMEngine", (), {}),
    )
    _stub("vllm.inputs", TokensPrompt=dict)
    _stub("vllm.utils", random_uuid=lambda: "0")

    # Importing OpenRLHF (deepspeed, transformers, ray) takes a minute on a loaded 2-core machine:
    # do it once at collection, outside every test's 60 s limit.
    import openrlhf.cli.train_ppo_ray
    import openrlhf.datasets.sft_dataset  # noqa: F401
    import transformers.models.qwen3  # noqa: F401

    import weft_train.openrlhf.trainer  # noqa: F401


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if HAVE_OPENRLHF:
        return
    skip = pytest.mark.skip(reason="openrlhf not installed (parity venv only)")
    for item in items:
        if Path(str(item.fspath)).name in NEEDS_OPENRLHF:
            item.add_marker(skip)
