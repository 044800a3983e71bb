"""mkdocs hook (mkdocs.yml ``hooks:``): links the docs make that mkdocs alone cannot resolve.

The pages are written to read on GitHub as well as on the site, so they link to repository
files outside ``docs/`` by relative path (``[approval.py](../../examples/approval.py)``) and
to folders (``[guide/](guide/)``). mkdocs knows only the files under ``docs/``: it reports
the first kind as not found, which ``--strict`` makes fatal, and leaves the second as a link
to a folder the site has no page for. This hook:

- gives every repository file outside ``docs/`` that a page links to, and that exists, a
  generated page showing its source (``examples/approval.py`` -> ``source/examples/approval.py``)
  and points the link there;
- points a link to a folder under ``docs/`` at that folder's ``index.md``, generating one that
  lists the folder's pages when the folder has none.

Links to anything that does not exist are left exactly as written, so mkdocs still reports
them and ``mkdocs build --strict`` still fails on a broken link.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

# Generated pages for repository files live under this folder of the site.
SOURCE_DIR = "source"

# ``](url`` of an inline link or image, and ``[label]: url`` of a link reference definition.
_INLINE = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
_REFERENCE = re.compile(r"^( {0,3}\[[^\]]+\]:\s*<?)(\S+?)(?=>?(\s|$))", re.MULTILINE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_TITLE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_LANGUAGES = {".py": "python", ".md": "markdown", ".toml": "toml", ".json": "json", ".sh": "sh"}


def _outside_code(markdown: str, rewrite: Callable[[str], str]) -> str:
    """Apply ``rewrite`` to the markdown outside fenced code blocks (links there are text)."""
    parts: list[str] = []
    chunk: list[str] = []
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            parts.append(rewrite("".join(chunk)) if not fenced else "".join(chunk))
            chunk = []
            fenced = not fenced
            parts.append(line)
            continue
        chunk.append(line)
    parts.append(rewrite("".join(chunk)) if not fenced else "".join(chunk))
    return "".join(parts)


def _urls(markdown: str) -> list[str]:
    found: list[str] = []

    def collect(text: str) -> str:
        found.extend(m.group(2) for m in _INLINE.finditer(text))
        found.extend(m.group(2) for m in _REFERENCE.finditer(text))
        return text

    _outside_code(markdown, collect)
    return found


class _Resolver:
    """Where a link on a page leads, in terms of the repository and the docs folder."""

    def __init__(self, config: MkDocsConfig) -> None:
        # Lexical paths (no symlink resolution): the repository is where mkdocs.yml is.
        self.docs = Path(os.path.abspath(config.docs_dir))
        self.root = Path(os.path.abspath(config.config_file_path)).parent

    def target(self, src_uri: str, url: str) -> str | None:
        """The docs-relative page a link should point to instead, or None to leave it."""
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^[/#]", url):
            return None  # external, absolute or same-page: not ours
        path = url.split("#", 1)[0].split("?", 1)[0]
        if not path:
            return None
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), path))
        if resolved.startswith("../"):
            outside = Path(os.path.normpath(self.docs / resolved))
            if outside.is_file() and outside.is_relative_to(self.root):
                return f"{SOURCE_DIR}/{outside.relative_to(self.root).as_posix()}.md"
            return None
        if (self.docs / resolved).is_dir():
            readme = posixpath.join(resolved, "README.md")  # mkdocs' other name for an index
            if (self.docs / readme).is_file():
                return readme
            return posixpath.join(resolved, "index.md")
        return None


def _relative(target: str, src_uri: str, url: str) -> str:
    anchor = url[len(url.split("#", 1)[0]) :]
    return posixpath.relpath(target, posixpath.dirname(src_uri) or ".") + anchor


def on_files(files: Files, config: MkDocsConfig) -> Files:
    resolver = _Resolver(config)
    targets: set[str] = set()
    for file in files.documentation_pages():
        for url in _urls(file.content_string):
            target = resolver.target(file.src_uri, url)
            if target is not None:
                targets.add(target)
    for target in sorted(targets):
        if files.get_file_from_path(target) is not None:
            continue
        if target.startswith(f"{SOURCE_DIR}/"):
            try:
                content = _source_page(resolver.root, target[len(SOURCE_DIR) + 1 : -len(".md")])
            except UnicodeDecodeError:
                continue  # not text (an image, say): left as written, for mkdocs to report
        else:
            content = _folder_index(files, posixpath.dirname(target))
        # Reached through links only: no "not included in the nav" warning for them.
        not_in_nav = InclusionLevel.NOT_IN_NAV
        files.append(File.generated(config, target, content=content, inclusion=not_in_nav))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    resolver = _Resolver(config)
    src_uri = page.file.src_uri
    if src_uri.startswith(f"{SOURCE_DIR}/") and page.file.generated_by is not None:
        return markdown  # one of ours: source code, its links are text

    def point(match: re.Match[str]) -> str:
        url = match.group(2)
        target = resolver.target(src_uri, url)
        if target is None or files.get_file_from_path(target) is None:
            return match.group(0)
        return match.group(1) + _relative(target, src_uri, url)

    return _outside_code(markdown, lambda text: _REFERENCE.sub(point, _INLINE.sub(point, text)))


def _source_page(root: Path, name: str) -> str:
    path = root / name
    text = path.read_text(encoding="utf-8")
    fence = "````" if "```" in text else "```"
    language = _LANGUAGES.get(path.suffix, "text")
    return f"# {path.name}\n\n`{name}` in the repository.\n\n{fence}{language}\n{text}\n{fence}\n"


def _folder_index(files: Files, folder: str) -> str:
    pages: list[tuple[str, str]] = []
    for file in files.documentation_pages():
        if posixpath.dirname(file.src_uri) == folder:
            title = _TITLE.search(file.content_string)
            name = posixpath.basename(file.src_uri)
            pages.append((title.group(1) if title else name, name))
    lines = [f"# {folder}/", ""] + [f"- [{title}]({name})" for title, name in sorted(pages)]
    return "\n".join(lines) + "\n"
