"""External harnesses in their native loops (paper §3.1.3): Hermes and OpenClaw, each one process
per rollout with its model behind the capture gateway and its tools on MegaMCP."""

from weft_tasks.harness.external._process import (
    CapturedHarness,
    HarnessInfrastructureError,
    Outcome,
    ProcessResult,
    Verdict,
    run_process,
)
from weft_tasks.harness.external.hermes import HermesHarness, hermes_verdict
from weft_tasks.harness.external.install import HARNESSES, install, installed
from weft_tasks.harness.external.openclaw import OpenClawHarness, envelope_of, openclaw_verdict
from weft_tasks.harness.external.settings import HarnessSettings

__all__ = [
    "HARNESSES",
    "CapturedHarness",
    "HarnessInfrastructureError",
    "HarnessSettings",
    "HermesHarness",
    "OpenClawHarness",
    "Outcome",
    "ProcessResult",
    "Verdict",
    "envelope_of",
    "hermes_verdict",
    "install",
    "installed",
    "openclaw_verdict",
    "run_process",
]
