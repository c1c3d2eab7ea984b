"""Preview mode: every page rendered, nothing executed, for writers (``nox -s preview``; scikit-learn's
``make html-noplot`` is the model).

A build with ``GUIDE_PREVIEW=1`` (:data:`VARIABLE`) runs no gallery example (sphinx-gallery's ``plot_gallery``
off), no MyST notebook (myst-nb's ``nb_execution_mode = "off"``) and none of the guide's recorders: the extensions of
:data:`EXECUTING` -- the probes, the scenario matrix, the warning witnesses and the claims' checks, and the pages
built from their records -- are left out, and this extension stands in for them: each of their directives renders
a visible "not executed in preview" box, and ``:claim:`id``` prints the claim's wording unchecked. Every page shows
a banner saying it is a preview, and the console says so when the build starts and ends.

A preview never publishes: a build asked for one with ``CI`` set (every hosted build and the doc-test build set it,
or run without :data:`VARIABLE`) stops with an error, and ``nox -s preview`` builds a copy of the tree into
``_build/preview/`` -- never ``_build/html``, nor the gallery's generated pages of the tree (``docs/examples``),
which a later real build would otherwise take as current.
"""

from __future__ import annotations

import os
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective, SphinxRole

from build_mechanics import current_app
from build_mechanics.execution_mode import forced_execution

logger = logging.getLogger(__name__)

#: The environment variable that asks for a preview (``1``, ``true`` or ``yes``).
VARIABLE = "GUIDE_PREVIEW"
#: The extensions a preview leaves out: each runs Lightning (the probes, the scenario matrix, the witnesses, the
#: claims' cells and checks) or renders what such a run recorded. ``guide.probe_records`` stays loaded (the checker's
#: rule pages load it) but starts no probe in a preview; ``guide.compat_table`` stays loaded, and its tables show the
#: committed records of every release, the installed one's too.
EXECUTING = (
    "guide.symptom_index",
    "guide.symptom_search",
    "guide.reference_table",
    "guide.scenario_matrix",
    "guide.claims",
    "guide.warning_witnesses",
)
#: Every directive a real build fills from a run: the extension it comes from, and what a preview's box says is
#: missing. A preview renders each as a placeholder (``checker-rule`` overrides the loaded extension's own).
DIRECTIVES = {
    "old-hooks-table": ("guide.reference_table", "the table of old hooks, from the probes run on Lightning"),
    "probe-environment": ("guide.reference_table", "the versions the probes ran on"),
    "old-hooks-summary": ("guide.reference_table", "the summary of the probes' records"),
    "scenario-matrix": ("guide.scenario_matrix", "the scenario matrix's results"),
    "recipe-domain": ("guide.scenario_matrix", "where this recipe holds, from the scenario matrix"),
    "symptom-index": ("guide.symptom_index", "the symptom index, from the probes' records and the examples' output"),
    "symptom-quotes": ("guide.symptom_index", "the errors Lightning printed, from the probes' records"),
    "claims-table": ("guide.claims", "every claim with its checked evidence"),
    "checker-rule": ("guide.checker_rules", "this rule's page, with what the probes recorded for each old shape"),
}
#: The configuration values of :data:`EXECUTING` (a project may set them; a preview accepts and ignores them).
CONFIG_VALUES = {
    "claims_file": "data/claims.toml",
    "scenario_matrix_file": "",
    "scenario_matrix_root": "",
}
BANNER = "Preview: nothing on these pages was executed (no example, notebook, probe or check ran). Not for publishing."


def active(environ=os.environ) -> bool:
    """Whether this build is a preview (:data:`VARIABLE` set to ``1``, ``true`` or ``yes``)."""
    return environ.get(VARIABLE, "").lower() in {"1", "true", "yes"}


class PreviewError(RuntimeError):
    """A preview was asked for in a build that executes everything (``CI`` set): a preview never publishes."""


