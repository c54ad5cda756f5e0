"""The one generator of random problems, shared by the tests, the fuzz campaign and the harness.

A builder asks a *source of choices* for every number it draws, so the same builder runs from
a seeded ``random.Random`` (the fuzz campaign, the harness's ``identify``), a numpy Generator
(the implementation tests) or hypothesis (the property tests, which shrink a failure cell by
cell).

:mod:`.choices`
    The sources of choices and the array sources built from them, with recording and replay.
:mod:`.evaluate_inputs`
    Keyword problems of ``rc.evaluate``: every ranking and relevance input, junk, cameras,
    graded relevance and every option (the fuzz campaign's valid problems), and the main job's
    cross-check inputs (fewer kinds, the same stream per seed as always).
    Also the inputs of ``rc.curves``' tests, with codes and multi-hot rows several words wide.
:mod:`.tie_heavy`
    Small tie-heavy problems of the engine: ``Problem`` fields, bare matrices, and options.

The harness draws its families of cases (``conformance/harness/generate.py``) from the same
sources of choices, each family shaping the drawn case to its property.
"""
