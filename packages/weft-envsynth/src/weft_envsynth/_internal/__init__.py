"""Private helpers of weft-envsynth."""
