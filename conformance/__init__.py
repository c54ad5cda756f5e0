"""The conformance suite (pytest) and the harness that checks a user's own metric function."""
