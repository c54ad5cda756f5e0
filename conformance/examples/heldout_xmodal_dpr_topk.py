"""Top-k retrieval accuracy as DPR's ``validate`` reports it (hit rate over a 100-passage list).

Reproduces facebookresearch/DPR@a31212d ``dpr/data/qa_validation.py`` ``calculate_matches`` +
``dense_retriever.py`` ``validate``: each question's retrieved list has ``n_docs`` (default 100)
entries in the order the flat FAISS index returns them (descending score; equal scores by index
id, i.e. gallery order); the first position holding an answer marks ``best_hit``, every
``top_k_hits[i]`` with i >= best_hit counts the question, and the reported accuracy at k is
``top_k_hits[k - 1] / number of questions``: the hit rate, a question without any answer counted
as a miss.  Asking for k > n_docs indexes past the list (IndexError).

Wrapper: the FAISS search is a stable argsort of the distances cut at n_docs = 100 (FAISS pads
a gallery smaller than n_docs with id -1, which DPR maps to the last passage; harmless for the
first hit, since every real passage comes first); "has answer" is the relevance row.
"""

import numpy as np

N_DOCS = 100


def calculate_top_k_hits(question_hits, n_docs):
    top_k_hits = [0] * n_docs
    for hits in question_hits:
        best_hit = next((i for i, x in enumerate(hits) if x), None)
        if best_hit is not None:
            top_k_hits[best_hit:] = [v + 1 for v in top_k_hits[best_hit:]]
    return top_k_hits


def recall_at_k(distances, relevance, k):
    distances, relevance = np.asarray(distances, float), np.asarray(relevance, bool)
    question_hits = []
    for d, rel in zip(distances, relevance):
        ids = list(np.argsort(d, kind="stable")[:N_DOCS])
        ids += [-1] * (N_DOCS - len(ids))  # FAISS padding
        question_hits.append([bool(rel[i]) for i in ids])
    top_k_hits = calculate_top_k_hits(question_hits, N_DOCS)
    return top_k_hits[k - 1] / len(distances)
