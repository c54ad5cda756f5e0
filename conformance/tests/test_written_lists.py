"""Lists of names written out in prose stay complete: every adapter of the harness's registry and
every preset is named wherever a document or a docstring lists them.

The docstrings' lists are generated (``check``'s adapters from the registry, ``evaluate``'s
presets from the options table); these tests also fail if a generated slot is left unfilled.
The documents' lists are written by hand (docs/harness.md, the README): these tests name what
is missing.
"""

from __future__ import annotations

import re

import retrieval_conformance as rc
from retrieval_conformance.conformance.harness import check
from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.support.checkout import checkout
from retrieval_conformance.reference.contract.presets import PRESETS


def paragraph(text: str, start: str) -> str:
    """The paragraph of ``text`` that begins with ``start`` (up to the next blank line)."""
    found = re.search(rf"^{re.escape(start)}.*?(?=\n\s*\n|\Z)", text, re.MULTILINE | re.DOTALL)
    assert found is not None, f"no paragraph beginning {start!r}"
    return found.group(0)


def docstring_entry(doc: str, parameter: str) -> str:
    """The numpydoc entry of ``parameter``: its line and the indented lines below it."""
    found = re.search(rf"^(\s*){re.escape(parameter)} :.*?(?=\n\1\S|\Z)", doc, re.MULTILINE | re.DOTALL)
    assert found is not None, f"no entry for {parameter!r}"
    return found.group(0)


def missing(names, text: str, quote: str = "`") -> list:
    """The names not written in ``text`` between ``quote`` marks."""
    return [name for name in names if f"{quote}{name}{quote}" not in text]


def test_the_harness_guide_names_every_adapter():
    text = (checkout() / "docs" / "harness.md").read_text(encoding="utf-8")
    assert missing(ADAPTERS, paragraph(text, "Adapters:")) == []


def test_checks_docstring_names_every_adapter():
    entry = docstring_entry(check.__doc__, "adapter")
    assert "{adapters}" not in entry
    assert missing(ADAPTERS, entry, "``") == []


def test_evaluates_docstring_names_every_preset():
    assert missing(PRESETS, docstring_entry(rc.evaluate.__doc__, "protocol"), '"') == []


def test_the_readme_names_every_preset():
    text = (checkout() / "README.md").read_text(encoding="utf-8")
    assert missing(PRESETS, paragraph(text, "The presets (")) == []


def test_a_missing_name_is_found():
    text = "Adapters: `reid` f(...); `oxford` f(...).\n\nAdapters: `sklearn` (another paragraph)."
    assert missing(("reid", "oxford", "sklearn"), paragraph(text, "Adapters:")) == ["sklearn"]
    doc = "    adapter : str\n        ``reid``, ``oxford``.\n    protocol : str\n        ``sklearn``"
    assert missing(("reid", "sklearn"), docstring_entry(doc, "adapter"), "``") == ["sklearn"]
