from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from weft_megamcp.settings import MegaMCPSettings
from weft_megamcp.tuning import tune_serving_process


@pytest.fixture
def restore_interpreter() -> Iterator[None]:
    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    sys.setswitchinterval(interval)


def test_a_serving_process_gets_the_collector_and_the_switch_interval(
    restore_interpreter: None,
) -> None:
    sys.setswitchinterval(0.005)
    tune_serving_process(MegaMCPSettings(gil_switch_interval_s=0.02, gc_young_threshold=5_000))
    assert sys.getswitchinterval() == pytest.approx(0.02)
    assert gc.get_threshold()[0] == 5_000


def test_zero_keeps_the_interpreters_switch_interval(restore_interpreter: None) -> None:
    sys.setswitchinterval(0.007)
    tune_serving_process(MegaMCPSettings(gil_switch_interval_s=0, gc_young_threshold=0))
    assert sys.getswitchinterval() == pytest.approx(0.007)


def test_the_default_is_longer_than_cpythons_and_travels_to_a_served_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert MegaMCPSettings().gil_switch_interval_s > 0.005
    env = MegaMCPSettings(gil_switch_interval_s=0.1).as_environ()
    assert env["WEFT_MEGAMCP_GIL_SWITCH_INTERVAL_S"] == "0.1"
    monkeypatch.setenv("WEFT_MEGAMCP_GIL_SWITCH_INTERVAL_S", "-1")
    with pytest.raises(ValueError, match="gil_switch_interval_s"):
        MegaMCPSettings()
