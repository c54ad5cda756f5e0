"""Pickles read without running their code: a pickle can execute anything, so nothing is ever
handed to ``pickle.load`` before it is checked.

* :mod:`.opcodes`: every opcode of the stream checked before loading (memory, nesting, globals);
* :mod:`.allowed_globals`: the few callables a ground-truth pickle may name;
* :mod:`.proxies`: what those names become (numpy arrays rebuilt from their bytes, never object
  or structured arrays);
* :mod:`.restricted`: :class:`RestrictedUnpickler` and :func:`load_restricted_pickle`;
* :mod:`.revisitop_gnd`: revisitop's and cirtorch's ground-truth pickles (``gnd_roxford5k.pkl``).
"""
