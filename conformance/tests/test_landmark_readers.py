"""Readers: raw lines as compute_ap reads them, the VGG gt layout, and ground-truth pickles
through the restricted unpickler (a pickle can run code: nothing but data may come out)."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
from fractions import Fraction
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
from retrieval_conformance.reference.protocols.landmark import evaluate_landmark
from retrieval_conformance.reference.readers import (
    RestrictedUnpickler,
    load_restricted_pickle,
    read_gt_folder,
    read_gt_query,
    read_lines,
    read_ranked_list,
    read_revisitop_gnd,
    split_lines,
)

DATA = Path(str(files("retrieval_conformance.golden") / "data" / "oxford5k"))


# --------------------------------------------------------------------------- lines
@pytest.mark.parametrize(
    "data, names",
    [
        (b"", []),
        (b"\n", [""]),
        (b"\n\n", ["", ""]),
        (b"a", ["a"]),
        (b"a\n", ["a"]),
        (b"a\nb", ["a", "b"]),
        (b"a\r\nb\r\n", ["a\r", "b\r"]),
        (b"a \n a\n", ["a ", " a"]),
        (b"a\n\nb\n", ["a", "", "b"]),
        (b"a\rb\n", ["a\rb"]),  # a lone \r is not a line break for getline
        ("é\n".encode(), ["é"]),
    ],
)
def test_split_lines_like_getline(data, names):
    assert split_lines(data) == names


def test_non_utf8_names_keep_bytes_equality(tmp_path):
    (tmp_path / "r.txt").write_bytes(b"\xff\xfe\nok\n")
    names = read_lines(tmp_path / "r.txt")
    assert names[0].encode("utf-8", "surrogateescape") == b"\xff\xfe"
    assert names[0] != "\ufffd\ufffd" and len(set(names)) == 2


def test_split_lines_rejects_text():
    with pytest.raises(TypeError, match="bytes"):
        split_lines("a\nb")


def test_read_lines_files_and_directories(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_lines(tmp_path / "absent.txt")
    assert read_lines(tmp_path) == []  # std::ifstream reads a directory as empty


def test_crlf_names_agree_with_compute_ap_semantics(tmp_path):
    """A gt file written on Windows matches nothing in a Unix ranked list."""
    from retrieval_conformance.reference.protocols.landmark import oxford_ap

    for kind, data in (("good", b"a\r\nb\r\n"), ("ok", b""), ("junk", b"")):
        (tmp_path / f"q_{kind}.txt").write_bytes(data)
    (tmp_path / "r.txt").write_bytes(b"a\nb\n")
    g = read_gt_query(tmp_path / "q")
    assert g.good == ["a\r", "b\r"]
    assert oxford_ap(read_ranked_list(tmp_path / "r.txt"), g.good, g.ok, g.junk) == 0.0


# --------------------------------------------------------------------------- VGG layout
def test_read_gt_folder_on_real_data():
    gt = read_gt_folder(DATA / "gt")
    assert len(gt) == 55
    q = gt["all_souls_1"]
    assert q.image == "oxc1_all_souls_000013"
    assert q.bbox == (136.5, 34.1, 648.5, 955.7)
    assert (len(q.good), len(q.ok), len(q.junk)) == (78, 0, 33)
    assert all(not g.ok for g in gt.values())  # good and ok are merged in this copy
    assert q.as_dict()["junk"] == q.junk


def test_read_gt_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="folder"):
        read_gt_folder(tmp_path / "nope")
    with pytest.raises(ValueError, match="no <query>"):
        read_gt_folder(tmp_path)
    (tmp_path / "q_good.txt").write_bytes(b"a\n")
    (tmp_path / "q_junk.txt").write_bytes(b"")
    with pytest.raises(ValueError, match="q_ok.txt"):
        read_gt_folder(tmp_path)
    (tmp_path / "q_ok.txt").write_bytes(b"")
    (tmp_path / "q_query.txt").write_bytes(b"img 1 2 3\n")
    with pytest.raises(ValueError, match="x1 y1 x2 y2"):
        read_gt_folder(tmp_path)
    (tmp_path / "q_query.txt").write_bytes(b"img 1 2 3 4\r\n")
    assert read_gt_folder(tmp_path)["q"].bbox == (1.0, 2.0, 3.0, 4.0)


def test_read_gt_query_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="_good.txt"):
        read_gt_query(tmp_path / "q")
    for kind in ("good", "ok", "junk"):
        (tmp_path / f"q_{kind}.txt").write_bytes(b"")
    assert read_gt_query(tmp_path / "q").image is None
    with pytest.raises(FileNotFoundError, match="_query.txt"):
        read_gt_query(tmp_path / "q", require_query_file=True)


# --------------------------------------------------------------------------- pickles
class _Evil:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class _EvilPopen:
    def __reduce__(self):
        return (subprocess.Popen, (["true"],))


class _EvilEval:
    def __reduce__(self):
        return (eval, ("1+1",))


class _EvilGetattr:
    def __reduce__(self):
        return (getattr, ("text", "upper"))


def test_restricted_unpickler_refuses_os_system(tmp_path):
    marker = tmp_path / "pwned"
    data = pickle.dumps({"gnd": [_Evil(f"touch {marker}")]})
    with pytest.raises(pickle.UnpicklingError, match=r"refused global (posix|nt|os)\.system"):
        RestrictedUnpickler(io.BytesIO(data)).load()
    assert not marker.exists()
    (tmp_path / "evil.pkl").write_bytes(data)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        read_revisitop_gnd(tmp_path / "evil.pkl")
    assert not marker.exists()


@pytest.mark.parametrize(
    "obj, name",
    [
        (_EvilPopen(), "subprocess.Popen"),
        (_EvilEval(), "builtins.eval"),
        (_EvilGetattr(), "builtins.getattr"),
        (Fraction(1, 3), "fractions.Fraction"),
        (np.random.default_rng(0), "numpy.random"),
    ],
)
def test_restricted_unpickler_refuses_other_globals(obj, name):
    for protocol in (2, 4, 5):
        with pytest.raises(pickle.UnpicklingError, match=name.replace(".", r"\.")):
            load_restricted_pickle(pickle.dumps(obj, protocol=protocol))


def test_restricted_unpickler_refuses_non_text_codecs():
    # protocol 0 bytes via _codecs.encode with a non-text codec
    data = b"c_codecs\nencode\n(Vabc\nVrot13\ntR."
    with pytest.raises(pickle.UnpicklingError, match="codec"):
        load_restricted_pickle(data)


def _gt_like():
    return {
        "imlist": [f"img{i}" for i in range(10)],
        "qimlist": ["qa", "qb"],
        "gnd": [
            {
                "bbx": [1.5, 2.0, 30.0, 40.25],
                "easy": np.array([2, 5]),
                "hard": np.array([7]),
                "junk": np.array([3], dtype=np.int32),
            },
            {
                "bbx": np.array([0.0, 0.0, 1.0, 1.0]),
                "easy": [np.int64(1), 4],
                "hard": np.array([], dtype=np.int64),
                "junk": [1],
            },
        ],
    }


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_restricted_unpickler_accepts_gt_with_numpy_arrays(protocol):
    extra = {
        "set": {1, 2},
        "frozen": frozenset([3]),
        "c": 1 + 2j,
        "b": b"\x00\xff",
        "ba": bytearray(b"x"),
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "scalar": np.float64(0.5),
        "tuple": (1, "a", None, True),
    }
    obj = dict(_gt_like(), extra=extra)
    got = load_restricted_pickle(pickle.dumps(obj, protocol=protocol))
    assert got["imlist"] == obj["imlist"]
    np.testing.assert_array_equal(got["gnd"][0]["easy"], [2, 5])
    assert got["gnd"][0]["junk"].dtype == np.int32
    for key, value in extra.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got["extra"][key], value)
            assert got["extra"][key].dtype == value.dtype
        else:
            assert got["extra"][key] == value


def test_read_revisitop_gnd_and_evaluate(tmp_path):
    path = tmp_path / "gnd_roxford5k.pkl"
    path.write_bytes(pickle.dumps(_gt_like(), protocol=4))
    cfg = read_revisitop_gnd(path)
    assert cfg["kind"] == "revisitop"
    assert cfg["gnd"][0]["easy"] == [2, 5] and cfg["gnd"][1]["easy"] == [1, 4]
    assert isinstance(cfg["gnd"][1]["easy"][0], int)
    # revisitop's ranks: (n_db, n_queries)
    ranks = np.array([[2, 3, 7, 0, 5, 1, 4, 6, 8, 9], [1, 4, 0, 2, 3, 5, 6, 7, 8, 9]]).T
    res = evaluate_landmark(ranks.T, cfg["gnd"], protocol="roxford-easy")
    assert res.ap_exact == [Fraction(19, 24), Fraction(5, 4)]  # golden roxford-easy-positive-junk


def test_read_cirtorch_gnd(tmp_path):
    obj = {
        "imlist": ["a", "b", "c"],
        "qimlist": ["q"],
        "gnd": [{"bbx": [0, 0, 1, 1], "ok": np.array([0, 2]), "junk": np.array([1])}],
    }
    cfg = read_revisitop_gnd(pickle.dumps(obj, protocol=2))
    assert cfg["kind"] == "cirtorch" and cfg["gnd"][0]["ok"] == [0, 2]
    res = evaluate_landmark([[1, 2, 0]], cfg["gnd"], protocol="oxford")
    assert res.printed == ["1"]  # 1 is junk, 2 and 0 are the two positives


@pytest.mark.parametrize(
    "obj, match",
    [
        ([1, 2], "dict"),
        ({"imlist": [], "qimlist": []}, "'gnd'"),
        ({"imlist": [], "qimlist": ["q"], "gnd": []}, "qimlist"),
        ({"imlist": [], "qimlist": ["q"], "gnd": [{"bbx": []}]}, "neither"),
        ({"imlist": [], "qimlist": ["q"], "gnd": [{"easy": [[1]], "hard": []}]}, "easy"),
        ({"imlist": [], "qimlist": ["q", "r"], "gnd": [{"easy": [], "hard": []}, {"ok": []}]}, "mixes"),
        ({"imlist": [], "qimlist": ["q"], "gnd": [{"easy": np.zeros((2, 2)), "hard": []}]}, "1-D"),
    ],
)
def test_read_revisitop_gnd_structure_errors(obj, match):
    with pytest.raises(ValueError, match=match):
        read_revisitop_gnd(pickle.dumps(obj))


def test_no_unrestricted_pickle_loading_in_landmark_modules():
    """The repo hook greps for the unrestricted loaders; keep these modules clean."""
    import retrieval_conformance.golden.compute_ap_build as tool_build
    import retrieval_conformance.golden.compute_ap_tool as tool
    import retrieval_conformance.reference.protocols.landmark as landmark
    import retrieval_conformance.reference.protocols.landmark.cli as cli
    import retrieval_conformance.reference.readers as readers
    import retrieval_conformance.reference.readers.npy as npy_readers
    import retrieval_conformance.reference.readers.pickles.opcodes as pickle_opcodes
    import retrieval_conformance.reference.readers.pickles.proxies as pickle_proxies
    import retrieval_conformance.reference.readers.pickles.restricted as safe_pickle
    import retrieval_conformance.reference.readers.pickles.revisitop_gnd as revisitop_gnd

    banned = ("pickle." + "load(", "pickle." + "loads(")
    for mod in (
        readers,
        safe_pickle,
        pickle_opcodes,
        pickle_proxies,
        revisitop_gnd,
        npy_readers,
        landmark,
        cli,
        tool,
        tool_build,
    ):
        text = Path(mod.__file__).read_text(encoding="utf-8")
        assert not any(b in text for b in banned), mod.__name__
    here = Path(__file__).read_text(encoding="utf-8")
    assert not any(b in here for b in banned)
