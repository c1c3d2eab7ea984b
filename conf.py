"""Sphinx configuration of the executable migration guide.

Source pages live in ``docs/``, executed examples in ``gallery/``; build with
``sphinx-build -c . docs _build/html`` (``nox -s docs`` does exactly that).
Configuration only: nothing heavy (torch, Lightning) is imported here, so every
Sphinx start stays fast; the examples import what they need when they run.
"""

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
sys.path.insert(0, str(ROOT / "src"))  # the registry of old patterns, shared with the probes and the checker

import without_matplotlib  # noqa: E402 - docs/_ext is on sys.path from here
from build_mode import forced_execution  # noqa: E402

#: CI (and anyone who sets CI=true) re-executes every example, never reusing a cached result.
FORCE_EXECUTION = forced_execution()
# The examples train toy models: one intra-op thread per process is faster than two threads contending
# for two cores with Sphinx, the probes and the notebook kernel (measured: benchmarks/build_speed.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")

project = "Lightning epoch-end migration guide"
author = "The migration guide authors"
copyright = "2026, the migration guide authors"

extensions = [
    "gc_settings",  # first: fewer garbage collections while the others import, none over the heap at exit
    "sphinx.ext.doctest",
    "sphinx_gallery.gen_gallery",
    "example_workers",  # right after sphinx-gallery: starts the preloaded forkserver while Sphinx starts up
    "gallery_code_links",  # skips sphinx-gallery's code-link pass: this site has no API docs to link to
    "gallery_orphans",  # removes the generated pages of deleted or renamed gallery scripts
    "myst_nb",
    "sphinx_design",
    "sphinx_copybutton",
    "probe_records",
    "symptom_index",
    "reference_table",
    "gallery_version",
    "notfound.extension",
    "link_previews",  # sphinxext-opengraph, loaded without matplotlib (social cards are off)
    "compat_table",
    "checker_rules",
    "scenario_matrix",  # every recipe in every scenario, at every build (data/scenarios.toml)
    "nb_prefetch",
]

root_doc = "index"
templates_path = ["docs/_templates"]
html_static_path = ["docs/_static"]
# sphinx-gallery writes a notebook next to each generated page; they are downloads, not source pages.
exclude_patterns = ["_build", "**.ipynb", "jupyter_execute", "examples/*.py"]

# -- Gallery: every script in gallery/ runs at every build ---------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": ["../gallery"],
    "gallery_dirs": ["examples"],
    # Run every script, not only files named plot_*.
    "filename_pattern": r"\.py$",
    "ignore_pattern": r"(__init__|conftest)\.py$",
    # An example that raises fails the build (after all examples ran, so every failure is reported).
    "only_warn_on_example_error": False,
    "abort_on_example_error": False,
    # sphinx-gallery re-runs only examples whose own file changed; CI re-runs all of them (see setup below).
    "run_stale_examples": False,
    "download_all_examples": False,
    # No sg_execution_times pages: they are timings of one build, not guide content (and 8 more pages to write).
    "write_computation_times": False,
    "remove_config_comments": True,
    # Sections in reading order: the core pattern, each stage, then the pitfalls, caching, DDP and cost.
    "subsection_order": [
        f"../gallery/{section}" for section in ("core", "stages", "pitfalls", "caching", "distributed", "performance")
    ],
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "capture_repr": (),
    "show_signature": False,
}

# -- MyST notebooks (myst-nb): executed at every read, and an error is an error ------------------
# nb_prefetch (docs/_ext) executes every notebook the build will read -- all of them in CI -- beside the
# examples, into the jupyter-cache that "cache" mode reads: same executions as "force", on the second core.
nb_execution_mode = "cache"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 600
nb_merge_streams = True
myst_enable_extensions = ["colon_fence"]

# -- HTML -----------------------------------------------------------------------------------------
html_theme = "furo"
html_title = "Lightning epoch-end migration guide"
pygments_style = "friendly"
pygments_dark_style = "monokai"
html_css_files = ["site.css"]
html_favicon = "docs/_static/favicon.svg"

# Copy buttons copy the code, not the prompts or the output.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_exclude = ".linenos, .gp, .go"

# -- Publishing: where the site lives, its 404 page and its link previews ---------------------------
#: The published address. The Pages workflow sets SITE_URL; Read the Docs sets READTHEDOCS_CANONICAL_URL.
#: A local build assumes a sub-path, as on GitHub Pages, so the browser tests serve it the same way.
SITE_URL = os.environ.get("SITE_URL") or os.environ.get("READTHEDOCS_CANONICAL_URL") or "http://127.0.0.1/migrate/"
SITE_URL = SITE_URL.rstrip("/") + "/"
html_baseurl = SITE_URL
# The 404 page is served for any missing path, so its links must be absolute: prefix them with the site's path.
notfound_urls_prefix = urlsplit(SITE_URL).path
notfound_context = {
    "title": "Page not found",
    "body": (
        "<h1>Page not found</h1><p>There is no page at this address. "
        '<a href="' + urlsplit(SITE_URL).path + '">Go to the start page</a>, '
        'or look the hook up in <a href="' + urlsplit(SITE_URL).path + 'reference/hooks.html">'
        "the table of removed and changed hooks</a>.</p>"
    ),
}
# Open Graph tags (title, description, canonical URL) for link previews; no generated images, nothing fetched.
ogp_site_url = SITE_URL
ogp_social_cards = {"enable": False}
ogp_description_length = 200


# Examples of a section run side by side in processes forked from one that imported Lightning once
# (docs/_ext/example_workers.py turns sphinx-gallery's `parallel` on when examples run): two on this project's
# 2-core machine, up to four where there are more cores.
example_processes = max(2, min(4, len(os.sched_getaffinity(0))))


def _force_gallery_execution(app):
    app.config.sphinx_gallery_conf["run_stale_examples"] = True


def _hold_matplotlib(app, config):
    without_matplotlib.hold()  # `import matplotlib` raises ImportError, which sphinx-gallery ignores


def _release_matplotlib(app, config):
    without_matplotlib.release()


def setup(app):
    """CI re-runs every example. The switch is made at builder-inited, after the HTML builder hashed the
    configuration: a CI build and a local build then share one configuration hash, so a local rebuild after
    a CI build in the same build directory does not rewrite every page.

    sphinx-gallery imports matplotlib.pyplot while filling its defaults (config-inited, priority 10) at every
    Sphinx start, whether or not an example will run; its ``reset_modules`` imports it again, on Agg, before
    each example it runs. Holding the import back around that handler saves a no-op rebuild that import."""
    if FORCE_EXECUTION:  # before sphinx-gallery's own builder-inited handler (priority 500) runs the examples
        app.connect("builder-inited", _force_gallery_execution, priority=100)
    app.connect("config-inited", _hold_matplotlib, priority=9)
    app.connect("config-inited", _release_matplotlib, priority=11)
