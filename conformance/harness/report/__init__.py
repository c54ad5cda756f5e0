"""What a check found, in words: results, deviations, snippets, descriptions, accepted deviations.

* :mod:`.results`: per-check results, deviations and their evidence, the report as text and
  JUnit XML;
* :mod:`.describe`: a candidate described: the nearest preset and what differs, with clauses;
* :mod:`.snippet`: a runnable snippet reproducing one deviation;
* :mod:`.known`: the known deviations a user accepts, and how a cause may be spelled.
"""
