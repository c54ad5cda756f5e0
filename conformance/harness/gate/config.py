"""The declared checks: ``[[tool.retrieval-conformance.check]]`` tables, read and validated.

::

    [[tool.retrieval-conformance.check]]
    target = "mylab/eval.py:calc_top_map"    # module:function or path/to/file.py:function
    adapter = "hashing-codes"
    protocol = "hashing"
    ties = "stable"                          # any convention override, spelled as its flag
    known-deviations = ["§6 ap_at_k=k"]      # entries as the file takes them, or a file's path
    timeout = 10

The tables live in the lab's ``pyproject.toml`` or, for a lab without one, in a
``retrieval-conformance.toml`` holding the same tables; the first folder from the current one
upwards that holds either is the lab's root.  An unknown key, a value of the wrong type or outside
its choices is a :class:`ConfigError` naming the file, the table and the key.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.harness.calling.loading import read_known_deviations
from retrieval_conformance.conformance.harness.session import LANDMARK_CONVENTIONS
from retrieval_conformance.reference.contract import options_table
from retrieval_conformance.reference.contract.presets import PRESETS

if sys.version_info >= (3, 11):
    import tomllib
else:  # the backport, a dependency on these Pythons only
    import tomli as tomllib

#: the files that may declare checks, in the order they are looked for in a folder
CONFIG_NAMES = ("retrieval-conformance.toml", "pyproject.toml")
#: where the tables sit in either file
TABLE_PATH = ("tool", "retrieval-conformance", "check")
TABLE_NAME = "[[tool.retrieval-conformance.check]]"


class ConfigError(UsageError):
    """A declared check that cannot run as written (exit status 2)."""


@dataclass
class DeclaredCheck:
    """One table: a function and how to check it (paths relative to the lab's root)."""

    index: int  # 1-based, in the file's order
    target: str
    adapter: str = "hashing-codes"
    protocol: Optional[str] = None
    overrides: Dict[str, str] = field(default_factory=dict)
    known: List[str] = field(default_factory=list)
    known_file: Optional[str] = None  # known-deviations given as a file's path
    timeout: float = 10.0
    warmup_timeout: Optional[float] = None
    max_examples: int = 60
    arrays: str = "auto"
    only: List[str] = field(default_factory=list)
    files: List[str] = field(default_factory=list)
    name: str = ""

    @property
    def label(self) -> str:
        """How reports name it: its ``name``, else its target."""
        return self.name or self.target


@dataclass
class GateConfig:
    path: str  # the file the tables were read from
    checks: List[DeclaredCheck]

    @property
    def root(self) -> str:
        return os.path.dirname(os.path.abspath(self.path))


def _convention_keys() -> Dict[str, str]:
    """Table key -> option name, for the convention overrides (``ap-rule`` -> ``ap_rule``)."""
    return {options_table.BY_NAME[n].flag[2:]: n for n in options_table.CONVENTION_OPTIONS}


def _protocols() -> Tuple[str, ...]:
    return tuple(PRESETS) + tuple(p for p in LANDMARK_CONVENTIONS if p not in PRESETS)


def _adapters() -> Tuple[str, ...]:
    return tuple(sorted(ADAPTERS))


#: key -> (what it holds, in words); the convention keys are added from the options table
PLAIN_KEYS = {
    "name": "a name for the reports (default: the target)",
    "target": "module:function or path/to/file.py:function (required)",
    "adapter": "the function's signature",
    "protocol": "the preset to check against",
    "known-deviations": "a list of accepted deviations (check ids, globs or causes), or a file's path",
    "timeout": "seconds allowed per call",
    "warmup-timeout": "seconds allowed for the first call",
    "max-examples": "generated inputs per property check",
    "arrays": "auto, numpy or torch",
    "only": "a list of check-id globs to run",
    "files": "a list of path globs whose change runs this check (pre-commit; the target's file always does)",
}


def find_config(start: Optional[str] = None) -> Optional[str]:
    """The lab's file that declares checks: the nearest folder upwards holding one (None if none)."""
    folder = os.path.abspath(start or os.getcwd())
    while True:
        for name in CONFIG_NAMES:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and _declares(path):
                return path
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _declares(path: str) -> bool:
    """Whether ``path`` holds the tables (a pyproject.toml of another tool does not count)."""
    if os.path.basename(path) == CONFIG_NAMES[0]:
        return True
    try:
        data = _load(path)
    except ConfigError:
        return True  # a broken file is reported by read_config, not skipped
    return isinstance(data.get("tool"), dict) and "retrieval-conformance" in data["tool"]


def _load(path: str) -> Dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file") from None


def read_config(path: Optional[str] = None) -> GateConfig:
    """The declared checks of ``path`` (default: :func:`find_config`); :class:`ConfigError` if unusable."""
    if path is None:
        path = find_config()
        if path is None:
            raise ConfigError(
                f"no target given and no {TABLE_NAME} table found in a pyproject.toml or "
                f"retrieval-conformance.toml of this folder or above; declare your functions there "
                "(see docs/ci-gate.md) or name one: retrieval-conformance check module:function"
            )
    tool = _load(path).get("tool", {})
    section = tool.get("retrieval-conformance") if isinstance(tool, dict) else None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: no [tool.retrieval-conformance] section; declare {TABLE_NAME} tables")
    unknown = sorted(set(section) - {"check"})
    if unknown:
        raise ConfigError(
            f"{path}: [tool.retrieval-conformance]: unknown key {unknown[0]!r}; only {TABLE_NAME} tables go there"
        )
    tables = section.get("check")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{path}: 'check' must be one or more {TABLE_NAME} tables, got {type(tables).__name__}")
    checks = [_declared(path, n, table) for n, table in enumerate(tables, start=1)]
    labels = [c.label for c in checks]
    for label in labels:
        if labels.count(label) > 1:
            raise ConfigError(f"{path}: two {TABLE_NAME} tables are named {label!r}; give each a distinct 'name' key")
    return GateConfig(path, checks)


def _declared(path: str, index: int, table: Dict[str, Any]) -> DeclaredCheck:
    where = f"{path}: {TABLE_NAME} #{index}" + (f" ({table['target']})" if isinstance(table.get("target"), str) else "")

    def bad(key: str, expected: str) -> ConfigError:
        return ConfigError(f"{where}: key {key!r}: expected {expected}, got {table[key]!r}")

    conventions = _convention_keys()
    allowed = set(PLAIN_KEYS) | set(conventions)
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r}; the keys are {', '.join(sorted(allowed))}")
    if "target" not in table:
        raise ConfigError(f"{where}: key 'target' is missing; name the function as module:function")
    out = DeclaredCheck(index=index, target="")
    for key in ("name", "target", "adapter", "protocol", "arrays"):
        if key in table and (not isinstance(table[key], str) or not table[key].strip()):
            raise bad(key, "a non-empty string")
    out.target = table["target"].strip()
    out.name = table.get("name", "").strip()
    choices = {"adapter": _adapters(), "protocol": _protocols(), "arrays": ("auto", "numpy", "torch")}
    for key, values in choices.items():
        if key in table and table[key] not in values:
            raise bad(key, f"one of {', '.join(values)}")
    out.adapter = table.get("adapter", out.adapter)
    out.protocol = table.get("protocol")
    out.arrays = table.get("arrays", out.arrays)
    for key, option in conventions.items():
        if key in table:
            values = options_table.BY_NAME[option].values() or ()
            if table[key] not in values:
                raise bad(key, f"one of {', '.join(values)}")
            out.overrides[option] = table[key]
    for key, attr in (("timeout", "timeout"), ("warmup-timeout", "warmup_timeout")):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise bad(key, "a number of seconds > 0")
            setattr(out, attr, float(value))
    if "max-examples" in table:
        value = table["max-examples"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad("max-examples", "a whole number >= 1")
        out.max_examples = value
    for key in ("only", "files"):
        if key in table:
            if not isinstance(table[key], list) or not all(isinstance(v, str) and v.strip() for v in table[key]):
                raise bad(key, "a list of non-empty strings")
            setattr(out, key, [v.strip() for v in table[key]])
    known = table.get("known-deviations", [])
    if isinstance(known, str):
        out.known_file = known
        out.known = _read_known_file(where, os.path.join(os.path.dirname(os.path.abspath(path)), known))
    elif isinstance(known, list) and all(isinstance(v, str) for v in known):
        out.known = [v.strip() for v in known if v.strip()]
    else:
        raise bad("known-deviations", "a list of strings (check ids, globs or causes) or a file's path")
    return out


def _read_known_file(where: str, path: str) -> List[str]:
    """The entries of a known-deviations file a table names (a missing file: none yet, for --accept)."""
    if not os.path.exists(path):
        return []
    try:
        return read_known_deviations(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: key 'known-deviations': cannot read {path!r}: {exc}") from None
