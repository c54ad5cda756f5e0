"""Calling the user's function: found from its target, called safely, its outcome made plain.

* :mod:`.loading`: the function from a command-line target, and a known-deviations file read;
* :mod:`.runner`: the time limit, the isolation (a forked worker, a thread, or none);
* :mod:`.processes`: the processes the worker's function started, found and killed;
* :mod:`.invoke`: one call on private copies of its arguments, and the worker's loop;
* :mod:`.capture`: what a call writes to stdout and stderr;
* :mod:`.arguments`: the copies a function gets, and which of them it modified;
* :mod:`.outcome`: what one call did (:class:`~.outcome.Outcome`), its value converted.
"""
