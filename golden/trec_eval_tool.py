"""Write ``golden/trec_eval.json``: what trec_eval 9.0.8 and 10.0, built from source, print.

The binaries are built elsewhere (``make`` in a checkout of usnistgov/trec_eval at the tags
below; nothing of trec_eval is part of this project) and passed by path::

    python -m retrieval_conformance.golden.trec_eval_tool \\
        --trec-eval 9.0.8=/path/to/v9.0.8/trec_eval --trec-eval 10.0=/path/to/v10.0/trec_eval \\
        [--testdata /path/to/trec_eval/test] OUT.json

Each case runs one command line (recorded exactly, with the input file names as given) on
the generated inputs of :mod:`.trec_inputs` (``golden/data/trec/``: ``generated.*``, and the
rounding-boundary collections ``boundary-*``) or on trec_eval's own
test files (``--testdata``; those files are not ours and are not committed: only the
numbers trec_eval printed for them are kept).  Every printed value is kept as printed (text),
per query (``-q``) and for ``all``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Dict, List, Sequence

from .trec_inputs import BOUNDARY

#: the cut-offs of every cut measure (P, recall, map_cut, ndcg_cut, success)
CUTOFFS = (1, 3, 5, 10, 20, 100)
_CUTS = ",".join(map(str, CUTOFFS))
MEASURES = (
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    f"map_cut.{_CUTS}",
    f"P.{_CUTS}",
    f"recall.{_CUTS}",
    "Rprec",
    "recip_rank",
    "ndcg",
    f"ndcg_cut.{_CUTS}",
    f"success.{_CUTS}",
    "bpref",
)
MEASURE_FLAGS = tuple(flag for m in MEASURES for flag in ("-m", m))

#: version -> the tag and commit built, and what ``trec_eval -v`` prints for it
PROGRAMS = {
    "9.0.8": {
        "tag": "v9.0.8",
        "commit": "d95ca64e14a47d763ae349fb65e6d8cde4141dbd",
        "prints_version": "trec_eval version 9.0.7",
        "score_dtype": "float32",
    },
    "10.0": {
        "tag": "v10.0",
        "commit": "f4253652c8efd0d86ddffd0d163cc0a0f813111a",
        "prints_version": "trec_eval version 10.0-rc3",
        "score_dtype": "float64",
    },
}

#: trec_eval families given parameters (the sets- cases), each in both versions
PARAMETERS = (
    "set",
    "11pt_avg.0.2,0.8",
    "iprec_at_recall.0.15,0.55",
    "Rprec_mult.0.5,1.5",
    "set_F.0.5",
    "utility.2,-1,0.5,0",
    "relstring.5",
    "relative_P.3,7",
    "success.2,4",
    "G.1=3,2=9",
    "ndcg_rel.0=1,1=3",
    "Rndcg.2=2.5",
)

#: the clauses of the specification the printed values pin
CLAUSES = ("§13 trec_eval", "§7 map_cut", "§7 bpref", "§7 success", "§7 nDCG", "§7 discount=log2", "§7 MRR")
GENERATED = ("generated.qrels", "generated.run")
GAINS = "ndcg.0=1,1=3,2=9,3=4.5"
TEST_FILES = ("qrels.test", "results.test")
#: (case id, version, input files, trec_eval options); trec_eval 10.0 stops without -c when a
#: qrels query has no results, as the generated qrels have, so its generated cases use -c
CASES = (
    [
        (f"generated-{version}{tag}", version, GENERATED, flags)
        for version, base in (("9.0.8", []), ("10.0", ["-c"]))
        for tag, flags in (
            ("", base),
            ("-c", ["-c"]),
            ("-l2", base + ["-l", "2"]),
            ("-J", base + ["-J"]),
            ("-M7", base + ["-M", "7"]),
        )
        if not (version == "10.0" and tag == "-c")
    ]
    + [
        # a user gain map (grade 0 given a gain, 3 a gain other than 3); gains 1 apart at least, since
        # gain_init.c sorts them with a comparator that truncates the difference to an int
        (f"generated-{version}-gains", version, GENERATED, base + ["-m", GAINS])
        for version, base in (("9.0.8", []), ("10.0", ["-c"]))
    ]
    + [(f"trec_eval-test-{version}", version, TEST_FILES, []) for version in PROGRAMS]
    + [
        # trec_eval's own sets: no -m (its default, "official") and -m all_trec, with -c, -l 2, -M 7, -J
        (
            f"sets-{version}-{name or 'official'}{tag}",
            version,
            GENERATED,
            base + extra + (["-m", "all_trec"] if name else []),
        )
        for version, base in (("9.0.8", []), ("10.0", ["-c"]))
        for name in ("", "all_trec")
        for tag, extra in (("", []), ("-l2", ["-l", "2"]), ("-M7", ["-M", "7"]), ("-J", ["-J"]))
    ]
    + [
        # families given parameters, and the "set" nickname
        (f"sets-{version}-params", version, GENERATED, base + [w for m in PARAMETERS for w in ("-m", m)])
        for version, base in (("9.0.8", []), ("10.0", ["-c"]))
    ]
    + [
        # 9.0.8's -c: a qrels query without results is left out of the sums, counted in the means
        (
            f"sets-9.0.8-{name or 'official'}-c{tag}",
            "9.0.8",
            GENERATED,
            ["-c"] + extra + (["-m", "all_trec"] if name else []),
        )
        for name in ("", "all_trec")
        for tag, extra in (("", []), ("-J", ["-J"]))
    ]
    + [
        # exact means on a .00005 rounding boundary: trec_eval's running sums print the other digit
        (f"boundary-{name}-{version}", version, (f"boundary-{name}.qrels", f"boundary-{name}.run"), [])
        for name in BOUNDARY
        for version in PROGRAMS
    ]
)


def command(flags: Sequence[str], inputs: Sequence[str], case_id: str = "") -> List[str]:
    """The command line; a case that gives ``ndcg`` parameters replaces the plain ``ndcg``; a case of
    trec_eval's sets (``sets-``) gives its own ``-m`` or none."""
    if case_id.startswith("sets-"):
        return ["trec_eval", "-q", *flags, *inputs]
    measures = MEASURE_FLAGS
    if any(flag.startswith("ndcg.") for flag in flags):
        measures = tuple(f for m in MEASURES if m != "ndcg" for f in ("-m", m))
    return ["trec_eval", "-q", *flags, *measures, *inputs]


