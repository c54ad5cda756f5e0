"""The fuzz campaign we keep: hostile and edge inputs through every implementation.

``python -m retrieval_conformance.conformance.fuzz`` runs it (see ``--help``); the pytest suite
runs a quick derandomised profile of the same generator.
"""
