import importlib.util
from pathlib import Path

import pytest

from weft_core.testing import ScriptedChatModel

_path = Path(__file__).parents[1] / "rollout" / "data" / "sample_task.py"
_spec = importlib.util.spec_from_file_location("weft_tasks_tests_sample_task", _path)
assert _spec and _spec.loader
sample = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample)


@pytest.fixture
def graph():
    return sample.sample_graph()

    def bind_tools(self, tools, **kwargs):  # type: ignore[override]
        return self


@pytest.fixture
def scripted():
    """Build a scripted chat model: scripted(["reply", AIMessage(...)])."""

    def make(responses):

        return ScriptedChatModel(list(responses))

    return make
