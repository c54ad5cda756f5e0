"""Former home of the TREC file readers: now :mod:`retrieval_conformance.reference.readers.trec` (re-exported)."""
from retrieval_conformance.reference.readers.trec import *  # noqa: F401,F403
