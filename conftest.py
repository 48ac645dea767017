"""Workspace-wide test policy: a test gets `timeout` seconds (root pyproject, 60) unless it is
marked `slow`, which raises its limit to SLOW_TIMEOUT_S. An explicit `@pytest.mark.timeout(n)` wins.
"""

from __future__ import annotations

import pytest

SLOW_TIMEOUT_S = 600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
