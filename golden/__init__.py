"""Golden cases as JSON data files, each with its provenance."""
