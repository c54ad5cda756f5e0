"""``python -m retrieval_conformance.comparison``: the same as ``retrieval-conformance compare``."""

from retrieval_conformance.comparison.cli import compare_main
from retrieval_conformance.reference.contract.command_line import exit_with

exit_with(compare_main)
