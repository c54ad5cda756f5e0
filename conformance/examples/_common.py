"""Helpers shared by the example functions (the Hamming distance every hashing lab writes)."""

import numpy as np


def hamming(b1, b2):
    """Hamming distance between ±1 codes: ``(B - b1 . b2) / 2`` (spec §1)."""
    b1 = np.asarray(b1, dtype=np.float64)
    b2 = np.asarray(b2, dtype=np.float64)
    if b1.ndim == 1:
        b1 = b1[None, :]
    return 0.5 * (b2.shape[1] - b1 @ b2.T)


def relevant(q_label, db_labels):
    """Multi-label relevance: shares at least one label (spec §2)."""
    return (np.asarray(db_labels, dtype=np.float64) @ np.asarray(q_label, dtype=np.float64)) > 0


def reid_ranking(distmat, q_pids, g_pids, q_camids, g_camids, max_rank):
    """torchreid's preamble: arrays, ``max_rank`` lowered to the gallery size with its printed
    note, and ``np.argsort(distmat, axis=1)`` with the default kind (ties in no promised order)."""
    distmat = np.asarray(distmat)
    ids = tuple(np.asarray(a) for a in (q_pids, g_pids, q_camids, g_camids))
    num_g = distmat.shape[1]
    if num_g < max_rank:
        max_rank = num_g
        print(f"Note: number of gallery samples is quite small, got {num_g}")
    return ids, max_rank, np.argsort(distmat, axis=1)


def valid_matches(ranked, q_pid, q_cam, g_pids, g_cams):
    """(0/1 matches along one ranking, kept mask): the query's identity seen by its own camera is junk."""
    keep = ~((g_pids[ranked] == q_pid) & (g_cams[ranked] == q_cam))
    return (g_pids[ranked] == q_pid).astype(np.int32)[keep], keep