def parse(text: str) -> Dict[str, Dict[str, str]]:
    """trec_eval -q output -> {qid or "all": {measure: printed value}}."""
    out: Dict[str, Dict[str, str]] = {}
    for line in text.splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        out.setdefault(qid, {})[measure] = value
    return out


def run_case(
    binary: str, flags: Sequence[str], inputs: Sequence[str], where: Path, case_id: str = ""
) -> Dict[str, Dict[str, str]]:
    argv = command(flags, inputs, case_id)
    done = subprocess.run([binary, *argv[1:]], cwd=where, capture_output=True, text=True, check=False)
    if done.returncode != 0 or done.stderr.strip():
        raise RuntimeError(f"{' '.join(argv)} in {where}: exit {done.returncode}: {done.stderr.strip()}")
    return parse(done.stdout)


def build_golden(binaries: Dict[str, str], testdata: Path | None) -> dict:
    for version, binary in binaries.items():
        printed = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False)
        said = (printed.stdout + printed.stderr).strip()
        if said != PROGRAMS[version]["prints_version"]:
            raise RuntimeError(f"{binary}: prints {said!r}, expected {PROGRAMS[version]['prints_version']!r}")
    generated = Path(str(files("retrieval_conformance.golden") / "data" / "trec"))
    cases = []
    for case_id, version, inputs, flags in CASES:
        if version not in binaries or (inputs == TEST_FILES and testdata is None):
            continue
        where = testdata if inputs == TEST_FILES else generated
        program = PROGRAMS[version]
        cases.append(
            {
                "id": case_id,
                "kind": "trec_eval",
                "clauses": list(CLAUSES),
                "program": f"trec_eval {version}",
                "command": " ".join(command(flags, inputs, case_id)),
                "provenance": f"printed by trec_eval {version} (usnistgov/trec_eval tag {program['tag']}, commit "
                f"{program['commit']}, built with 'make'; '-v' prints '{program['prints_version']}'), "
                f"run in the folder of its inputs",
                "inputs": "trec_eval's test/ folder (not committed)" if inputs == TEST_FILES else "golden/data/trec/",
                "values": run_case(binaries[version], flags, inputs, where, case_id),
            }
        )
    return {
        "schema": 1,
        "source": "trec_eval built from source (usnistgov/trec_eval, 'make' at each tag), run on the generated "
        "inputs of golden/trec_inputs.py and on trec_eval's own test files; every value as printed "
        "(per query with -q, and 'all'); a measure given parameters prints them in its name "
        "(ndcg_0=1,1=3,2=9,3=4.5 is ndcg under that gain map)",
        "programs": {v: {k: p[k] for k in ("tag", "commit", "prints_version")} for v, p in PROGRAMS.items()},
        "cases": cases,
    }


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m retrieval_conformance.golden.trec_eval_tool")
    parser.add_argument(
        "--trec-eval",
        action="append",
        required=True,
        metavar="VERSION=PATH",
        help=f"a trec_eval binary built at one of {sorted(PROGRAMS)}",
    )
    parser.add_argument("--testdata", type=Path, help="trec_eval's test/ folder (qrels.test, results.test)")
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    binaries = {}
    for item in args.trec_eval:
        version, _, path = item.partition("=")
        if version not in PROGRAMS or not path:
            parser.error(f"--trec-eval: expected VERSION=PATH with VERSION one of {sorted(PROGRAMS)}, got {item!r}")
        binaries[version] = path
    golden = build_golden(binaries, args.testdata)
    args.out.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
