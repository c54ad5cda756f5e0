"""``python -m retrieval_conformance.comparison``: the same as ``retrieval-conformance compare``."""
import sys

from retrieval_conformance.comparison.cli import compare_main

sys.exit(compare_main())
