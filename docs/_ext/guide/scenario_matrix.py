"""Sphinx extension: run the scenario matrix (:mod:`lightning_migrate.scenarios`) at every build and render it.

At ``builder-inited`` the matrix starts in its own Python process (Lightning is never imported into Sphinx), beside
the gallery examples; at ``env-before-read-docs`` the build waits for it. A cell whose outcome is not the one
``data/scenarios.toml`` declares fails the build with an error naming the recipe, the scenario and what happened.

The results live in one stable file, ``<doctreedir>/scenario-matrix.json``, written atomically by the matrix
process and re-used by a later build only when nothing it depends on changed (the matrix file, the harness, every
recipe page, the installed Lightning and torch -- their hash is stored beside it) and the build is not a CI build
(``CI=true`` always runs it; in a test run, a build takes the results an earlier build of the same run made from
the same inputs: ``build_mechanics.run_cache``). The page that renders it notes a dependency on that file, so it is
re-read whenever the results change.

``.. scenario-matrix::`` renders the grid (scenario x recipe), then every cell that does not hold, with the
captured detail, the declared reason and the page that shows the variant that holds, and the cells that do not
apply, with their reasons.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from build_mechanics import run_cache
from build_mechanics.execution_mode import forced_execution
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from lightning_migrate import scenarios

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[3]
RESULTS = "scenario-matrix.json"
SYMBOLS = {"holds": "✓", "differs": "≠", "raises": "✗", "not applicable": "·"}


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def inputs_key() -> str:
    """Hash of everything the matrix's results depend on (see the module docstring)."""
    digest = hashlib.sha256()
    _, recipes = scenarios.load_matrix()
    files = [scenarios.MATRIX_FILE, Path(scenarios.__file__), *(ROOT / r.page for r in recipes)]
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    for dist in ("lightning", "torch"):
        digest.update(f"{dist}={_installed(dist)}".encode())
    return digest.hexdigest()


def _paths(app: Sphinx) -> tuple[Path, Path, Path]:
    base = Path(app.doctreedir)
    return base / RESULTS, base / "scenario-matrix.key", base / "scenario-matrix.log"


