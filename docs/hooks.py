"""MkDocs hooks: the pages whose content has one source of truth elsewhere.

* ``conventions.md``: the tables between the ``generated`` markers come from the conventions table
  (``reference/contract/conventions.py``), the presets (``reference/contract/presets.py``) and the
  landmark protocols; the build fails when the committed page is stale, so the page on GitHub and
  the site never disagree with the code. ``python docs/hooks.py`` rewrites it.
* ``harness.md``: the table of what identification searches, adapter by adapter, between the same
  markers, from ``conformance/harness/candidates/space.py``; stale likewise.
* ``specification.md`` and ``changelog.md`` include ``reference/SPECIFICATION.md`` and
  ``CHANGELOG.md`` at build time (one copy of each text).
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONVENTIONS_PAGE = ROOT / "docs" / "conventions.md"
HARNESS_PAGE = ROOT / "docs" / "harness.md"
BEGIN = "<!-- generated: python docs/hooks.py -->"
END = "<!-- end of generated -->"
INCLUDES = {
    "specification.md": ROOT / "reference" / "SPECIFICATION.md",
    "changelog.md": ROOT / "CHANGELOG.md",
}


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def generated_tables() -> str:
    """The option and preset tables, in Markdown, from the code."""
    from retrieval_conformance.reference.contract.conventions import CONVENTIONS
    from retrieval_conformance.reference.contract.presets import PRESETS
    from retrieval_conformance.reference.protocols.landmark import LANDMARK_PROTOCOLS

    options = _table(
        ["option=value (clause)", "meaning", "used by"],
        [(f"`{c.option}={c.value}` ({c.clause.split()[0]})", c.meaning, c.used_by) for c in CONVENTIONS],
    )
    presets = _table(
        ["preset", "ties", "ap_rule", "ap_at_k", "empty", "junk", "k", "gain", "discount", "recall", "matches"],
        [
            (
                f"`{p.name}`",
                p.ties,
                p.ap_rule,
                p.ap_at_k,
                p.empty,
                ", ".join(p.junk) or "—",
                "—" if p.k is None else p.k,
                p.gain,
                p.discount,
                p.recall,
                p.matches,
            )
            for p in PRESETS.values()
        ],
    )
    landmark = ", ".join(f"`{name}`" for name in LANDMARK_PROTOCOLS)
    return (
        f"{BEGIN}\n\n### Options\n\n{options}\n\n### Presets of `rc.evaluate`\n\n{presets}\n\n"
        f"### Landmark protocols of `rc.evaluate_landmark`\n\n{landmark}\n\n{END}"
    )


def search_table() -> str:
    """What identification searches for each adapter, in Markdown, from the harness's candidate space."""
    from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
    from retrieval_conformance.conformance.harness.candidates.space import space_table

    def any_arguments(*args, **kwargs):  # binds to every adapter, a cut-off included
        return None

    table = space_table({name: cls(any_arguments) for name, cls in ADAPTERS.items()})
    return f"{BEGIN}\n\n{table}\n\n{END}"


#: each generated page and the function that writes its generated part
GENERATED = {CONVENTIONS_PAGE: generated_tables, HARNESS_PAGE: search_table}


def current_page(page: pathlib.Path) -> str:
    """``page`` with its generated part written from the code now."""
    text = page.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise RuntimeError(f"{page}: the markers {BEGIN!r} and {END!r} are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + GENERATED[page]() + tail


def on_pre_build(config, **kwargs):
    from mkdocs.exceptions import PluginError

    for page in GENERATED:
        if current_page(page) != page.read_text(encoding="utf-8"):
            raise PluginError(f"docs/{page.name} is stale against the code: run python docs/hooks.py")


def on_page_markdown(markdown, page, config, files, **kwargs):
    source = INCLUDES.get(page.file.src_uri)
    if source is None:
        return markdown
    included = source.read_text(encoding="utf-8").split("\n", 1)[1]  # its own title is the page's
    return markdown.replace(f"<!-- include: {source.relative_to(ROOT)} -->", included)


if __name__ == "__main__":
    for page in GENERATED:
        page.write_text(current_page(page), encoding="utf-8")
        print(f"wrote {page}", file=sys.stderr)
