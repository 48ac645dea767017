from importlib.metadata import version

import weft_train


def test_version_matches_distribution_metadata() -> None:
    assert weft_train.__version__ == version("weft-train")
