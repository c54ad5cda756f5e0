"""Helpers shared by the example functions (the Hamming distance every hashing lab writes)."""
import numpy as np


def hamming(b1, b2):
    """Hamming distance between ±1 codes: ``(B - b1 . b2) / 2`` (CONVENTIONS §1)."""
    b1 = np.asarray(b1, dtype=np.float64)
    b2 = np.asarray(b2, dtype=np.float64)
    if b1.ndim == 1:
        b1 = b1[None, :]
    return 0.5 * (b2.shape[1] - b1 @ b2.T)


def relevant(q_label, db_labels):
    """Multi-label relevance: shares at least one label (CONVENTIONS §2)."""
    return (np.asarray(db_labels, dtype=np.float64) @ np.asarray(q_label, dtype=np.float64)) > 0
