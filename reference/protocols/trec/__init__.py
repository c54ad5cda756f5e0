"""TREC runs and qrels evaluated with trec_eval's semantics (spec §13 trec_eval).

The entry point is :func:`~retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run`
(``rc.evaluate_run``); the files and dicts it reads come from
:mod:`retrieval_conformance.reference.readers.trec`.  The modules, in the order a run goes
through them:

``queries``
    Which queries are evaluated, and each query's ranking in trec_eval's order after the
    options ``depth``, ``judged_only`` and ``ignore_identical_ids``.
``engine``
    The measures of a ranking (AP, AP@k, P@k, R-precision, RR, nDCG, the CMC) computed by any
    implementation of the engine, with no engine change (padding and relevant phantoms).
``measures``
    The measures that need the judgments themselves (``bpref``, ``success_k``, ``R_cap_k``,
    ``Judged_k``), exact, and every measure under its trec_eval name.
``ndcg_gains``
    nDCG under a user gain map (``trec_eval -m ndcg.GRADE=GAIN``), summed exactly.
``evaluation``
    ``evaluate_run``: the options checked, the engine's values and the named measures put
    together into a ``Result``.

The conventions, each read in usnistgov/trec_eval (tags v9.0.8 and v10.0; file names below are
from there; golden: ``golden/trec_eval.json``):

each read in usnistgov/trec_eval (tags v9.0.8 and v10.0; file names below are from there):

Which queries
    A query is evaluated when it has results in the run and judgments in the qrels.
    Queries only in the run are ignored; so are queries only in the qrels ("queries for
    which there are relevant docs but no retrieved docs are also ignored by default", the
    help text of ``trec_eval.c``; 9.0.8 loops over the run's queries and skips those without
    judgments).  ``complete=True`` is ``trec_eval -c``: every query of the qrels is
    evaluated, one absent from the run with 0 everywhere, and means divide by the number of
    qrels queries (``meas_avg.c``).  trec_eval 10.0 without ``-c`` stops instead ("result
    qid ... not found in qrels", exit 4) when a qrels query is absent from the run; we
    follow the documented behaviour of 9.0.8.  A query whose judgments hold no relevant
    document is evaluated: 0 everywhere, counted in the means (trec_eval zeroes each
    query's values and counts every evaluated query; only when the first query it meets
    has nothing but negative grades does it stop, "Can't calculate measure", from an
    allocation of size 0 in ``form_res_rels.c``).  An empty dict (``{qid: {}}``) is
    no results (in a run) or no judgments (in qrels), as a query without lines in a file.
Ranking
    By score descending, ties by docno in *descending* byte order (``comp_sim_docno`` in
    ``form_res_rels.c`` returns ``strcmp(p2->docno, p1->docno)``); the rank column of the
    file is ignored.  Here each query's documents are put in that order and handed to the
    engine with their scores and ``ties="stable"`` (ties keep gallery order), which
    reproduces it.  trec_eval 10.0 compares scores as doubles; 9.0.8 stored them as C
    ``float`` (``trec_format.h``), so scores equal in float32 tie there:
    ``score_dtype="float32"`` rounds them first to reproduce it.
Relevance
    ``grade >= relevance_level`` (default 1, ``trec_eval -l``).  R is the number of such
    documents in the qrels, retrieved or not (``num_rel``, ``form_res_rels.c``).
Measures (per query; R as above, H(k) relevant documents in the top k, n retrieved)
    ``map``: AP = (1/R) Σ_{retrieved relevant at rank r} H(r)/r (``m_map.c``), 0 if R = 0.
    ``P_k``: P@k = H(k)/k, also when fewer than k documents are retrieved (``m_P.c``:
    "nonrelevant docs fill in the rest").  ``recall_k``: H(k)/R, 0 if R = 0
    (``m_recall.c``).  ``Rprec``: H(R)/R, 0 if R = 0 (``m_Rprec.c``).  ``recip_rank``:
    1 / the rank of the first relevant retrieved document, 0 if none (``m_recip_rank.c``).
    ``ndcg`` (``ndcg_cut_k`` with k): the qrels grades as gains, whatever the relevance
    level; the document at rank r divided by log2(r + 1) (``m_ndcg.c`` since 9.0.4; spec
    §7 discount=log2); the ideal from every positively judged
    document, 0 when there is none.  Means are plain means over the evaluated queries
    (``meas_avg.c``).

"""