def _on_builder_inited(app: Sphinx) -> None:
    results, key_file, log = _paths(app)
    try:
        key = inputs_key()
    except scenarios.MatrixError as error:
        raise ExtensionError(str(error)) from None
    app.env.scenario_matrix_results = str(results)  # type: ignore[attr-defined]
    if not forced_execution() and results.exists() and key_file.exists() and key_file.read_text() == key:
        return
    results.parent.mkdir(parents=True, exist_ok=True)
    if run_cache.lookup("scenario-matrix", key, results):
        key_file.write_text(key, encoding="utf-8")
        logger.info("scenario matrix: run by an earlier build of this test run from the same inputs")
        return
    logger.info("running the scenario matrix (data/scenarios.toml) ...")
    path = [str(ROOT / "src"), str(ROOT / "docs" / "_ext"), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    environment = results.with_suffix(".environment.json")
    with log.open("w", encoding="utf-8") as handle:
        process = subprocess.Popen(
            run_cache.run_command("lightning_migrate.scenarios", "--output", str(results), environment=environment),
            cwd=ROOT,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    app._scenario_matrix = (process, key, key_file, log)  # type: ignore[attr-defined]


def _finish(app: Sphinx, *args: Any) -> None:
    """Wait for the matrix process started at ``builder-inited``; fail the build on an unexpected cell."""
    running = getattr(app, "_scenario_matrix", None)
    if running is None:
        return
    app._scenario_matrix = None  # type: ignore[attr-defined]
    process, key, key_file, log = running
    code = process.wait()
    text = log.read_text(encoding="utf-8", errors="replace")
    if code != 0:
        lines = [line.removeprefix("scenario matrix: ") for line in text.splitlines() if " × " in line]
        detail = "\n".join(f"  {line}" for line in lines) or "\n".join(text.splitlines()[-30:])
        raise ExtensionError(
            f"the scenario matrix failed (data/scenarios.toml, src/lightning_migrate/scenarios.py; "
            f"exit code {code}):\n{detail}"
        )
    key_file.write_text(key, encoding="utf-8")
    results = key_file.with_name(RESULTS)
    run_cache.store("scenario-matrix", key, results, results.with_suffix(".environment.json"))
    logger.info(text.strip().splitlines()[-1] if text.strip() else "scenario matrix: done")


def matrix_results(app: Sphinx) -> dict[str, Any]:
    """The results document of this build (see :func:`lightning_migrate.scenarios.run_matrix`)."""
    _finish(app)
    return json.loads(Path(app.env.scenario_matrix_results).read_text(encoding="utf-8"))  # type: ignore[attr-defined]


class ScenarioMatrix(SphinxDirective):
    """``.. scenario-matrix::``: the grid, the cells that do not hold, and the cells that do not apply."""

    def run(self) -> list[nodes.Node]:
        document = matrix_results(self.env.app)
        self.env.note_dependency(self.env.scenario_matrix_results)  # type: ignore[attr-defined]
        self.env.note_dependency(str(scenarios.MATRIX_FILE))
        recipes = {r["id"]: r for r in document["recipes"]}
        cells = {(c["recipe"], c["scenario"]): c for c in document["cells"]}
        counts = {o: sum(c["outcome"] == o for c in document["cells"]) for o in scenarios.OUTCOMES}
        numbers = {scenario["id"]: number for number, scenario in enumerate(document["scenarios"], 1)}
        lines = [
            f"Run on Lightning {document['lightning']} (torch {document['torch']}) by this build: "
            f"{len(document['cells'])} cells in {document['seconds']:.1f} s -- {counts['holds']} hold, "
            f"{counts['differs']} differ, {counts['raises']} raise, {counts['not applicable']} do not apply.",
        ]
        lines += [
            "",
            ".. list-table:: Recipe (row) in scenario (column): "
            + ", ".join(f"{symbol} {outcome}" for outcome, symbol in SYMBOLS.items()),
            "   :header-rows: 1",
            "   :stub-columns: 1",
            "   :class: scenario-matrix",
            "",
            "   * - Recipe",
        ]
        lines += [f"     - {numbers[s['id']]}" for s in document["scenarios"]]
        for rid, recipe in recipes.items():
            lines.append(f"   * - :doc:`{recipe['title']} </{_docname(recipe['page'])}>`")
            lines += [f"     - {SYMBOLS[cells[(rid, s['id'])]['outcome']]}" for s in document["scenarios"]]
        lines += ["", ".. rubric:: Scenarios", ""]
        lines += [f"{numbers[s['id']]}. {s['title']}" for s in document["scenarios"]]
        titles = {s["id"]: s["title"] for s in document["scenarios"]}
        not_holding = [c for c in document["cells"] if c["outcome"] in ("differs", "raises")]
        lines += ["", ".. rubric:: Where a recipe does not hold, and the variant that does", ""]
        if not not_holding:
            lines.append("Every recipe holds in every scenario that applies to it.")
        for cell in not_holding:
            recipe = recipes[cell["recipe"]]
            expectation = recipe["expect"].get(cell["scenario"], {})
            number = numbers[cell["scenario"]]
            lines.append(f"- **{recipe['title']}** in *{number}. {titles[cell['scenario']]}* {cell['outcome']}:")
            lines += ["", "  .. code-block:: none", ""]  # site.css wraps these long single lines
            lines += [f"     {line}" for line in cell["detail"].splitlines()] + [""]
            if expectation.get("reason"):
                see = f" Use :doc:`/{expectation['see']}`." if expectation.get("see") else ""
                lines.append(f"  {expectation['reason'].rstrip('.')}.{see}")
            lines.append("")
        reasons: dict[str, list[str]] = {}
        for cell in document["cells"]:
            if cell["outcome"] == "not applicable":
                reasons.setdefault(cell["detail"], []).append(
                    f"{recipes[cell['recipe']]['title']} in *{titles[cell['scenario']]}*"
                )
        lines += ["", ".. rubric:: Cells that do not apply", ""]
        for reason, where in reasons.items():
            lines.append(f"- {reason}: " + "; ".join(where) + ".")
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, container)
        return container.children


def _docname(page: str) -> str:
    """The docname of a recipe's page: ``gallery/core/x.py`` -> ``examples/core/x`` (where sphinx-gallery puts a
    gallery script's page), ``docs/x.md`` -> ``x``."""
    if page.startswith("docs/"):
        return str(Path(page).relative_to("docs").with_suffix(""))
    return "examples/" + page.removeprefix("gallery/").removesuffix(".py")


def setup(app: Sphinx) -> dict[str, Any]:
    # Before sphinx-gallery's builder-inited handler (priority 500) runs the examples: both run at once.
    app.connect("builder-inited", _on_builder_inited, priority=400)
    app.connect("env-before-read-docs", _finish)
    app.add_directive("scenario-matrix", ScenarioMatrix)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
