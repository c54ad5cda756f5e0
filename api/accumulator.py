"""Metrics accumulated over blocks of queries, for evaluation inside a training or validation loop.

The gallery is fixed when the :class:`Accumulator` is made; each :meth:`Accumulator.update`
evaluates one block of queries against it at once and keeps only their per-query values;
:meth:`Accumulator.compute` averages them under the empty-query policy.  The result is
identical, bit for bit, to one :func:`~retrieval_conformance.evaluate` call on every query
in update order: queries are independent, and the means are exact, so they depend neither
on the order of the queries nor on how they were split into blocks.

>>> import numpy as np
>>> import retrieval_conformance as rc
>>> acc = rc.Accumulator(db_labels=[0, 1, 1], db_cams=[0, 0, 1], protocol="reid")
>>> acc.update(distances=[[0.5, 0.1, 0.4]], query_labels=[1], query_cams=[1])
>>> acc.update(distances=[[0.3, 0.2, 0.9]], query_labels=[0], query_cams=[1])
>>> len(acc), acc.compute().map
(2, 0.75)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple, cast

import numpy as np
from retrieval_conformance.reference.contract import options_table, registry
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.aggregation import aggregate
from retrieval_conformance.reference.contract.embeddings import METRICS, SliceCache, embedding_distances
from retrieval_conformance.reference.contract.evaluate import evaluate
from retrieval_conformance.reference.contract.gallery import fixed_gallery_arrays, fixed_gallery_size
from retrieval_conformance.reference.contract.precision import EMBEDDINGS, precision_of, precisions, warn_low_precision
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Result
from retrieval_conformance.reference.contract.promotion import block_dtype
from retrieval_conformance.reference.contract.protocol_options import resolve_options
from retrieval_conformance.reference.contract.query_blocks import check_cmc_size, no_queries

_UNSET: Any = object()

#: query-block matrices with one column per gallery item
GALLERY_COLUMNS = ("distances", "scores", "relevance", "junk")


@options_table.documented(
    "accumulator",
    implementation='Resolved here (``"auto"``: the fastest available) and used for every block; '
    '``"reference"`` also keeps exact ``Fraction`` values (``result.exact``).',
    device="As in :func:`~retrieval_conformance.evaluate`.",
)
class Accumulator:
    """Retrieval metrics accumulated over blocks of queries against a fixed gallery.

    The options are those of :func:`~retrieval_conformance.evaluate`, validated here, once: a bad
    option fails at construction, by name.

    Parameters
    ----------
    db_labels, db_embeddings, db_codes, db_cams : array-like or torch tensor, optional
        The gallery side, as in :func:`~retrieval_conformance.evaluate`: labels (1-D ids or
        multi-hot rows), embeddings or binary codes (for blocks of ``query_embeddings`` or
        ``query_codes``), cameras (ReID presets).  When the blocks bring a ``distances`` or
        ``scores`` matrix, ``db_labels`` (and ``db_cams``) suffice, and nothing is needed when
        they bring ``relevance`` too.  Tensors are moved to the CPU; arrays are held, not
        copied, so do not change them in place between updates.
    {options}
    metric : {"euclidean", "cosine"}, default "euclidean"
        How distances are computed from embeddings, as in :func:`~retrieval_conformance.evaluate`.
    distributed : bool
        True: evaluate on the current ``torch.distributed`` process group.  Each rank passes its
        shard of the gallery here (possibly empty) and its queries to ``update()`` (embeddings or
        codes with labels); ``compute()``, called on every rank, returns on every rank the result
        of all queries (rank order) against the whole gallery (shards in rank order), bit for
        bit what one process gives on the concatenation.  Every rank must pass the same options:
        ranks that disagree (or whose arrays differ in columns) all raise one ``ValueError``
        naming the option and each rank's value, before any pass.  ``traffic`` then reports the
        bytes moved (see ``docs/guide/distributed.md``).

    Notes
    -----
    Blocks of query embeddings in different dtypes are read as their concatenation is, in numpy's
    ``result_type`` of every non-empty block (``reference/contract/promotion.py``, the rule of
    ``distributed=True`` too): a float32 block after float64 ones is computed in float64.  A block
    that would change the precision of the blocks already evaluated (float64 after float32 against
    a float32 gallery) is refused by name: their embeddings are not kept, so their bits could not
    be those of the concatenation.

    Examples
    --------
    >>> import numpy as np
    >>> import retrieval_conformance as rc
    >>> gallery = np.eye(3)
    >>> acc = rc.Accumulator(db_embeddings=gallery, db_labels=[0, 1, 2], k=1, implementation="numpy")
    >>> for queries, labels in [(gallery[:2], [0, 1]), (gallery[2:], [1])]:
    ...     acc.update(query_embeddings=queries, query_labels=labels)
    >>> res = acc.compute()
    >>> float(res.precision_at_k), res.ap.tolist()
    (0.6666666666666666, [1.0, 1.0, 0.0])
    """

    def __init__(
        self,
        *,
        db_labels=None,
        db_embeddings=None,
        db_codes=None,
        db_cams=None,
        protocol: str = "hashing",
        k: Optional[int] = _UNSET,
        max_rank: int = 50,
        ties: Optional[str] = None,
        ap_rule: Optional[str] = None,
        ap_at_k: Optional[str] = None,
        empty: Optional[str] = None,
        radius: Optional[float] = None,
        metric: str = "euclidean",
        implementation: str = "auto",
        gain: Optional[str] = None,
        recall: Optional[str] = None,
        discount: Optional[str] = None,
        device=None,
        distributed: bool = False,
        metrics=None,
    ) -> None:
        self._options = resolve_options(
            protocol,
            None if k is _UNSET else k,
            max_rank,
            ties,
            ap_rule,
            ap_at_k,
            empty,
            radius,
            k_given=k is not _UNSET,
            gain=gain,
            recall=recall,
            discount=discount,
            metrics=metrics,
        )
        self._protocol = protocol
        self._metric = v.choice("metric", metric, METRICS)
        self._db_precision = precision_of(db_embeddings)  # before a bfloat16 tensor is read as float32
        self._gallery = fixed_gallery_arrays(
            dict(db_labels=db_labels, db_embeddings=db_embeddings, db_codes=db_codes, db_cams=db_cams), protocol
        )
        if distributed not in (True, False):
            raise TypeError(f"distributed: expected True or False, got {distributed!r}")
        self._distributed = None
        if distributed:  # a rank's shard may be empty; the shards' sizes are gathered at compute()
            from retrieval_conformance.distributed import DistributedQueries  # torch only when asked for

            self._distributed = DistributedQueries(
                self._gallery, self._options, protocol, self._metric, implementation, device
            )
        self._gallery_size = None if distributed else fixed_gallery_size(self._gallery)
        impl = registry.get(implementation) if device is None else registry.on_device(implementation, device)
        self._implementation = self._distributed.implementation if self._distributed is not None else impl.name
        self._device = device
        # db_embeddings checked and cut into exact slices once, at the first block of embeddings
        self._db_embeddings: Optional[Any] = None
        self._db_slices: SliceCache = {}
        self.reset()

    # -- state ------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every query so far (the gallery and the options stay)."""
        self._parts: list = []
        self._n_queries = 0
        self._n_gallery: Optional[int] = self._gallery_size
        self._query_dtype: Optional[np.dtype] = None
        # the first query row of a block with a -1 / with a 0 in its codes (None: none yet)
        self._codes_seen: Dict[str, Optional[int]] = {"-1": None, "0": None}
        if self._distributed is not None:
            self._distributed.reset()

    def __len__(self) -> int:
        """Queries accumulated since construction or the last :meth:`reset`."""
        return self._n_queries

    def __repr__(self) -> str:
        return (
            f"Accumulator(protocol={self._protocol!r}, implementation={self._implementation!r}, "
            f"queries={self._n_queries}, gallery={self._n_gallery})"
        )

    @property
    def options(self) -> Options:
        """The resolved options (the preset with every override), as in ``Result.options``."""
        return self._options

    @property
    def protocol(self) -> str:
        return self._protocol

    @property
    def implementation(self) -> str:
        """The name of the implementation that computes every block."""
        return self._implementation

    @property
    def query_dtype(self) -> Optional[np.dtype]:
        """The dtype of the query embeddings so far, as their concatenation has it (numpy's
        ``result_type`` of every non-empty block); None before the first block of embeddings."""
        return self._query_dtype

    @property
    def traffic(self):
        """Under ``distributed=True``, the bytes this rank sent and received in the last
        :meth:`compute` (``bytes_sent``, ``bytes_received``, ``collectives``); else None."""
        return None if self._distributed is None else self._distributed.traffic

    @property
    def n_gallery(self) -> Optional[int]:
        """Gallery items; None before the first block when no gallery array was given."""
        return self._n_gallery

    # -- the loop ---------------------------------------------------------------------------
    def update(
        self,
        *,
        query_embeddings=None,
        query_codes=None,
        distances=None,
        scores=None,
        query_labels=None,
        query_cams=None,
        relevance=None,
        junk=None,
    ) -> None:
        """Evaluate one block of queries against the gallery and keep their per-query values.

        Parameters
        ----------
        query_embeddings, query_codes, distances, scores
            Exactly one ranking input for the block's queries, one row per query: embeddings
            or codes (with ``db_embeddings`` / ``db_codes`` given at construction), or a
            (queries, gallery) distance or similarity matrix.
        query_labels, relevance
            One relevance input: labels (with ``db_labels``) or a (queries, gallery) boolean
            matrix.
        query_cams, junk
            The block's cameras (with ``db_cams``) and an explicit (queries, gallery) junk mask.

        Notes
        -----
        A block that fails validation raises (naming the argument and where the block starts)
        and leaves the accumulator as it was.  A block of no queries (every given array with 0
        rows, as the last batch of a sharded loader can be) changes nothing.
        """
        block = dict(
            query_embeddings=query_embeddings,
            query_codes=query_codes,
            distances=distances,
            scores=scores,
            query_labels=query_labels,
            query_cams=query_cams,
            relevance=relevance,
            junk=junk,
        )
        start = self._n_queries
        if self._distributed is not None:
            try:
                self._n_queries += self._distributed.update(block)
            except (ValueError, TypeError) as exc:
                raise _located(exc, start) from None
            return
        kinds = precisions(block)  # before a bfloat16 tensor is read as float32
        try:
            block = {name: v.array_input(name, value) for name, value in block.items() if value is not None}
            seen = self._check_code_kind(block.get("query_codes"), start)
            n_gallery = self._check_gallery_columns(block)
            if no_queries(block):
                return
            block, query_dtype = self._promoted(block)
            per_query = self._evaluate_block(block, kinds)
            # the per-query CMC rows of every query so far, as one evaluate call would check them
            # a block was evaluated, so the gallery size is known (from the constructor or a matrix)
            check_cmc_size(start + per_query.n_relevant.shape[0], cast(int, n_gallery), self._options.max_rank)
        except (ValueError, TypeError) as exc:
            raise _located(exc, start) from None
        self._parts.append(per_query)
        self._codes_seen = seen
        self._query_dtype = query_dtype
        self._n_queries += per_query.n_relevant.shape[0]
        self._n_gallery = n_gallery

    def compute(self) -> Result:
        """The :class:`~retrieval_conformance.Result` of every query so far, in update order.

        Identical to one ``evaluate`` call on the concatenated blocks; like it, ``empty="error"``
        raises here (naming the first empty query by its overall index), and a policy that
        leaves every query out warns ``NoQueryCountedWarning``.
        """
        if self._distributed is not None:
            result = self._distributed.compute()
            self._n_gallery = self._distributed.n_gallery  # every rank's shard together
            return result
        if not self._parts:
            raise ValueError("Accumulator.compute: no queries yet; call update(...) with a block of queries first")
        return aggregate(
            PerQuery.concat(self._parts), self._options, self._protocol, self._implementation, n_gallery=self._n_gallery
        )

    # -- helpers ----------------------------------------------------------------------------
    def _check_gallery_columns(self, block: Dict[str, Any]) -> Optional[int]:
        """The gallery size of this block (None while neither this block nor an earlier one has a
        matrix); an error naming the matrix whose columns differ from the gallery given at
        construction or seen in earlier blocks."""
        columns = [(name, block[name]) for name in GALLERY_COLUMNS if name in block and block[name].ndim == 2]
        if self._n_gallery is None:
            return columns[0][1].shape[1] if columns else None
        for name, matrix in columns:
            if matrix.shape[1] != self._n_gallery:
                raise ValueError(
                    f"{name}: expected {self._n_gallery} columns (one per gallery item), got shape "
                    f"{matrix.shape}; {self._gallery_origin()}"
                )
        return self._n_gallery

    def _gallery_origin(self) -> str:
        if self._gallery_size is not None:
            name, arr = next(iter(self._gallery.items()))
            return f"the gallery given to Accumulator ({name}) has {arr.shape[0]} items"
        return (
            f"earlier update() blocks had {self._n_gallery} gallery items, and every block ranks the same "
            "gallery; call reset() first to start over with another one"
        )

    def _check_code_kind(self, codes, start: int) -> Dict[str, Optional[int]]:
        """±1 or {0, 1} codes is decided over every query, as one ``evaluate`` call decides it: a
        0 in one block and a -1 in another is an error whichever comes first (spec §1)."""
        seen = dict(self._codes_seen)
        if codes is None or codes.dtype.kind not in "fiub":
            return seen  # nothing to decide here; the block's own checks name the problem
        for value in ("-1", "0"):
            if seen[value] is None and (codes == int(value)).any():
                seen[value] = start
        # both in this block alone: the block's own check names the 0 and where it is
        if seen["-1"] is not None and seen["0"] is not None and seen["-1"] != seen["0"]:
            raise ValueError(
                f"query_codes: the block starting at row {seen['-1']} holds a -1 (codes in {{-1, +1}}) and the "
                f"block starting at row {seen['0']} a 0 (codes in {{0, 1}}); one evaluation takes one kind of "
                "codes: a 0 in ±1 codes usually comes from sign(0) = 0, binarise with np.where(x >= 0, 1, -1)"
            )
        return seen

    def _evaluate_block(self, block: Dict[str, Any], kinds: Dict[str, str]) -> PerQuery:
        """Per-query values of one block, from ``evaluate`` with the accumulator's options.

        Per-query values do not depend on the empty-query policy (``aggregate`` applies it), so
        the block is evaluated under ``empty="zero"``: ``"error"`` and the warning when no query
        is counted then come from :meth:`compute`, which sees every query, as one call would.
        """
        # every option by its field (a hand-written list once left gain, recall and discount out)
        options = dict(dataclasses.asdict(self._options), empty="zero")
        gallery = self._gallery
        if self._db_precision is not None and "query_embeddings" in block:
            kinds = dict(kinds, db_embeddings=self._db_precision)
        # evaluate warns about what it sees: not a bfloat16 tensor read as float32 here, nor the
        # embeddings whose distances are computed here
        seen_by_evaluate = ("float16", "longdouble")
        if self._embeddings_only(block):
            warn_low_precision(
                {name: kind for name, kind in kinds.items() if name in EMBEDDINGS},
                dict(block, db_embeddings=self._gallery["db_embeddings"]),
                lambda q, d: embedding_distances(q, d, self._metric),
            )
            kinds = {name: kind for name, kind in kinds.items() if name not in EMBEDDINGS}
        warn_low_precision(
            {name: kind for name, kind in kinds.items() if kind not in seen_by_evaluate},
            block,
            lambda q, d: embedding_distances(q, d, self._metric),
        )
        if self._embeddings_only(block):
            # the distances evaluate would compute, with the gallery's slices made once for every block
            block = dict(block, distances=self._embedding_distances(block.pop("query_embeddings")))
            gallery = {name: value for name, value in gallery.items() if name != "db_embeddings"}
        result = evaluate(
            **gallery,
            **block,
            protocol=self._protocol,
            **options,
            metric=self._metric,
            implementation=self._implementation,
            device=self._device,
        )
        return result.per_query

    def _promoted(self, block: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[np.dtype]]:
        """The block with its query embeddings in the dtype of every block's concatenation
        (:mod:`~retrieval_conformance.reference.contract.promotion`), and that dtype; a block that
        would change the precision of the blocks already evaluated is refused there."""
        if not self._embeddings_only(block) or block["query_embeddings"].dtype.kind not in "fiu":
            return block, self._query_dtype  # evaluate names what is wrong with it
        embeddings = block["query_embeddings"]
        dtype = block_dtype(embeddings.dtype, self._query_dtype, self._gallery["db_embeddings"].dtype)
        if embeddings.dtype == dtype:
            return block, dtype
        if embeddings.dtype.kind in "iu" and dtype == np.float64:  # as float_matrix reads integers
            return dict(block, query_embeddings=v.exact_float64("query_embeddings", embeddings)), dtype
        return dict(block, query_embeddings=embeddings.astype(dtype)), dtype

    def _embeddings_only(self, block: Dict[str, Any]) -> bool:
        """A block whose one ranking input is a matrix of query embeddings, against db_embeddings
        (anything else goes to ``evaluate`` as it is, which names what is wrong)."""
        rankings = [name for name in ("query_embeddings", "query_codes", "distances", "scores") if name in block]
        return (
            rankings == ["query_embeddings"]
            and "db_embeddings" in self._gallery
            and block["query_embeddings"].ndim == 2
        )

    def _embedding_distances(self, query_embeddings):
        if self._db_embeddings is None:
            self._db_embeddings = v.float_matrix(
                "db_embeddings", self._gallery["db_embeddings"], "one embedding per gallery item"
            )
        return embedding_distances(
            query_embeddings, self._db_embeddings, self._metric, db_checked=True, sliced=self._db_slices
        )


def _located(exc: Exception, start: int) -> Exception:
    """``exc`` with where the failing block starts among every query so far."""
    try:
        return type(exc)(f"{exc} (in the update() block starting at query {start})")
    except Exception:  # an exception type that takes other arguments: keep it as it is
        return exc
