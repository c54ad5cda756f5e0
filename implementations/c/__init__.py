"""The C implementation's Python side: the ctypes bindings of the library built from ``csrc/``.

:mod:`.library` loads the library once (ABI version and value-count checks) and declares its
structures and enum codes; :mod:`.backend` is ``implementation="c"`` (arguments packed for C,
the gallery once per evaluation); :mod:`.curves` binds ``rc_curves`` (``rc.curves``);
:mod:`.shards` binds ``rc_shard_counts`` (the gallery shards' counts of the dask and distributed
paths); :mod:`.threads` holds the default thread count.  The library itself is
``retrieval_conformance.implementations._rc_core``, built by ``setup.py``.
"""