def configure(settings: dict[str, Any]) -> None:
    """Turn ``settings`` (conf.py's namespace) into a preview's: the :data:`EXECUTING` extensions out, this one in,
    the gallery and the notebooks not executed, the banner on every page, "(preview)" in the title.

    Raises:
        PreviewError: ``CI`` is set: that build is a real one (hosted, the doc-test build), never a preview.
    """
    if forced_execution():
        raise PreviewError(f"{VARIABLE} is set in a build with CI set: a preview is never a published or tested build")
    settings["extensions"] = [name for name in settings["extensions"] if name not in EXECUTING]
    settings["extensions"].append("build_mechanics.preview")
    settings["plot_gallery"] = "False"  # sphinx-gallery's option (scikit-learn's `make html-noplot`)
    settings["nb_execution_mode"] = "off"
    # an unexecuted notebook has no language_info from its kernel: myst-nb cannot name the cells' lexer
    settings["suppress_warnings"] = [*settings.get("suppress_warnings", []), "myst-nb.lexer"]
    options = dict(settings.get("html_theme_options", {}))
    options["announcement"] = f"<strong>{BANNER}</strong>"
    settings["html_theme_options"] = options
    settings["html_title"] = f"{settings.get('html_title', settings.get('project', ''))} (preview)"


class AnyOption(dict):
    """An option spec that accepts every option of the directive it stands in for (their values are not used)."""

    def __missing__(self, key: str):
        return directives.unchanged


def placeholder(what: str) -> nodes.Element:
    """The visible box that stands where ``what`` would be rendered from a run."""
    box = nodes.admonition(classes=["preview-placeholder"])
    box += nodes.title("", "Not executed in preview")
    box += nodes.paragraph("", f"A real build shows {what} here.")
    return box


def placeholder_directive(name: str) -> type[SphinxDirective]:
    """A directive standing in for ``name`` (:data:`DIRECTIVES`): any arguments, options and content; a
    :func:`placeholder`."""

    class Placeholder(SphinxDirective):
        has_content = True
        optional_arguments = 99
        final_argument_whitespace = True
        option_spec = AnyOption()

        def run(self) -> list[nodes.Node]:
            return [placeholder(DIRECTIVES[name][1])]

    Placeholder.__name__ = f"Placeholder_{name.replace('-', '_')}"
    return Placeholder


class ClaimWording(SphinxRole):
    """``:claim:`id```: the claim's wording, as a real build prints it (``:claim:`Id``` capitalized), unchecked."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        from guide import claims

        claim_id, capital = self.text.strip(), self.text.strip()[:1].isupper()
        claim_id = claim_id[:1].lower() + claim_id[1:]
        known = claims.claims(current_app.get())
        if claim_id not in known:
            message = self.inliner.reporter.error(f"unknown claim {claim_id!r}", line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, message)], [message]
        text = claims.render_text(known[claim_id], claims.installed_versions())
        if capital:
            text = text[:1].upper() + text[1:]
        node = nodes.inline(classes=["claim", "preview-claim"])
        node += claims.parse_inline(text, self.inliner.document.settings, f"<claim {claim_id}>")
        return [node], []


def _started(app: Sphinx) -> None:
    logger.info(f"preview: {BANNER}")


def _finished(app: Sphinx, exception: BaseException | None) -> None:
    if exception is None:
        logger.info(f"preview: built into {app.outdir} -- {BANNER}")


def setup(app: Sphinx) -> dict[str, Any]:
    """Stand in for :data:`EXECUTING` (conf.py adds this extension when :func:`active`)."""
    current_app.remember(app)
    for name, default in CONFIG_VALUES.items():
        if name not in app.config.values:
            app.add_config_value(name, default, "env", types=[str])
    for name, (extension, _) in DIRECTIVES.items():
        app.add_directive(name, placeholder_directive(name), override=extension not in EXECUTING)
    app.add_role("claim", ClaimWording())
    from guide import claims

    # the claims' wordings for the downloaded notebooks' pandoc filter, as a real build writes them (no check)
    app.connect("config-inited", claims.write_notebook_texts)
    app.connect("builder-inited", _started)
    app.connect("build-finished", _finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
