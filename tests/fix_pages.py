"""The fix pages and the block of new code each shows, as the tests that read the built site find them.

A *fix page* is the executed example a registry pattern names as its ``example`` (the page that fixes that old hook
shape), and any other gallery page that marks a block of new code. A page marks the block a reader copies into their
own module or callback with a last line "After (Lightning 2.x):" of the text just before that code, given the class
``fix-label`` (``.. rst-class:: fix-label`` before it): on the page that line is ``<p class="fix-label">`` and the code
block is the element right after it, which the site's stylesheet marks; the downloaded notebook keeps the line and
leaves the class out (``docs/_ext/build_mechanics/notebook_links.lua``). The class is on the line, not on the code
block, because sphinx-gallery writes each example's Python blocks itself, without their classes (its code-links
pass, ``sphinx_gallery._doctree_links``).
"""

from __future__ import annotations

import html
import re

from builds import GALLERY_SCRIPTS, ROOT

from lightning_migrate import registry

#: The marker a gallery text block ends with, right before the code a reader copies.
MARKER = ".. rst-class:: fix-label"
#: The ``<pre>`` of the code block right after the ``fix-label`` line, in a page's HTML.
FIX_BLOCK = re.compile(
    r'<p class="fix-label">.*?</p>\s*<div class="highlight-[^"]*">\s*<div class="highlight">\s*<pre>(.*?)</pre>', re.S
)


def fix_pages() -> list[str]:
    """The docnames of the fix pages: every pattern's ``example``, then the gallery pages that mark a fix block."""
    marked = [
        f"examples/{script.with_suffix('').as_posix()}"
        for script in GALLERY_SCRIPTS
        if MARKER in (ROOT / "gallery" / script).read_text(encoding="utf-8")
    ]
    return sorted({pattern.example for pattern in registry.PATTERNS} | set(marked))


def copied_blocks(page_html: str) -> list[str]:
    """The text of each block marked by a ``fix-label`` line on a built page, as a reader's copy takes it (tags and the
    highlighting's spans dropped, entities decoded)."""
    return [html.unescape(re.sub(r"<[^>]+>", "", block)) for block in FIX_BLOCK.findall(page_html)]
