"""Former home of the file limits: now :mod:`retrieval_conformance.reference.readers.limits` (re-exported)."""
from retrieval_conformance.reference.readers.limits import *  # noqa: F401,F403
from retrieval_conformance.reference.readers.limits import (  # noqa: F401
    _PLAIN_KINDS,
    _clip,
    _describe,
    _open_regular,
    _read_bounded,
    _read_file,
    _size,
)
