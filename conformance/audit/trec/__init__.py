"""The audit of a TREC run and its qrels (``rc.audit(run=, qrels=)``, ``retrieval-conformance audit --run``).

trec_eval's measures (:mod:`.measures`) under every order of tied documents (:mod:`.orders`) and
every setting of trec_eval that changes them, each evaluated once by ``evaluate_run``
(:mod:`.evaluator`); the table, tie intervals and per-topic movers (:mod:`.table`); the settings
behind a published number, searched by the array audit's matcher (:mod:`.candidates`); and the
fragility of the run and qrels (:mod:`.findings`).  :mod:`.data` reads them once, with what the
run file's text says (decimals, repeated lines); :mod:`.run` puts it together.  The reports are
the array audit's (text, JSON, HTML, ``--fail-if``).

Nothing is imported here: :mod:`.measures` is read by ``--fail-if`` while the audit's own
modules load, and :mod:`.run` builds on them (``rc.audit`` imports it when given a run).
"""
