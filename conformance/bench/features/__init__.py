"""The feature benchmarks: one run that measures each feature's figures and the page written from it.

:mod:`.registry` names the sections (a benchmark module and its ``figures(scale)`` function each)
and runs them, a section whose module is absent recorded as not measured; :mod:`.figures` checks
what a ``figures`` function returns and reads its targets; :mod:`.page` writes the Markdown page
of a saved run (the run's machine and load average, each figure next to its target).  The command:
``retrieval-conformance bench features`` runs and saves, ``bench report --features`` writes the page.
"""
