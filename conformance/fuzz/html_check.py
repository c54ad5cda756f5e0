"""What in an HTML page could run script: the check of the audit's report, parsed, not searched as text.

The audit's HTML report is static (inline CSS and SVG): :func:`script_hazards` parses a page
with :mod:`html.parser` and lists every element or attribute outside what the report writes
(:data:`ELEMENTS`, :data:`ATTRIBUTES`), every event handler (``on*``), every URL attribute,
and any ``javascript:``, ``url(`` or ``expression(`` in an attribute value; and it asks for
the Content-Security-Policy that forbids scripts.  An empty list is a safe page.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import List, Optional, Tuple

__all__ = ["ELEMENTS", "ATTRIBUTES", "script_hazards"]

#: the elements the report writes
ELEMENTS = frozenset(
    "html head meta title style body h1 h2 p b br code div span table tr th td "
    "svg rect circle polygon line text".split()
)
#: the attributes the report writes (``style`` only for colours)
ATTRIBUTES = frozenset(
    "lang charset http-equiv content class style colspan xmlns width height role aria-label "
    "x y x1 y1 x2 y2 cx cy r fill stroke stroke-width points text-anchor".split()
)
#: what an attribute value must never hold: a script URL, a fetch from CSS, IE's CSS expressions
_DANGEROUS_VALUE = re.compile(r"javascript\s*:|vbscript\s*:|url\s*\(|expression\s*\(|@import", re.IGNORECASE)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hazards: List[str] = []
        self.csp: Optional[str] = None

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag not in ELEMENTS:
            self.hazards.append(f"element <{tag}> at line {self.getpos()[0]}")
        for name, value in attrs:
            if name.startswith("on") or name not in ATTRIBUTES:
                self.hazards.append(f"attribute {name}={value!r} on <{tag}> at line {self.getpos()[0]}")
            if value is not None and _DANGEROUS_VALUE.search(value):
                self.hazards.append(f"attribute value {name}={value!r} on <{tag}> at line {self.getpos()[0]}")
        if tag == "meta" and dict(attrs).get("http-equiv", "").lower() == "content-security-policy":
            self.csp = dict(attrs).get("content") or ""

    def handle_startendtag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self.handle_starttag(tag, attrs)


def script_hazards(page: str) -> List[str]:
    """Everything in ``page`` that could run script or fetch (empty: a safe, static page)."""
    collector = _Collector()
    collector.feed(page)
    collector.close()
    hazards = collector.hazards
    csp = collector.csp
    if csp is None:
        hazards.append("no Content-Security-Policy <meta http-equiv>")
    elif "default-src 'none'" not in csp or "script-src" in csp:
        hazards.append(f"a Content-Security-Policy that may allow scripts: {csp!r}")
    return hazards
