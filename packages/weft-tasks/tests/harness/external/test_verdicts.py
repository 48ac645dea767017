"""Exit codes, usage files and envelopes of the external harnesses -> Weft's outcome kinds, on
the shapes the real harnesses produce (notes/harnesses.md; openclaw dist/agent-exec)."""

import json

from weft_core.models import CapturedCall
from weft_tasks.harness.external import (
    Outcome,
    ProcessResult,
    envelope_of,
    hermes_verdict,
    openclaw_verdict,
)

OK_CALL = CapturedCall(index=0, status=200, finish_reason="stop")
DEAD_CALL = CapturedCall(index=0, status=502, error="upstream unreachable: ConnectError")


def _result(code, stdout="", stderr="", timed_out=False):
    return ProcessResult(code=code, stdout=stdout, stderr=stderr, seconds=12.0, timed_out=timed_out)


def _usage(**kw):
    return {"api_calls": 2, "completed": True, "failed": False, **kw}


def test_hermes_unreachable_model_exits_0_but_is_infrastructure():
    # measured: exit 0, "API call failed after 3 retries" on stdout, failed in the usage file
    result = _result(0, stdout="API call failed after 3 retries: Connection error.")
    verdict = hermes_verdict(result, _usage(completed=False, failed=True), [DEAD_CALL] * 3)
    assert verdict.outcome is Outcome.INFRASTRUCTURE and "unreachable" in verdict.reason


def test_hermes_outcomes():
    assert hermes_verdict(_result(0, "done"), _usage(), [OK_CALL]).outcome is Outcome.OK
    assert (
        hermes_verdict(_result(0, "x"), _usage(completed=False), [OK_CALL]).outcome
        is Outcome.STOPPED
    )
    bad_toolset = _result(2, stderr="hermes -z: unknown --toolsets entries: crm")
    assert hermes_verdict(bad_toolset, _usage(), []).outcome is Outcome.CONFIG
    crashed = hermes_verdict(_result(1, stderr="Traceback ... ImportError"), None, [])
    assert crashed.outcome is Outcome.INFRASTRUCTURE and "ImportError" in crashed.reason
    looping = hermes_verdict(_result(None, timed_out=True), None, [OK_CALL] * 40)
    assert looping.outcome is Outcome.STOPPED
    assert hermes_verdict(_result(None, timed_out=True), None, []).outcome is Outcome.INFRASTRUCTURE


def _envelope(status, kind=None, message="", model="weft-scripted"):
    env = {"ok": status == "ok", "status": status, "final": "", "payloads": [], "model": model}
    if kind:
        env["error"] = {"message": message, "kind": kind}
    return json.dumps(env, indent=2)


def test_openclaw_exit_codes_and_error_kinds():
    ok = _result(0, _envelope("ok"))
    assert openclaw_verdict(ok, envelope_of(ok.stdout), [OK_CALL]).outcome is Outcome.OK
    # measured: unreachable model -> exit 2, status timeout, "LLM request failed: network ..."
    net = _result(
        2, _envelope("timeout", "timeout", "LLM request failed: network connection error.")
    )
    assert (
        openclaw_verdict(net, envelope_of(net.stdout), [DEAD_CALL]).outcome
        is Outcome.INFRASTRUCTURE
    )
    slow = _result(2, _envelope("timeout", "timeout", "Agent run timed out"))
    assert openclaw_verdict(slow, envelope_of(slow.stdout), [OK_CALL]).outcome is Outcome.STOPPED
    exhausted = _result(
        1, _envelope("error", "fallback_exhausted", "All model fallback candidates failed")
    )
    assert (
        openclaw_verdict(exhausted, envelope_of(exhausted.stdout), []).outcome
        is Outcome.INFRASTRUCTURE
    )
    config = _result(
        1, _envelope("error", "exception", "Invalid config at run.json: tools.profile", model=None)
    )
    assert openclaw_verdict(config, envelope_of(config.stdout), []).outcome is Outcome.CONFIG
    policy = _result(1, _envelope("error", "error_payload", "the model returned an empty reply"))
    assert (
        openclaw_verdict(policy, envelope_of(policy.stdout), [OK_CALL]).outcome is Outcome.STOPPED
    )
    crash = _result(1, "", "node: segfault")
    assert openclaw_verdict(crash, envelope_of(crash.stdout), []).outcome is Outcome.INFRASTRUCTURE


def test_envelope_after_a_log_line():
    out = "[plugins] loaded 3\n" + _envelope("ok")
    assert envelope_of(out)["status"] == "ok"
    assert envelope_of("no json here") is None
