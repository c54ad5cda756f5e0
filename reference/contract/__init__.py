"""The contract: the bottom layer every other part of the project stands on.

It holds the vocabulary of the specification (options and their allowed values, presets),
the data that flows between the layers (:class:`~.problem.Problem`, :class:`~.problem.PerQuery`,
:class:`~.problem.Result`), input validation, aggregation over queries, the registry of
implementations, and :func:`~.evaluate.evaluate`, which validates the inputs, streams query
blocks to an implementation picked by name and aggregates what it returns.

It imports no other project package (``conformance/tests/test_layers.py`` checks this); the exact
oracle (``reference/``) and the fast implementations (``implementations/``) import it.
"""
