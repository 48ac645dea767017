"""Workspace-wide test policy: a test gets `timeout` seconds (root pyproject, 60) unless it is
marked `slow`, which raises its limit to SLOW_TIMEOUT_S. An explicit `@pytest.mark.timeout(n)` wins.

MegaMCP runs hosted servers under bubblewrap and refuses to start without a working one. On a
machine where bwrap cannot create namespaces (some containers), the suite runs the hosts with the
documented opt-out (`WEFT_MEGAMCP_SANDBOX=off`) and the isolation tests skip, naming the reason,
instead of every hosted-server test failing for the machine's sake.
"""

from __future__ import annotations

import os

import pytest

SLOW_TIMEOUT_S = 600

# Under `uv run pytest`, Ray (>= 2.45) starts every worker with `uv run` in an unpacked copy of
# the working directory, so each worker builds and syncs its own venv there (torch included):
# minutes per cluster on 2 cores, and two workers syncing the same copy at once have been seen
# importing a half-installed torch (CI, stop 25: "No module named 'torch._utils'"). The local
# test cluster runs on this machine, so its workers use this interpreter. Read by Ray when
# `ray._private.ray_constants` is imported, i.e. before any test module imports ray.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")


def _sandbox_unavailable() -> str | None:
    if os.environ.get("WEFT_MEGAMCP_SANDBOX") == "off":
        return "WEFT_MEGAMCP_SANDBOX=off is set"
    from weft_megamcp.sandbox import Sandbox, SandboxUnavailable

    try:
        Sandbox(mode="bwrap").require()
    except SandboxUnavailable as exc:
        os.environ["WEFT_MEGAMCP_SANDBOX"] = "off"
        return str(exc)
    return None


SANDBOX_UNAVAILABLE = _sandbox_unavailable()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


@pytest.fixture(autouse=True)
def _fresh_console() -> None:
    """Each test starts with a new process-wide console: a CLI test's `--quiet`, or a console
    created while an earlier test captured stdout, must not silence or redirect a later one's
    tables (`weft verify`'s capture table vanished depending on test order)."""
    from weft_core.console import set_console

    set_console(None)
