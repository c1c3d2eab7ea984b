"""The built site: every example page exists and shows output captured from the run."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from build_mechanics import declared_warnings  # the build's one list of accepted warnings
from builds import GALLERY_SCRIPTS, ROOT
from sphinx_gallery.utils import get_md5sum

LIGHTNING = metadata.version("lightning")


def script_outputs(page: str) -> list[str]:
    """The text of every captured-output block sphinx-gallery rendered on ``page``."""
    blocks = re.findall(r'<div class="sphx-glr-script-out[^"]*">(.*?)</div>\s*</div>', page, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", block)) for block in blocks]


def test_the_build_executed_every_gallery_script(site):
    """The scripts the tests check page by page are exactly the ones the build ran (none skipped, none extra), each
    in its current text: sphinx-gallery writes an example's checksum next to its page only after the example ran
    without error, so a rebuild that ran only the changed examples (``nox -s docs``) passes too."""
    counts = re.search(r"executed (\d+) out of (\d+) files?", site.output)
    # a rebuild names the examples it left out because their last run passed ("after excluding N files that had
    # previously been run"): with none changed, it ran 0 of 0
    excluded = re.search(r"after excluding (\d+) files that had previously been run", site.output)
    assert counts, site.output[-3000:]
    assert int(counts[2]) + int(excluded[1] if excluded else 0) == len(GALLERY_SCRIPTS) > 0, site.output[-3000:]
    generated = site.tree / "docs" / "examples"
    ran = sorted(path.relative_to(generated).with_suffix("") for path in generated.rglob("*.py.md5"))
    assert ran == GALLERY_SCRIPTS, "the gallery scripts and those sphinx-gallery recorded a passing run of differ"
    for script in GALLERY_SCRIPTS:
        checksum = (generated / f"{script}.md5").read_text(encoding="utf-8")
        # sphinx-gallery's own checksum (text mode) of the gallery's script: the page shows a run of its current text
        assert checksum == get_md5sum(site.tree / "gallery" / script, mode="t"), script


@pytest.mark.parametrize("script", GALLERY_SCRIPTS, ids=str)
def test_every_example_page_shows_its_captured_output(site, script):
    page = site.page(f"examples/{script.with_suffix('').as_posix()}")
    outputs = script_outputs(page)
    assert outputs, f"{script}: the page shows no captured output"
    assert any(f"Lightning {LIGHTNING}" in out for out in outputs), f"{script}: the page does not name Lightning"


def test_old_pattern_page_shows_what_lightning_raised(site):
    outputs = "\n".join(script_outputs(site.page("examples/core/old_outputs_hooks")))
    # What the build's Lightning raised for each of the three old shapes, and how many steps ran first.
    assert "TypeError: ModuleHookWithOutputs.on_train_epoch_end() missing 1 required positional argument" in outputs
    assert "TypeError: CallbackHookWithOutputs.on_train_epoch_end() missing 1 required positional argument" in outputs
    assert "NotImplementedError: Support for `training_epoch_end` has been removed" in outputs
    steps = [int(n) for n in re.findall(r"training steps taken before the failure: (\d+)", outputs)]
    assert steps == [4, 4, 0]


def test_myst_page_was_executed(site):
    text = html.unescape(re.sub(r"<[^>]+>", "", site.page("which-replacement")))
    assert f"Lightning {LIGHTNING}" in text
    sections = re.findall(
        r"^(Trainer defaults|accumulate_grad_batches=3)\nepoch .*\n((?:\s+\d+\s.*\n)+)", text, flags=re.M
    )
    assert [(name, [int(row.split()[0]) for row in rows.splitlines()]) for name, rows in sections] == [
        ("Trainer defaults", [0, 1]),
        ("accumulate_grad_batches=3", [0, 1]),
    ]
    differences = [float(row.split()[3]) for _, rows in sections for row in rows.splitlines()]
    [largest] = re.findall(r"^largest relative difference: (\S+)$", text, flags=re.M)
    assert float(largest) == max(differences) <= 1e-6


def test_downloads_offered_for_every_example(site):
    downloads = {p.name for p in (site.outdir / "_downloads").rglob("*") if p.is_file()}
    for script in GALLERY_SCRIPTS:
        assert script.name in downloads
        assert script.with_suffix(".ipynb").name in downloads


#: Built files a reader opens or downloads: pages, page sources, notebooks and scripts.
READER_FILES = (".html", ".txt", ".ipynb", ".py")


def machine_paths(build) -> list[str]:
    """The absolute paths of the machine that built ``build``: its tree, the project, the Python environment, home."""
    candidates = {
        str(build.tree.resolve()),
        str(ROOT),
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        sys.prefix,
        str(Path.home()),
        "/root",
        *build.python,  # the environment the build ran in, when not this one (a recorded build)
    }
    return sorted(path for path in candidates if len(path) > 1)


def test_no_built_file_shows_a_path_of_the_build_machine(site):
    """No page, page source, notebook or script of the site names the build tree, the environment or a home."""
    paths = machine_paths(site)
    found = []
    for file in sorted(site.outdir.rglob("*")):
        if file.suffix not in READER_FILES or not file.is_file():
            continue
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            found += [f"{file.relative_to(site.outdir)}:{number}: {path}" for path in paths if path in line]
    assert len(paths) >= 4
    assert not found, "built files show the build machine's paths:\n" + "\n".join(found[:40])


#: What Lightning's informational log and Python's warning display put in an output; none belongs on a page.
NOISE = re.compile(r"GPU available|TPU available|litlogger|`Trainer\.\w+` stopped|^\S+:\d+: \w*Warning: ")


def test_no_page_shows_lightning_banners_or_displayed_warnings(site):
    """Every page's output is the example's own: no "GPU available", no LitLogger tip, no "fit stopped", no
    ``path:line: SomeWarning:`` display, whichever order sphinx-gallery's workers ran the examples in."""
    found = []
    for file in sorted(site.outdir.rglob("*.html")):
        for number, line in enumerate(html.unescape(re.sub(r"<[^>]+>", "", file.read_text("utf-8"))).splitlines(), 1):
            if NOISE.search(line):
                found.append(f"{file.relative_to(site.outdir)}:{number}: {line.strip()[:160]}")
    assert not found, "pages show Lightning's log or displayed warnings:\n" + "\n".join(found[:40])


