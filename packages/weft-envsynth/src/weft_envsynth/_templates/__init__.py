"""Source files copied verbatim into every EnvBundle."""
