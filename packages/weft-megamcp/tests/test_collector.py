from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from weft_megamcp.collector import tune_collector
from weft_megamcp.settings import MegaMCPSettings


@pytest.fixture
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_tune_collector_raises_the_young_threshold_and_freezes(restore_gc: None) -> None:
    gc.unfreeze()
    tune_collector(20_000)
    assert gc.get_threshold() == (20_000, 10, 10)
    assert gc.get_freeze_count() > 0


def test_zero_leaves_the_collector_alone(restore_gc: None) -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    tune_collector(0)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_the_setting_travels_to_a_served_host(monkeypatch: pytest.MonkeyPatch) -> None:
    env = MegaMCPSettings(gc_young_threshold=1234).as_environ()
    assert env["WEFT_MEGAMCP_GC_YOUNG_THRESHOLD"] == "1234"
    monkeypatch.setenv("WEFT_MEGAMCP_GC_YOUNG_THRESHOLD", "0")
    assert MegaMCPSettings().gc_young_threshold == 0
    monkeypatch.setenv("WEFT_MEGAMCP_GC_YOUNG_THRESHOLD", "-1")
    with pytest.raises(ValueError, match="gc_young_threshold"):
        MegaMCPSettings()
