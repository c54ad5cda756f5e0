"""``check --accept``: today's deviations of each declared function recorded as known (the baseline).

Each function's accepted entries become the ones still in use plus a cause for each deviation
not accepted yet (what the function does, ``§11 divided-by-k``, rather than the protocol clause it
breaks, so that another way of breaking that clause still fails); a deviation whose cause is
unknown is accepted by its check id.  Stale entries are dropped.

The entries go where the table keeps them: a ``known-deviations`` file it names, or its
``known-deviations`` list, edited in the lab's TOML file in place: only that key's lines change
(or one key is added at the end of the table), everything else is kept byte for byte, and the
edited file is read back and compared with what was meant before it replaces the old one.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Sequence, Tuple

from retrieval_conformance.conformance.harness.gate.config import TABLE_NAME, ConfigError, GateConfig, tomllib
from retrieval_conformance.conformance.harness.gate.outputs import what_it_does
from retrieval_conformance.conformance.harness.report.results import DEVIATE

_HEADER = re.compile(r'^\s*\[\[\s*tool\s*\.\s*(?:"retrieval-conformance"|retrieval-conformance)\s*\.\s*check\s*\]\]')
_ANY_HEADER = re.compile(r"^\s*\[")
_KEY = re.compile(r'^\s*(?:"known-deviations"|known-deviations)\s*=')


def entries_to_accept(outcome: Dict[str, Any], stale: Sequence[str]) -> List[str]:
    """The function's new list of accepted entries: those in use, then one per new deviation."""
    entries = [e for e in outcome["known_entries"] if e not in stale]
    for d in outcome["deviations"]:
        if d["status"] != DEVIATE:
            continue
        if not d["causes"]:
            new = [d["check_id"]]
        else:
            new = what_it_does(d)
        entries += [e for e in new if e not in entries]
    return entries


def record(config: GateConfig, accepted: Dict[int, List[str]]) -> List[str]:
    """Write each table's (by index) accepted entries where it keeps them; the files written."""
    by_index = {c.index: c for c in config.checks}
    written: List[str] = []
    in_table: Dict[int, List[str]] = {}
    for index, entries in accepted.items():
        declared = by_index[index]
        if declared.known_file is None:
            in_table[index] = entries
            continue
        path = os.path.join(config.root, declared.known_file)
        _write_known_file(path, entries)
        written.append(path)
    if in_table:
        _edit_toml(config.path, in_table)
        written.append(config.path)
    return written


def _write_known_file(path: str, entries: Sequence[str]) -> None:
    """Keep the file's comments, drop the entries no longer accepted, add the new ones at the end."""
    lines: List[str] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    kept = [ln for ln in lines if not ln.split("#", 1)[0].strip() or ln.split("#", 1)[0].strip() in entries]
    present = {ln.split("#", 1)[0].strip() for ln in kept}
    kept += [e for e in entries if e not in present]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(kept) + "\n")


def _edit_toml(path: str, accepted: Dict[int, List[str]]) -> None:
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    headers = [n for n, ln in enumerate(lines) if _HEADER.match(ln)]
    # edits from the bottom up, so that the line numbers above stay right
    for index in sorted(accepted, reverse=True):
        if index > len(headers):
            raise ConfigError(
                f"{path}: {TABLE_NAME} #{index} is not written as a table header (an inline table?), so "
                '--accept cannot edit it; name a file instead: known-deviations = "known-deviations.txt"'
            )
        start = headers[index - 1] + 1
        end = next((n for n in range(start, len(lines)) if _ANY_HEADER.match(lines[n])), len(lines))
        lines[start:end] = _with_key(lines[start:end], accepted[index], newline)
    new_text = "".join(lines)
    _verify(path, text, new_text, accepted)
    tmp = path + ".rc-accept.tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(new_text)
    os.replace(tmp, path)


def _with_key(body: List[str], entries: Sequence[str], newline: str) -> List[str]:
    """The table's lines with its ``known-deviations`` key replaced (or added after its last key)."""
    value = "[" + newline + "".join(f"    {json.dumps(e, ensure_ascii=False)},{newline}" for e in entries) + "]"
    new_key = f"known-deviations = {value if entries else '[]'}{newline}"
    for n, line in enumerate(body):
        if _KEY.match(line):
            last = _value_end(body, n)
            return body[:n] + [new_key] + body[last + 1 :]
    # after the table's last line that is not blank or a comment: the end of its last value
    end = max((n for n, ln in enumerate(body) if ln.strip() and not ln.lstrip().startswith("#")), default=-1)
    return body[: end + 1] + [new_key] + body[end + 1 :]


def _value_end(body: List[str], n: int) -> int:
    """The last line of the value whose key starts on line ``n``: brackets counted outside strings."""
    depth, quote, k = 0, "", n
    text = body[n].split("=", 1)[1] if "=" in body[n] else body[n]
    while True:
        i = 0
        while i < len(text):
            ch = text[i]
            if quote:
                if quote == '"' and ch == "\\":
                    i += 1
                elif text.startswith(quote, i):
                    i += len(quote) - 1
                    quote = ""
            elif text.startswith('"""', i) or text.startswith("'''", i):
                quote = text[i : i + 3]
                i += 2
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                break
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
            i += 1
        if (depth <= 0 and not quote) or k + 1 >= len(body):
            return k
        k += 1
        text = body[k]


def _verify(path: str, old: str, new: str, accepted: Dict[int, List[str]]) -> None:
    """The edited file must read as the old one with exactly the accepted lists changed."""
    expected = tomllib.loads(old)
    tables = expected["tool"]["retrieval-conformance"]["check"]
    for index, entries in accepted.items():
        tables[index - 1]["known-deviations"] = list(entries)
    try:
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        got = None
    if got != expected:
        raise ConfigError(
            f"{path}: --accept could not edit the {TABLE_NAME} tables safely (their layout is unusual), so "
            'the file is unchanged; name a file in each table instead: known-deviations = "known-deviations.txt"'
        )


def accept_summary(changes: Sequence[Tuple[str, List[str], List[str]]]) -> str:
    """Lines saying what ``--accept`` changed: (function, entries added, stale entries dropped)."""
    lines = []
    for name, added, dropped in changes:
        for e in added:
            lines.append(f"{name}: accepted {e!r}")
        for e in dropped:
            lines.append(f"{name}: dropped the stale entry {e!r}")
    return "\n".join(lines) + ("\n" if lines else "")
