"""Adapters: the signatures people write, how an input becomes their calls, and what each owns.

* :mod:`.base`: the :class:`~.base.Adapter` base class, whose attributes and methods are every
  behaviour of the harness that depends on the adapter (the presets and junk rules it is
  identified among, its tie and CMC-length candidates, the protocol checks), the call and
  reading records, the errors, and the exact readers;
* :mod:`.average_precision`: the mAP and AP signatures (``hashing-codes``,
  ``distances-relevance``, ``reid``, ``oxford``, ``sklearn``, ``torchmetrics``);
* :mod:`.rank_metrics`: the nDCG, MAP@R, MRR and Recall@k signatures;
* :mod:`.registry`: the adapters by name, their default protocols, :func:`~.registry.get_adapter`.
"""
