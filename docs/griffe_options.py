"""Griffe extension for the API reference: docstrings completed at import, rendered as Python sees them.

``evaluate``, ``rc.Accumulator``, ``check`` and ``Session`` list their options through an
``{options}`` slot that ``options_table.documented`` fills from the options table when the module
is imported. mkdocstrings reads the source, which holds the empty slot: for these objects the page
shows the docstring of the imported object (``mkdocs.yml`` loads this file as a griffe extension).
"""

from __future__ import annotations

import inspect
import re

import griffe

#: the slot, on a line of its own (a docstring that speaks of the slot is not one to fill)
SLOT = re.compile(r"^\s*\{options\}\s*$", re.MULTILINE)


class ImportedDocstrings(griffe.Extension):
    """Replace a docstring with an ``{options}`` slot by the imported one."""

    def on_object(self, *, obj, **kwargs) -> None:
        static = obj.docstring.value if obj.docstring is not None else ""
        if not SLOT.search(static):
            return
        imported = inspect.getdoc(griffe.dynamic_import(obj.path)) or ""
        if not imported or SLOT.search(imported):
            raise ValueError(f"{obj.path}: its imported docstring is not filled in")
        obj.docstring.value = imported
