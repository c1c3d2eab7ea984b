"""Sphinx extension: skip sphinx-gallery's code-link pass while there is nothing it could link to.

sphinx-gallery 0.22 links the names in each example's code to their API documentation with a post-transform
(``CodeLinksTransform`` in ``sphinx_gallery/_doctree_links.py``): for every code block of every example page it
re-tokenizes the code with Pygments and looks each name up in Sphinx's Python domain and in intersphinx. This
site documents no Python API (no ``py:`` objects) and configures no intersphinx inventory, so every look-up
fails and the pass changes nothing but how Pygments' tokens are split into ``<span>`` elements -- yet it is
the largest post-transform of the build (a third of them, by cProfile), and post-transforms run serially in
the main process even under ``-j``. Without it, Sphinx highlights those blocks as usual, in the parallel
writers.

The pass is removed at ``builder-inited`` only while it cannot link anything: with ``sphinx.ext.intersphinx``
or ``sphinx.ext.autodoc`` loaded, or ``py:`` objects in the environment, sphinx-gallery's own behaviour stays.
Should sphinx-gallery move or rename the class, this extension does nothing.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _links_possible(app: Sphinx) -> bool:
    """Whether a name in an example could resolve: intersphinx or autodoc is loaded, or ``py:`` objects exist."""
    if {"sphinx.ext.intersphinx", "sphinx.ext.autodoc"} & set(app.extensions):
        return True
    return bool(app.env.get_domain("py").objects)


def _drop_code_links(app: Sphinx) -> None:
    try:
        from sphinx_gallery._doctree_links import CodeLinksTransform
    except ImportError:  # sphinx-gallery reorganised: leave its behaviour alone
        return
    if CodeLinksTransform in app.registry.post_transforms and not _links_possible(app):
        app.registry.post_transforms.remove(CodeLinksTransform)
        logger.debug("gallery_code_links: nothing to link to; sphinx-gallery's CodeLinksTransform skipped")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _drop_code_links)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
