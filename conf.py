"""Sphinx configuration of the executable migration guide.

Source pages live in ``docs/``, executed examples in ``gallery/``; build with
``sphinx-build -c . docs _build/html`` (``nox -s docs`` does exactly that).
Configuration only: nothing heavy (torch, Lightning) is imported here, so every
Sphinx start stays fast; the examples import what they need when they run.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MECHANICS = ROOT / "docs" / "_ext" / "build_mechanics"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))  # the packages guide/ and build_mechanics/
sys.path.insert(0, str(ROOT / "src"))  # the registry of old patterns, shared with the probes and the checker

# The examples train toy models: one intra-op thread per process is faster than two threads contending
# for two cores with Sphinx, the probes and the notebook kernel (measured: benchmarks/build_speed.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# A Python warning fails the build unless src/migration_guide/declared_warnings.py declares it, with its reason
# (docs/_ext/build_mechanics/declared_warnings.py applies the list). The processes the build starts inherit the
# filters through PYTHONWARNINGS: sphinx-gallery's workers, the notebook kernel, the probes and the scenario matrix;
# sphinx-gallery's reset_modules entry
# `declared_warnings.strict_warnings` installs them around each example (also in this process, with -j 1). A warning
# is then an exception naming its file and line.
from build_mechanics import declared_warnings  # noqa: E402 - docs/_ext is on sys.path from here

os.environ["PYTHONWARNINGS"] = declared_warnings.pythonwarnings()

project = "Lightning epoch-end migration guide"
author = "The migration guide authors"
copyright = "2026, the migration guide authors"

# docs/_ext/guide/: the guide's extensions, pages that state what Lightning does, produced by running it.
# docs/_ext/build_mechanics/: how the site is built; they state no Lightning fact. (Order as registered.)
extensions = [
    "sphinx.ext.doctest",
    "sphinx_gallery.gen_gallery",
    "build_mechanics.example_workers",  # sphinx-gallery's parallel workers, started only when an example will run
    "build_mechanics.run_records",  # each example records the Trainer configuration of its runs, for the claims
    "build_mechanics.gallery_orphans",  # removes the generated pages of deleted or renamed gallery scripts
    "build_mechanics.download_note",  # no "Go to the end to download" note above an example's title
    "myst_nb",
    "sphinx_design",
    "sphinx_copybutton",
    "guide.probe_records",  # the registry's probes, run on the installed Lightning; pages read their records
    "guide.symptom_index",  # every error and warning Lightning prints for the old hooks, linked to its fix
    "guide.symptom_search",  # the search ranks the fix of a pasted error first, whatever the reader's class is called
    "build_mechanics.search_index_entries",  # a rebuild keeps the index entries of pages it does not rewrite
    "guide.reference_table",  # one row per old hook shape, from the registry and the probe records
    "guide.changelog_roles",  # :deprecated-in: and :removed-in: print a pattern's releases from the registry
    "guide.gallery_version",  # each gallery page names the Lightning release that produced its output
    "notfound.extension",
    "sphinxext.opengraph",
    "build_mechanics.site_address",  # html_baseurl drives the 404 page, link previews and the checker's links
    "build_mechanics.project_links",  # the repository's address and release tag from pyproject.toml
    "build_mechanics.data_schemas",  # a data file's schema on the contributing page, from its one declaration
    "guide.compat_table",  # the recorded releases (data/compat/*.json)
    "build_mechanics.identifier_breaks",  # inline code breaks after _ . ( , only, never inside a word
    "build_mechanics.phone_tables",  # a table marked stack-on-phone reads one block per row on a phone
    "guide.checker_rules",  # one page per checker rule, its example run through the checker
    "guide.scenario_matrix",  # every recipe in every scenario, at every build (data/scenarios.toml)
    "guide.claims",  # :claim:`id` renders a statement about Lightning from data/claims.toml, checked against its run
    "guide.warning_witnesses",  # every declared warning is still emitted by its witness run
    "build_mechanics.notebook_baseurl",  # hands html_baseurl to the notebooks' pandoc filter
    "build_mechanics.reader_downloads",  # the downloaded script and notebook: title, then what to install, quiet log
    "build_mechanics.site_build",  # a build into a recorded folder removes the record the tests would read
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
    # sphinx-gallery re-runs only examples whose own file changed; CI re-runs all of them
    # (docs/_ext/build_mechanics/example_workers.py).
    "run_stale_examples": False,
    # Examples run side by side in joblib workers, as many as Sphinx's -j; only in builds that run one
    # (docs/_ext/build_mechanics/example_workers.py).
    "parallel": True,
    "download_all_examples": False,
    # No sg_execution_times pages: they are timings of one build, not guide content (and 8 more pages to write).
    "write_computation_times": False,
    # Nor a running time at the end of each example: how long one build took, not something the reader runs.
    "min_reported_time": float("inf"),
    "remove_config_comments": True,
    # Sections in reading order: the core pattern, each stage, then the pitfalls, caching, DDP and cost.
    "subsection_order": [
        f"../gallery/{section}" for section in ("core", "stages", "pitfalls", "caching", "distributed", "performance")
    ],
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    # Before each example: matplotlib's state reset, the heap the worker has already walked frozen, and the recorder of
    # its runs' configurations on the path (docs/_ext/build_mechanics/run_records.py)
    "reset_modules": (
        "matplotlib",
        "build_mechanics.example_workers.freeze_survivors",
        "build_mechanics.declared_warnings.strict_warnings",
        "build_mechanics.run_records.record_runs",
    ),
    # Before each example and after it: declared_warnings.strict_warnings saves and restores the warning filters.
    "reset_modules_order": "both",
    # No first_notebook_cell: it would come before the title. The downloads start with the title, then one cell for
    # the reader (what to install, Lightning's log turned down as on the page): build_mechanics/reader_downloads.py.
    "capture_repr": (),
    "show_signature": False,
    # The downloaded notebooks: pandoc converts each rST text block to GitHub-flavoured Markdown, as Jupyter renders
    # it. Its reader (docs/_ext/build_mechanics/notebook_rst_reader.lua) is pandoc's rST reader with smart dashes and
    # quotes, as Sphinx's smartquotes print them, and ranks headings by their underline as on the whole page; its
    # filter (docs/_ext/build_mechanics/notebook_links.lua) turns :doc: roles into links to the hosted pages under
    # html_baseurl, which docs/_ext/build_mechanics/notebook_baseurl.py passes. The later --from/--to override those
    # sphinx-gallery passes (rst, md).
    # pandoc comes from the pypandoc_binary wheel.
    "pypandoc": {
        "extra_args": [f"--from={MECHANICS / 'notebook_rst_reader.lua'}", "--to=gfm", "--wrap=none"],
        "filters": [str(MECHANICS / "notebook_links.lua")],
    },
    # Thumbnails: an example's first figure (sphinx_gallery_thumbnail_number picks another); the examples
    # whose lesson is a raised error or a printed check draw none, and get the guide's own picture of the change
    # (old signature to new), not sphinx-gallery's placeholder.
    "default_thumb_file": str(ROOT / "docs" / "_static" / "gallery_thumb.png"),
}

# -- MyST notebooks (myst-nb): executed whenever their page is read, and an error is an error ------
# "force" rather than "cache": a build reads a notebook page when the page changed or the build is fresh, as a CI
# build is, so nothing cached can stand in for an execution; a no-op rebuild reads, so executes, nothing.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
# Anything a notebook writes to standard error is a warning, so a failure with -W: the pages' output stays clean.
nb_output_stderr = "warn"
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
# The search ranks executed examples above reference pages at an equal match (Sphinx opens this path as given).
html_search_scorer = str(ROOT / "docs" / "_static" / "search_scorer.js")

# Copy buttons copy the code, not the prompts or the output.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_exclude = ".linenos, .gp, .go"

# -- Publishing: where the site lives ---------------------------------------------------------------
#: The site's address: the one setting the 404 page, link previews, the checker's links on the rule pages and the
#: downloaded notebooks' links follow (docs/_ext/build_mechanics/site_address.py). Here the address of a local build,
#: served as README says (`python3 -m http.server -d _build/html 8000`); the hosted builds pass theirs with
#: `-D html_baseurl=...` (.readthedocs.yaml, .github/workflows/docs.yml).
html_baseurl = "http://127.0.0.1:8000/"
# Open Graph tags (title, description, canonical URL) for link previews; no generated images, nothing fetched.
ogp_social_cards = {"enable": False}
ogp_description_length = 200

# -- Preview (GUIDE_PREVIEW=1, `nox -s preview`): every page rendered, nothing executed; never published -----------
from build_mechanics import preview  # noqa: E402

if preview.active():
    preview.configure(globals())
