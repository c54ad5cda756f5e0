"""The subcommands of ``retrieval-conformance`` that the package face runs itself.

:mod:`.evaluation`
    ``evaluate``: its flags, reading the arrays, and the evaluation.
:mod:`.run_options`
    Which options apply to arrays, to a TREC run (``--run``/``--qrels``) or to a search
    (``--search``); one that does not apply is refused by name.
:mod:`.printing`
    trec_eval's summary lines and the per-query table (text, JSON, CSV).

The command's entry point, its parser and the subcommands of the layers above (run by name)
are in ``cli.py``; ``explain`` is in ``spec_cli.py``.
"""
