"""The seed-000 enumeration script cited by ``golden/seed000.json`` (its provenance): every
order of every tie group, averaging AP@5 (hits) per query, independent of the reference's
closed forms.  The enumeration itself is :mod:`.oracle`'s (``expected_metrics``).

    python -m retrieval_conformance.conformance.support.brute_force
prints the seed-000 values under ties="expected".
"""

from __future__ import annotations

from retrieval_conformance.conformance.support.oracle import print_seed000

if __name__ == "__main__":
    print_seed000()
