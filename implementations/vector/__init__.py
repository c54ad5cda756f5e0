"""The vectorised implementation shared by numpy and torch: one algorithm over array operations.

* :mod:`.blocks`: the block loop and the one sort key (distance, tie key, relevance bit) per row;
* :mod:`.relevance_blocks`: relevance and junk of a query block;
* :mod:`.tie_groups`: the tie groups of the relevant items;
* :mod:`.concrete`: AP, P@k, R@k, CMC and INP under a concrete tie order or ``grouped``;
* :mod:`.expected`: the same under ``ties="expected"``, from :mod:`.distributions`;
* :mod:`.rank_metrics`: nDCG, RR, AP@R and the hit rate;
* :mod:`.double_double`: double-double sums, so that every mean is rounded once.

``numpy_backend`` and ``torch_backend`` supply the array module (numpy, or torch on a device);
the dask shards reuse the numpy kernels of :mod:`.concrete` and :mod:`.expected`.
"""
