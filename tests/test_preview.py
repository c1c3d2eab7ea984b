"""Preview mode (``GUIDE_PREVIEW=1``, ``nox -s preview``) executes nothing and says it is a preview; a CI build
refuses it. A fixture project: the guide's own configuration in preview, one gallery script and one MyST notebook
that each leave a file behind when they run, and a page of the directives and the role that a real build fills from
its runs."""

from __future__ import annotations

import ast
import html
import json
import re
from importlib import metadata
from pathlib import Path

import pytest
from build_mechanics import preview
from builds import GALLERY_CONF, ROOT, example_stubs, project, sphinx_build

from migration_guide import compat

#: A claim of the changelog kind (the wording needs no run): the role prints it in a preview too.
CLAIMS = """
[claim.tiny]
text = "Lightning 1.3 deprecated the ``outputs`` argument of ``on_train_epoch_end`` and 1.5 removed it"
evidence = [{ changelog = "module-on-train-epoch-end-outputs", fields = { deprecated_in = "1.3", removed_in = "1.5" } }]
"""


def preview_project(tmp_path: Path) -> tuple[Path, Path]:
    """The fixture project and the folder where its example and notebook leave a file when they run."""
    ran = tmp_path / "ran"
    ran.mkdir()
    leave = "from pathlib import Path\nPath({path!r}).write_text('ran')\n"
    files = {
        "index.rst": (
            "Site\n====\n\n.. toctree::\n\n   examples/index\n   notebook\n\n"
            ":claim:`Tiny`.\n\n.. old-hooks-table::\n\n.. scenario-matrix::\n\n.. recipe-domain:: callback_side\n\n"
            ".. symptom-index::\n   :option: value\n\n.. claims-table::\n"
        ),
        "notebook.md": (
            "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n# Notebook\n\n"
            f"```{{code-cell}} python\n{leave.format(path=str(ran / 'notebook'))}```\n"
        ),
        "gallery/README.txt": "Gallery\n=======\n",
        "gallery/example.py": f'"""\nExample\n=======\n"""\n\n{leave.format(path=str(ran / "example"))}',
        "claims.toml": CLAIMS,
    }
    conf = (
        "# the guide's extensions as a preview leaves them, less what needs the guide's own pages\n"
        "extensions = [e for e in extensions if e.startswith(('sphinx_gallery', 'myst_nb', 'build_mechanics'))]\n"
        "extensions = [e for e in extensions if e not in ('build_mechanics.project_links',)]\n"
        f"claims_file = 'claims.toml'\n{GALLERY_CONF}"
    )
    return project(tmp_path / "project", files, conf), ran


def test_a_preview_renders_every_page_and_executes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(preview.VARIABLE, "1")
    root, ran = preview_project(tmp_path)
    build = sphinx_build(root, source=".", ci=False)
    assert build.returncode == 0, build.output[-4000:]
    assert sorted(p.name for p in ran.iterdir()) == []  # neither the example nor the notebook ran
    assert "preview: Preview: nothing on these pages was executed" in build.output
    index = build.page("index")
    assert index.count("Not executed in preview") == 5  # every directive a real build fills from its runs
    assert "the scenario matrix’s results" in index or "the scenario matrix's results" in index
    assert "Lightning 1.3 deprecated the <code" in index  # the claim's wording, capitalized as asked, unchecked
    for page in ("index", "notebook", "examples/example"):
        assert preview.BANNER.split(":")[0] in build.page(page), page  # the banner on every page
    assert "(preview)" in index
    doctrees = build.outdir / ".doctrees"
    assert not [p.name for p in doctrees.glob("*.json") if p.stem in {"probe-records", "scenario-matrix"}]
    # the gallery page exists, without output: the script was converted, not run
    assert "sphx-glr-script-out" not in build.page("examples/example")


#: The compatibility page's directives that read the probe records, as docs/reference/compatibility.rst gives them
#: (``compat-examples`` reads the examples' runs, and needs the gallery's scripts).
COMPAT_PAGE = """Compatibility
=============

.. compat-table::

.. compat-received::
   :patterns: callback-on-train-epoch-end-outputs module-on-train-epoch-end-outputs training-epoch-end

.. compat-equivalence::
"""


