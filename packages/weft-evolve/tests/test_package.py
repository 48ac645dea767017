from importlib.metadata import version

import weft_evolve


def test_version_matches_distribution_metadata() -> None:
    assert weft_evolve.__version__ == version("weft-evolve")
