"""The identification engine: what ``check`` and ``--identify`` both run.

* :mod:`.analysis`: what a function computes, by elimination over everything it returned:
  findings first, then candidates eliminated in stages, split and separated, then probed;
* :mod:`.findings`: what comes before any convention (raising, non-determinism, mutated
  inputs, slow calls), and the conditions each raised call met, each exception type with its
  own trigger;
* :mod:`.eliminate`: keep the candidates that reproduce every value, then split the survivors
  on further inputs, and prefer among those left;
* :mod:`.per_field`: elimination field by field (each field's candidates eliminated on that
  field's values alone, so the search grows with the number of fields, not with its power),
  then combined: one candidate where one describes every field (a main field's candidate that
  reproduces another field is kept for it), a composite otherwise, each part naming only the
  options its field's values show;
* :mod:`.composite`: a :class:`~.composite.Composite` candidate, one
  :class:`~..candidates.candidate.Candidate` per returned field (mAP, CMC, mINP, MAP@R...), for
  functions whose fields come from different code (mAP through a grouped-ties library AP, CMC
  through an unstable argsort);
* :mod:`.separate`: inputs on which the nearest alternatives predict other values;
* :mod:`.probes`: further calls that test a claim (large tie groups, ``topk=-1``, scores <= 0);
* :mod:`.outside`: inputs outside a protocol's usual domain (what landmark AP code does with
  names real data holds);
* :mod:`.partition`: where nothing reproduces every input, what reproduces every input outside
  one family (a cut-off inside the list, tied distances...), so that "cause unknown" is confined
  to the inputs it does not explain;
* :mod:`.causes`: the causes a report may name for a deviation, each shown, and the causes a
  verdict names (the same words for ``check`` and ``--identify``);
* :mod:`.evidence`: for each ruled-out near candidate, the smallest input that ruled it out;
* :mod:`.impossible`: values no fraction can take (above 1, below 0).
"""
