"""The test suite: ``pytest --pyargs retrieval_conformance.conformance`` runs it all."""
