"""The fix pages and the block of new code each shows, as the tests that read the built site find them.

A *fix page* is the executed example a registry pattern names as its ``example`` (the page that fixes that old hook
shape), and any other gallery page that marks a block of new code. A page marks the block a reader copies into their
own module or callback with ``.. rst-class:: fix-code`` as the last line of the text just before that code: Sphinx
then writes the block as ``<div class="fix-code highlight-Python ...">``, the site's stylesheet marks it, and the
downloaded notebook leaves the marker out (``docs/_ext/build_mechanics/notebook_links.lua``).
"""

from __future__ import annotations

import html
import re

from builds import GALLERY_SCRIPTS, ROOT

from lightning_migrate import registry

#: The marker a gallery text block ends with, right before the code a reader copies.
MARKER = ".. rst-class:: fix-code"
#: The first ``<pre>`` of a block that carries the ``fix-code`` class, in a page's HTML.
FIX_BLOCK = re.compile(r'<div class="[^"]*\bfix-code\b[^"]*">\s*<div class="highlight">\s*<pre>(.*?)</pre>', re.S)


def fix_pages() -> list[str]:
    """The docnames of the fix pages: every pattern's ``example``, then the gallery pages that mark a fix block."""
    marked = [
        f"examples/{script.with_suffix('').as_posix()}"
        for script in GALLERY_SCRIPTS
        if MARKER in (ROOT / "gallery" / script).read_text(encoding="utf-8")
    ]
    return sorted({pattern.example for pattern in registry.PATTERNS} | set(marked))


def copied_blocks(page_html: str) -> list[str]:
    """The text of each block marked ``fix-code`` on a built page, as a reader's copy takes it (tags and the
    highlighting's spans dropped, entities decoded)."""
    return [html.unescape(re.sub(r"<[^>]+>", "", block)) for block in FIX_BLOCK.findall(page_html)]
