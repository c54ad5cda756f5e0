"""The identification engine: what ``check`` and ``--identify`` both run.

* :mod:`.composite`: a :class:`~.composite.Composite` candidate, one
  :class:`~..candidates.Candidate` per returned field (mAP, CMC, mINP, MAP@R...), for functions
  whose fields come from different code (mAP through a grouped-ties library AP, CMC through an
  unstable argsort);
* :mod:`.per_field`: elimination field by field (each field's candidates eliminated on that
  field's values alone, so the search grows with the number of fields, not with its power),
  then combined: one candidate where one describes every field, a composite otherwise;
* :mod:`.evidence`: for each ruled-out near candidate, the smallest input that ruled it out;
* :mod:`.impossible`: values no fraction can take (above 1, below 0).
"""
