"""What a function might compute, and what each possibility predicts, exactly.

* :mod:`.candidate`: :class:`~.candidate.Candidate` (a convention, a CMC length rule, known
  bugs) and the staged space identification searches;
* :mod:`.bugs`: the known bugs (spec §11), each with when its model applies;
* :mod:`.reference_values`: :class:`~.reference_values.Convention` and the reference's exact
  values of an input under it (:class:`~.reference_values.ReferenceCache`), and the presets'
  conventions by kind;
* :mod:`.predict`: a candidate's prediction of every field of every call;
* :mod:`.rank_bugs`: exact models of the nDCG and MRR bugs;
* :mod:`.landmark_rules`: what landmark AP code does with names the usual inputs never hold.
"""
