"""The build-speed extensions of docs/_ext do what their docstrings say, and change nothing a reader sees."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT
from sphinx.errors import ExtensionError

EXT = ROOT / "docs" / "_ext"
sys.path.insert(0, str(EXT))

import link_previews  # noqa: E402
import nb_prefetch  # noqa: E402


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter with docs/_ext on the path; return its standard output."""
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(EXT)!r})\n" + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def test_link_previews_loads_opengraph_without_matplotlib_and_prints_nothing():
    out = run_python(
        """
        from unittest import mock
        import link_previews
        app = mock.Mock()
        link_previews.setup(app)
        import sphinxext.opengraph as og
        app.setup_extension.assert_called_once_with("sphinxext.opengraph")
        print("matplotlib imported:", "matplotlib" in sys.modules, "| social cards:", og.create_social_card)
        """
    )
    assert out == "matplotlib imported: False | social cards: None\n"


def test_link_previews_refuses_social_cards_it_cannot_draw():
    with pytest.raises(ExtensionError, match=r"ogp_social_cards = \{'enable': False\}"):
        link_previews._check_social_cards(None, SimpleNamespace(ogp_social_cards=None))  # opengraph's default: on
    link_previews._check_social_cards(None, SimpleNamespace(ogp_social_cards={"enable": False}))


def test_quick_exit_freezes_the_collector_once_at_exit_after_the_build():
    out = run_python(
        """
        import atexit, gc
        atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))  # runs after quick_exit's
        import quick_exit
        before = atexit._ncallbacks()
        quick_exit._register_freeze_at_exit(None, None)
        quick_exit._register_freeze_at_exit(None, None)  # a second build-finished registers nothing more
        print("handlers added:", atexit._ncallbacks() - before, "| frozen before exit:", gc.get_freeze_count())
        """
    )
    assert out == "handlers added: 1 | frozen before exit: 0\nfrozen at exit: True\n"


def test_notebook_kernels_run_in_a_lowered_session():
    """The kernel's own session is at KERNEL_NICENESS, so niceness counts against the examples (sched(7))."""
    manager = nb_prefetch._low_priority_kernel_manager()(kernel_name="python3")

    async def autogroup_of_a_started_kernel() -> str:
        await manager.start_kernel()
        try:
            return Path(f"/proc/{manager.provisioner.process.pid}/autogroup").read_text()
        finally:
            await manager.shutdown_kernel(now=True)

    autogroup = asyncio.run(autogroup_of_a_started_kernel())
    assert re.fullmatch(rf"/autogroup-\d+ nice {nb_prefetch.KERNEL_NICENESS}\n", autogroup), autogroup


def test_example_code_is_highlighted_without_sphinx_gallery_code_links(site):
    """gallery_code_links drops a pass that links nothing here; Sphinx's own highlighting renders the code."""
    page = site.page("examples/core/callback_side_caching")
    assert '<div class="highlight-Python notranslate"><div class="highlight"><pre><span></span>' in page
    # Pygments keeps a dotted module name in one token; sphinx-gallery's code-link pass splits it at the dots.
    assert '<span class="kn">import</span><span class="w"> </span><span class="nn">lightning.pytorch</span>' in page
