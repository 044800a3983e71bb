"""Griffe extension (mkdocs.yml, mkdocstrings ``extensions:``): reStructuredText leftovers in
the docstrings, shown as Markdown.

The docstrings are Markdown-friendly prose (``code`` in double backticks renders as code), but
some name objects with Sphinx roles (``:class:`RunError```) or end a paragraph with ``::``
before an indented block. Rendered as Markdown, the role would show as literal ``:class:``
text and the ``::`` as is. This rewrites them for the API reference only: a role becomes the
code span it wraps, ``text::`` becomes ``text:`` and a ``::`` line alone goes (the indented
block after either is already a code block in Markdown). The source docstrings are untouched.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|exc|mod|data|obj|const):`~?\.?([^`]+)`")
_LITERAL = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)
_LITERAL_ALONE = re.compile(r"^[ \t]*::[ \t]*\n", re.MULTILINE)


def markdown(docstring: str) -> str:
    """The docstring with Sphinx roles and ``::`` markers written as Markdown."""
    return _LITERAL_ALONE.sub("", _LITERAL.sub(":", _ROLE.sub(r"`\1`", docstring)))


class RstLeftovers(Extension):
    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
