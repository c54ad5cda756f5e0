"""The zoo: lab-style metric functions written as source code, each with the behaviours it was
composed from, and the round trip that runs the harness on them and compares its verdict with
that truth.

:mod:`.catalogue`
    Per adapter with a template, what its functions may be composed of: the values of the options
    it depends on, the known bugs of spec §11, a field's own option value, exceptions on their own
    triggers, landmark name rules.
:mod:`.recipes`
    What a zoo function is made of (:class:`~.recipes.Recipe`) and the seeded drawing of recipes
    from the catalogue.
:mod:`.writer`, :mod:`.rank_templates`, :mod:`.landmark_template`
    The source code of a recipe: loops, argsort, the lab's own AP, nDCG, MAP@R and mean; never
    the reference.  :mod:`.code_parts` holds the pieces every template is written from.
:mod:`.roundtrip`
    Compile, run ``identify`` in-process, judge the verdict against the recipe, tally the rate.
:mod:`.memo`
    A verdict reused only for a function that answered every call of an earlier run identically.
:mod:`.shared_cache`
    The reference's exact values shared by every session of a run, keyed by the inputs' contents.

``python -m retrieval_conformance.conformance.zoo`` runs the long profile and prints its rate.
"""