def _python_with_declared_filters(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS=declared_warnings.pythonwarnings())
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)


def test_declared_filters_make_other_warnings_errors_naming_file_and_line():
    """Under the build's PYTHONWARNINGS, an undeclared warning raises, with the file and line that warned."""
    run = _python_with_declared_filters('import warnings\n\nwarnings.warn("injected", UserWarning)\n')
    assert run.returncode == 1
    assert 'File "<string>", line 3' in run.stderr
    assert "UserWarning: injected" in run.stderr


def test_declared_filters_ignore_lightnings_worker_suggestion():
    """Lightning's "does not have many workers" (machines with more than 2 CPUs) is declared: the text it emits
    (lightning/pytorch/trainer/connectors/data_connector.py) for each of the four dataloaders raises nothing and
    writes nothing to standard error. One process emits all four (each process imports Lightning: 2.5 to 5.6 s apiece
    on 2 cores)."""
    from lightning.fabric.utilities.warnings import PossibleUserWarning

    code = "import warnings\nfrom lightning.fabric.utilities.warnings import PossibleUserWarning\n"
    for loader in ("train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"):
        message = (
            f"The '{loader}' does not have many workers which may be a bottleneck. Consider increasing the value of"
            " the `num_workers` argument` to `num_workers=7` in the `DataLoader` to improve performance."
        )
        code += f"warnings.warn({message!r}, PossibleUserWarning)\nprint({loader!r})\n"
    run = _python_with_declared_filters(code)
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.split() == ["train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"]
    assert issubclass(PossibleUserWarning, UserWarning)


def test_every_declared_warning_gives_its_reason():
    assert declared_warnings.DECLARED and declared_warnings.IN_SCENARIO_CELLS
    for entry in (*declared_warnings.DECLARED, *declared_warnings.IN_SCENARIO_CELLS):
        assert len(entry.reason.split()) >= 10, entry
    assert declared_warnings.pythonwarnings().startswith("error,ignore:")


def test_the_scenario_matrix_cells_accept_their_part_of_the_list_and_nothing_outside_them_does():
    """One list: the matrix ignores ``IN_SCENARIO_CELLS`` inside its cells (read from the build's file); the
    build's filters, which every example, notebook and probe runs under, keep them errors."""
    from migration_guide.scenarios import load_space

    cells = declared_warnings.IN_SCENARIO_CELLS
    assert [(w.message, w.category, w.reason) for w in load_space().warnings] == [
        (w.message, w.category, w.reason) for w in cells
    ]
    for entry in cells:
        run = _python_with_declared_filters(f"import warnings\nwarnings.warn({entry.message + ' x'!r}, UserWarning)\n")
        assert run.returncode == 1 and "UserWarning: " + entry.message in run.stderr, entry.message