def test_a_preview_renders_the_compatibility_tables_from_the_committed_records(tmp_path, monkeypatch):
    """The compatibility tables read every release's committed record and, in a real build, this build's probe
    records for the installed release; a preview runs no probe, so its tables show the committed records, where they
    once stopped the preview (``FileNotFoundError`` on the build's ``probe-records.json``)."""
    monkeypatch.setenv(preview.VARIABLE, "1")
    conf = (
        "extensions = [e for e in extensions if e.startswith(('sphinx_gallery', 'myst_nb', 'build_mechanics'))\n"
        "              or e in ('sphinx_design', 'guide.probe_records', 'guide.compat_table')]\n"
        "extensions = [e for e in extensions if e not in ('build_mechanics.project_links',)]\n"
        f"claims_file = 'claims.toml'\n{GALLERY_CONF}"
    )
    files = example_stubs()  # the pages the tables link
    files["index.rst"] += "   compatibility\n"
    files |= {"compatibility.rst": COMPAT_PAGE, "gallery/README.txt": "Gallery\n=======\n", "claims.toml": CLAIMS}
    root = project(tmp_path / "project", files, conf)
    build = sphinx_build(root, source=".", ci=False)
    assert build.returncode == 0, build.output[-4000:]
    page = build.page("compatibility")
    committed = json.loads(compat.data_path(metadata.version("lightning")).read_text(encoding="utf-8"))
    error = next(r["error_message"] for r in committed["probes"]["records"] if r["error_message"])
    assert html.escape(error, quote=False) in page or error in page, error
    assert not (build.outdir / ".doctrees" / "probe-records.json").exists()  # no probe ran


def test_a_preview_is_never_a_ci_build(tmp_path, monkeypatch):
    monkeypatch.setenv(preview.VARIABLE, "1")
    root, ran = preview_project(tmp_path)
    build = sphinx_build(root, source=".", ci=True)
    assert build.returncode != 0
    assert "GUIDE_PREVIEW is set in a build with CI set: a preview is never a published or tested build" in build.output
    assert not list(ran.iterdir())


def registered(module: str, method: str) -> set[str]:
    """The names the extension ``module`` (``guide.x``) registers with ``app.<method>("name", ...)``."""
    path = ROOT / "docs" / "_ext" / Path(*module.split(".")).with_suffix(".py")
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


@pytest.mark.parametrize("module", sorted({owner for owner, _ in preview.DIRECTIVES.values()}))
def test_the_preview_stands_in_for_every_directive_and_role_it_leaves_out(module):
    directives = registered(module, "add_directive")
    stood_in = {name for name, (owner, _) in preview.DIRECTIVES.items() if owner == module}
    if module in preview.EXECUTING:  # left out: every directive of it stands in
        assert directives == stood_in
        assert registered(module, "add_config_value") <= set(preview.CONFIG_VALUES)
    else:  # loaded: the one that renders probe records stands in
        assert stood_in == {"checker-rule"} and stood_in <= directives
    assert registered(module, "add_role") == ({"claim"} if module == "guide.claims" else set())


def test_every_extension_left_out_has_its_directives_stood_in():
    for module in preview.EXECUTING:
        assert registered(module, "add_directive") == {n for n, (o, _) in preview.DIRECTIVES.items() if o == module}


def test_the_guide_leaves_out_what_executes_in_a_preview(monkeypatch):
    """conf.py's own extensions, through preview.configure: none of EXECUTING is left, every other one is."""
    settings = {"extensions": ["sphinx_gallery.gen_gallery", *preview.EXECUTING, "myst_nb"], "project": "P"}
    monkeypatch.delenv("CI", raising=False)
    preview.configure(settings)
    assert settings["extensions"] == ["sphinx_gallery.gen_gallery", "myst_nb", "build_mechanics.preview"]
    assert settings["plot_gallery"] == "False" and settings["nb_execution_mode"] == "off"
    assert settings["html_title"] == "P (preview)"
    guide = (ROOT / "conf.py").read_text(encoding="utf-8")
    assert re.search(r"^if preview\.active\(\):\n    preview\.configure\(globals\(\)\)$", guide, flags=re.M)
    assert set(preview.EXECUTING) <= set(re.findall(r'"(guide\.\w+)"', guide))
