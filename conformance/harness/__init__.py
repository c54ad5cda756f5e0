"""The harness that checks a user's own metric function against the reference."""
