"""Former home of the .npy/.npz readers: now :mod:`retrieval_conformance.reference.readers.npy` (re-exported)."""
from retrieval_conformance.reference.readers.npy import *  # noqa: F401,F403
