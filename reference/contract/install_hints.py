"""How to install an optional extra, said once for every message that needs it.

The package may not be on the index a user reaches, so a hint names what works from a checkout
of the source as well.
"""

from __future__ import annotations

PACKAGE = "retrieval-conformance"


def install_hint(extra: str) -> str:
    """``pip install 'retrieval-conformance[EXTRA]'``, and the same from a checkout.

    >>> install_hint("plot")
    "pip install 'retrieval-conformance[plot]' (from a checkout of the source: pip install '.[plot]')"
    """
    return f"pip install '{PACKAGE}[{extra}]' (from a checkout of the source: pip install '.[{extra}]')"
