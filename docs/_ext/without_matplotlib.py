"""``import matplotlib`` made to fail for a while, around code that imports it for a feature this site leaves off.

Two packages import matplotlib at every Sphinx start, whether or not anything will be drawn: sphinx-gallery
while filling its defaults (``conf.py`` holds the import around that handler) and sphinxext-opengraph for its
social cards (``link_previews``). Both handle the ``ImportError`` themselves. With ``sys.modules["matplotlib"]``
set to ``None``, Python raises that error at once (the documented behaviour of a ``None`` entry, `The import
system <https://docs.python.org/3/reference/import.html#the-module-cache>`_); releasing removes the entry, so a
later ``import matplotlib`` -- an example's -- imports it as usual. Nothing is held when matplotlib is already
imported.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


def hold() -> bool:
    """Make ``import matplotlib`` raise ImportError until :func:`release`; ``False`` if it was imported already."""
    if "matplotlib" in sys.modules:
        return False
    sys.modules["matplotlib"] = None  # type: ignore[assignment]
    return True


def release() -> None:
    """Undo :func:`hold` (only a held entry is removed, never an imported matplotlib)."""
    if "matplotlib" in sys.modules and sys.modules["matplotlib"] is None:
        del sys.modules["matplotlib"]


@contextlib.contextmanager
def unavailable() -> Iterator[None]:
    """``import matplotlib`` raises ImportError inside the block, unless matplotlib was imported already."""
    held = hold()
    try:
        yield
    finally:
        if held:
            release()
