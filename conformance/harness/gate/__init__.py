"""The CI gate: every metric function a lab declares, checked by one command.

A lab declares its functions in ``[[tool.retrieval-conformance.check]]`` tables of its
``pyproject.toml`` (or of a ``retrieval-conformance.toml``); ``retrieval-conformance check`` with
no target checks them all.  :mod:`.config` reads and validates the tables, :mod:`.run` checks each
function in a worker process of its own (:mod:`.worker`), :mod:`.outputs` writes the summary, the
Markdown page, JSON and JUnit XML, and :mod:`.accept` records today's deviations as known (the
baseline), editing the lab's file in place.  :mod:`.cli` is the command-line face.
"""
