"""The inputs the harness calls a function on.

* :mod:`.case`: :class:`~.case.Case`, the neutral form of one input, and the exact conversions
  between input forms (codes, multi-hot labels, ReID ids);
* :mod:`.golden`: the golden cases as inputs;
* :mod:`.families`: the families of generated inputs, each aimed at one clause;
* :mod:`.long_lists`: the lists longer than the cut-offs real code applies on its own;
* :mod:`.drawing`: the random choices a generator makes, through hypothesis or a seed;
* :mod:`.public`: the names above (and the generator's), importable from one module.
"""
