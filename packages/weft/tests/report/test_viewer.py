from weft.report.data import load_run
from weft.report.viewer import MAX_TEXT, decode_blob, encode_blob, viewer_data


def test_blobs_round_trip_and_index_rows_match_them(run_dir):
    index, blobs = viewer_data(load_run(run_dir))
    assert index == [["standard-0-00001", "Standard", 2, "crm, helpdesk", 2, 1, 1]]
    task = decode_blob(blobs[0])
    assert task["id"] == "standard-0-00001"
    assert task["edges"] == [["n1", "n2", "information", ["email"]]]
    assert task["nodes"][1]["inputs"][0]["from"] == "n1.email"
    assert task["bindings"][0]["refs"] == {"crm": "customer", "helpdesk": "requester"}


def test_a_rollout_carries_outcomes_failed_checks_retries_and_state_changes(run_dir):
    _, blobs = viewer_data(load_run(run_dir))
    rollouts = {r["id"]: r for r in decode_blob(blobs[0])["rollouts"]}
    policy, teacher = rollouts["r-policy"], rollouts["r-teacher"]
    assert teacher["ref"] and not policy["ref"]
    failed = policy["segments"][1]["outcome"]
    assert failed == [
        ["n2.c1", "field_equals", False, "no row of ticket matches {'email': 'ada@x.io'}"]
    ]
    assert policy["segments"][1]["attempts"] == 2 and policy["retries"] == 1
    assert policy["discarded"][0]["error"].startswith("infrastructure: ")
    # a tool error in the ledger, and a mutating call that keeps its result as the state change
    assert policy["ledger"][1]["err"] and policy["ledger"][1]["kind"] == "tool_error"
    write = teacher["ledger"][1]
    assert write["mut"] and write["sv"] == 1 and "T9" in write["res"]
    assert teacher["ledger"][0]["res"] is None  # reads: the tool message already shows it
    assert policy["messages"][1]["tc"][0][1] == "crm_get_customer"


def test_long_texts_are_clipped_with_the_rest_counted():
    blob = encode_blob({"x": "y" * 10})
    assert decode_blob(blob) == {"x": "y" * 10}
    from weft.report.viewer import _clip

    clipped = _clip("z" * (MAX_TEXT + 5))
    assert clipped.endswith("(5 more characters)")


def test_traces_of_a_task_without_its_graph_still_get_a_row(run_dir):
    run = load_run(run_dir)
    run.tasks = []
    index, blobs = viewer_data(run)
    assert index[0][0] == "standard-0-00001" and index[0][4] == 2
    assert decode_blob(blobs[0])["missing"] == "task graph not in this run"


def test_a_turn_carries_its_row_level_state_diff(run_dir):
    _, blobs = viewer_data(load_run(run_dir))
    rollouts = {r["id"]: r for r in decode_blob(blobs[0])["rollouts"]}
    n1, n2 = (s["diff"] for s in rollouts["r-teacher"]["segments"])
    assert n1 == {"since": "initial", "trunc": False, "max": 200, "err": None, "mcps": {}}
    tables = n2["mcps"]["helpdesk"]["tables"]
    assert tables["ticket"]["ins"] == [["T9", {"id": "T9", "email": "ada@x.io", "status": "open"}]]
    [[key, old, new, changed]] = tables["queue"]["upd"]
    assert key == "support" and changed == ["open", "updated"]
    assert (old["open"], new["open"]) == (4, 5)
    assert tables["queue"]["n"] == {"inserts": 0, "updates": 1, "deletes": 0}
    # The policy's ticket call failed: its turn changed nothing.
    assert rollouts["r-policy"]["segments"][1]["diff"]["mcps"] == {}


def test_a_capped_diff_and_a_trace_without_diffs():
    from weft.report.viewer import MAX_CELL, diff_payload
    from weft_core.state import CheckpointDiff, SessionChanges, StateDiff, TableDiff

    assert diff_payload(None) is None  # a schema-1 trace
    table = TableDiff(
        inserts={"1": {"id": 1, "body": "b" * (MAX_CELL + 7)}}, omitted={"inserts": 9}
    )
    diff = CheckpointDiff(
        since="n1",
        mcps={"mail": SessionChanges(db=StateDiff(tables={"message": table}))},
        max_rows=1,
    )
    got = diff_payload(diff)
    assert got is not None and got["trunc"] and got["max"] == 1
    t = got["mcps"]["mail"]["tables"]["message"]
    assert t["om"] == 9 and t["n"]["inserts"] == 10
    assert t["ins"][0][1]["body"].endswith("(7 more characters)")
