"""The main job (``retrieval-conformance golden``): every golden case against every
implementation, the landmark golden values, then generated cross-checks against the reference.

``api/cli.py`` parses the arguments and calls :func:`golden_main` by name.
"""

from __future__ import annotations

import sys
import time


def _progress(done: int, total: int, label: str, stream=None) -> None:
    stream = sys.stderr if stream is None else stream  # at call time: the stderr of this run, not of the import
    if stream.isatty() or done == total:
        stream.write(f"\r{label}: {done}/{total}")
        if done == total:
            stream.write("\n")
        stream.flush()


def golden_main(args) -> int:
    """Every golden case against every implementation, then generated cross-checks."""
    import retrieval_conformance as rc
    from retrieval_conformance import golden
    from retrieval_conformance.conformance.crosscheck import crosscheck
    from retrieval_conformance.reference.contract import registry

    try:
        names = _checked_names(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    status = {n: registry.unavailable_reason(n) for n in names}
    usable = [n for n in names if status[n] is None]
    for n in names:
        if status[n] is not None:  # a note, not an error: the others still run (--require makes it one)
            print(f"skipped: {n} ({status[n]})")
            if n in args.require:
                print(
                    f"error: --require: implementation {n!r} is required but unavailable here: {status[n]}",
                    file=sys.stderr,
                )
                return 1
    cases = golden.load_cases()
    width = max(len(c["id"]) for c in cases)
    print(
        f"\nGolden cases ({len(cases)}) against {', '.join(usable)}; exact Fractions for the reference,"
        f" |diff| <= {golden.FLOAT_TOLERANCE:g} otherwise\n"
    )
    print(f"{'case':<{width}}  {'expected mAP':>14}  " + "  ".join(f"{n:>10}" for n in usable))
    failures = 0
    for case in cases:
        cells = []
        for n in usable:
            try:
                res = rc.evaluate(**golden.evaluate_kwargs(case), implementation=n)
                bad = golden.mismatches(case, res, exact=(n == "reference"))
            except Exception as exc:  # a crash is a failure of that implementation, reported
                bad = [f"{type(exc).__name__}: {exc}"]
            cells.append("ok" if not bad else "MISMATCH")
            if bad:
                failures += 1
                for line in bad:
                    print(f"  {case['id']} [{n}] {line}", file=sys.stderr)
        expected_map = case["expected"].get("map", "")
        print(f"{case['id']:<{width}}  {expected_map:>14}  " + "  ".join(f"{c:>10}" for c in cells))
    failures += _landmark_golden(args)
    if args.random:
        print(f"\nGenerated cross-checks against the reference ({args.random} tie-heavy problems, every option):")
        for n in usable:
            if n == "reference":
                continue
            t0 = time.perf_counter()
            report = crosscheck(n, args.random, seed=args.seed, progress=lambda d, t, n=n: _progress(d, t, f"  {n}"))
            failures += len(report)
            verdict = "ok" if not report else f"{len(report)} MISMATCH(ES)"
            print(f"  {n:<10} {verdict}  ({time.perf_counter() - t0:.1f} s)")
            for line in report[:10]:
                print(f"    {line}")
    print(f"\n{'FAILED' if failures else 'PASSED'}: {failures} mismatch(es)")
    return 1 if failures else 0


def _checked_names(args) -> list:
    """The implementations to check: every name given registered, every required one checked.

    A typo must not turn the gate into one that checks nothing and passes (ValueError instead).
    """
    from retrieval_conformance.reference.contract import registry

    given = registry.check_names("--implementations", args.implementations or [])
    required = registry.check_names("--require", args.require or [])
    names = given or registry.names()
    left_out = [n for n in required if n not in names]
    if left_out:
        raise ValueError(
            f"--require: {left_out[0]!r} is required but not among --implementations "
            f"({', '.join(names)}); add it there or drop it from --require"
        )
    return names


def _landmark_golden(args) -> int:
    """Landmark golden values (reference only: these protocols have one implementation).

    Oxford: every edge case and every real Oxford5k list printed by our compute_ap program,
    reproduced by ``oxford_ap`` to the printed digit; ROxford/GLDv2: hand-derived fractions.
    """
    from pathlib import Path

    from retrieval_conformance import golden
    from retrieval_conformance.reference.protocols.landmark import evaluate_landmark, format_cpp_float, oxford_ap
    from retrieval_conformance.reference.readers import read_gt_folder, read_ranked_list

    data = golden.load_file("landmark_oxford.json")
    root = Path(str(golden.resources.files(golden.__name__) / "data" / "oxford5k"))
    gt = read_gt_folder(root / "gt")
    checked, problems = 0, []
    for case in data["edge_cases"]:
        got = format_cpp_float(oxford_ap(case["ranked"], case["good"], case["ok"], case["junk"]))
        checked += 1
        if got != case["printed"]:
            problems.append(f"oxford edge case {case['name']}: printed {got}, golden {case['printed']}")
    for run, values in data["runs"].items():
        for query, printed in values.items():
            g = gt[query]
            ranked = read_ranked_list(root / "runs" / run / f"{query}_top.txt")
            got = format_cpp_float(oxford_ap(ranked, g.good, g.ok, g.junk))
            checked += 1
            if got != printed:
                problems.append(f"oxford {run}/{query}: printed {got}, golden {printed}")
    for case in golden.load_cases("landmark"):
        checked += 1
        raises = case["expected"].get("raises")
        try:
            res = evaluate_landmark(**case["input"], **case.get("call", {}))
        except Exception as exc:
            if type(exc).__name__ != raises:
                problems.append(f"{case['id']}: {type(exc).__name__}: {exc}")
            continue
        if raises:
            problems.append(f"{case['id']}: expected {raises}, nothing was raised")
            continue
        want_map = golden.parse_value(case["expected"]["map"])
        got_map = res.map_exact if res.map_exact is not None else res.map
        same_map = (want_map != want_map and got_map != got_map) or got_map == want_map
        want_ap = [golden.parse_value(v) for v in case["expected"].get("ap", [])]
        if not same_map or (want_ap and list(res.ap_exact) != want_ap):
            problems.append(f"{case['id']}: mAP {got_map}, golden {case['expected']['map']}")
    print(
        f"\nLandmark golden values (reference): {checked} cases (compute_ap edge cases, "
        f"{sum(len(v) for v in data['runs'].values())} real Oxford5k lists, ROxford and GLDv2): "
        f"{'ok' if not problems else f'{len(problems)} MISMATCH(ES)'}"
    )
    for line in problems[:20]:
        print(f"  {line}")
    return len(problems)
