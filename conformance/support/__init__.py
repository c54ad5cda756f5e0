"""What the tests share: the slow oracle (``oracle``; ``brute_force`` is its seed-000 script), the
generated problems (``problems``), the hypothesis strategies, hostile inputs, the
optional-dependency markers and the C test helpers.  The comparisons are ``crosscheck``'s."""
