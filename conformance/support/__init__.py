"""What the tests share: the slow oracle (``oracle``; ``brute_force`` is its seed-000 script), the
implementation tests' problems and option grids (``fixtures``), the bit-for-bit comparison of two
results (``identical``), the hypothesis strategies, hostile inputs, the
optional-dependency markers and the C test helpers.  The comparisons are ``crosscheck``'s."""
