"""`weft-train init-policy` writes a loadable policy; bad input is one line and exit code 2."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from transformers import AutoModelForCausalLM

from weft_train.cli import main


@pytest.fixture(autouse=True)
def fresh_console() -> Iterator[None]:
    """The console singleton binds the stream it first saw; each test gets its own."""
    from weft_core.console import set_console

    set_console(None)
    yield
    set_console(None)


def test_init_policy_writes_a_loadable_checkpoint(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text('{"name": "crm_get_customer", "arguments": {"email": "a@x"}}\n' * 20)
    assert (
        main(["init-policy", str(tmp_path / "p"), "--corpus", str(corpus), "--merges", "40"]) == 0
    )
    assert "parameters" in capsys.readouterr().out
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "p").config.model_type == "qwen3"


def test_bad_input_is_one_line_and_exit_code_2(tmp_path, capsys):
    assert main(["init-policy", str(tmp_path / "p"), "--corpus", str(tmp_path / "none.txt")]) == 2
    err = " ".join(capsys.readouterr().err.split())  # the console wraps at the terminal width
    assert err.startswith("weft-train init-policy: --corpus") and err.endswith("no such file")
    assert main(["init-policy", str(tmp_path / "q"), "--merges", "10"]) == 2
    assert "needs a corpus" in capsys.readouterr().err
