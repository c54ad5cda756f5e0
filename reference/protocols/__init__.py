"""The evaluation protocols of other codebases, reproduced on top of the engine.

Each starts from its own inputs (runs and qrels, ranked lists, camera ids) and reproduces one
community's published tool to the number:

``trec``
    TREC runs and qrels as trec_eval (and ranx, BEIR, ir_measures) evaluate them.
``landmark``
    Oxford/Paris ``compute_ap``, Revisited Oxford/Paris, Google Landmarks v2.
``reid``
    The CUHK03 single-shot CMC of person re-identification.

The oracle itself (ranking, relevance, the per-query metrics) sits one level up in
:mod:`retrieval_conformance.reference`; the file readers in
:mod:`retrieval_conformance.reference.readers`.
"""
