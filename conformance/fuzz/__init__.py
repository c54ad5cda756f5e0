"""The fuzz campaign we keep: hostile and edge inputs through every implementation.

``python -m retrieval_conformance.conformance.fuzz`` runs it (see ``--help``); the pytest suite
runs a quick derandomised profile of the same generator.  ``--target files`` runs the file
readers' campaign (:mod:`.files`: ``.npy``/``.npz`` headers, TREC and JSON Lines lines) and
``--target evaluate-argv`` the ``evaluate`` command's (:mod:`.evaluate_argv`: argument vectors);
``--target check`` gives the harness's ``check`` hostile functions (:mod:`.hostile_targets`).
"""
