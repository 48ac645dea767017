from weft.stages import RolloutsRecord, StageStore


def test_keys_are_content_hashes(tmp_path):
    store = StageStore(tmp_path)
    assert store.key("envs", {"a": 1, "b": 2}) == store.key("envs", {"b": 2, "a": 1})
    assert store.key("envs", {"a": 1}) != store.key("envs", {"a": 2})
    assert store.key("envs", {"a": 1}) != store.key("atomic", {"a": 1})


def test_a_stage_is_done_only_after_finish_and_a_crashed_attempt_is_cleared(tmp_path):
    store = StageStore(tmp_path)
    key = store.key("s", 1)
    folder = store.begin("s", key)
    (folder / "partial.txt").write_text("half")
    assert store.done("s", key, RolloutsRecord) is None
    folder = store.begin("s", key)  # rerun after a crash: start clean
    assert not (folder / "partial.txt").exists()
    store.finish("s", key, RolloutsRecord(traces="t.jsonl", rollouts=3))
    assert store.done("s", key, RolloutsRecord) == RolloutsRecord(traces="t.jsonl", rollouts=3)
    (folder / "keep.jsonl").write_text("line\n")
    store.begin("s", key, keep=True)
    assert (folder / "keep.jsonl").exists()


def test_a_damaged_marker_reruns_the_stage(tmp_path):
    store = StageStore(tmp_path)
    key = store.key("s", 2)
    store.begin("s", key)
    (store.path("s", key) / "done.json").write_text("{torn")
    assert store.done("s", key, RolloutsRecord) is None
    (store.path("s", key) / "done.json").write_text('{"rollouts": "many"}')  # an older format
    assert store.done("s", key, RolloutsRecord) is None


def test_records_name_paths_relative_to_out_and_older_absolute_ones_still_resolve(tmp_path):
    from weft.pipeline import record_path

    assert record_path("stages/envs/k/crm", tmp_path) == tmp_path / "stages" / "envs" / "k" / "crm"
    legacy = str(tmp_path / "elsewhere" / "crm")
    assert record_path(legacy, tmp_path / "out") == tmp_path / "elsewhere" / "crm"
