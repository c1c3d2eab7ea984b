"""Every notebook sphinx-gallery generated runs on its own, in a real Jupyter kernel, in an empty directory.

The kernel runs under the build's warning filters (``docs/_ext/build_mechanics/declared_warnings.py``): an undeclared
warning is an error there too. A notebook that writes to standard error fails, naming the script line of the cell.
"""

from __future__ import annotations

import re
import shutil
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from build_mechanics import declared_warnings  # the build's one list of accepted warnings
from builds import GALLERY_SCRIPTS, ROOT
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def run_alone(notebook_path: Path, monkeypatch) -> nbformat.NotebookNode:
    """Execute the notebook at ``notebook_path`` in a fresh kernel started with the build's ``PYTHONWARNINGS``."""
    notebook = nbformat.read(notebook_path, as_version=4)
    monkeypatch.setenv("PYTHONWARNINGS", declared_warnings.pythonwarnings())  # the kernel inherits it
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": notebook_path.parent}}
    )
    client.execute()
    return notebook


def stderr_outputs(notebook: nbformat.NotebookNode, script: Path, source: str) -> list[str]:
    """``script:line: text`` for every standard-error output, ``line`` being where the cell's code starts in
    ``source`` (the script's text; sphinx-gallery copies each code block into one cell)."""
    found = []
    for cell in notebook.cells:
        streams = [o for o in cell.get("outputs", []) if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        if cell.cell_type != "code" or not streams:
            continue
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        offset = source.find(first) if first else -1
        line = source.count("\n", 0, offset) + 1 if offset >= 0 else "?"
        found += [f"{script}:{line}: {stream['text'].strip()[:300]}" for stream in streams]
    return found


@pytest.mark.parametrize("script", GALLERY_SCRIPTS, ids=str)
def test_notebook_runs_alone(site, script, tmp_path, monkeypatch):
    generated = site.tree / "docs" / "examples" / script.with_suffix(".ipynb")
    notebook_path = tmp_path / generated.name
    shutil.copy(generated, notebook_path)  # nothing else in the directory: no helper module, no gallery
    try:
        notebook = run_alone(notebook_path, monkeypatch)
    except CellExecutionError as err:  # name the notebook and the failing cell
        pytest.fail(f"{script.with_suffix('.ipynb')}: a cell failed:\n{err}")
    written = stderr_outputs(notebook, Path("gallery") / script, (ROOT / "gallery" / script).read_text("utf-8"))
    assert not written, "the notebook wrote to standard error:\n" + "\n".join(written)
    streams = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert f"Lightning {metadata.version('lightning')}" in streams


def test_a_notebook_that_writes_to_stderr_is_named_with_its_script_line(tmp_path, monkeypatch):
    """The check above is real: a cell printing to standard error is reported with the script line it came from."""
    source = 'import sys\n\nprint("to stdout")\n\n# %%\nprint("injected", file=sys.stderr)\n'
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell('import sys\n\nprint("to stdout")'),
            nbformat.v4.new_code_cell('print("injected", file=sys.stderr)'),
        ]
    )
    path = tmp_path / "injected_stderr.ipynb"
    nbformat.write(notebook, path)
    written = stderr_outputs(run_alone(path, monkeypatch), Path("gallery/core/injected_stderr.py"), source)
    assert written == ["gallery/core/injected_stderr.py:6: injected"]


def test_the_notebook_kernel_runs_under_the_declared_filters(tmp_path, monkeypatch):
    """An undeclared warning in a downloaded notebook's cell is an error, as in the build."""
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell('import warnings\n\nwarnings.warn("injected", UserWarning)')]
    )
    path = tmp_path / "injected_warning.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(CellExecutionError) as raised:
        run_alone(path, monkeypatch)
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(raised.value))  # IPython colours its traceback
    assert "----> 3 warnings.warn" in text
    assert "UserWarning: injected" in text


@pytest.mark.parametrize("script", [Path("core/old_outputs_hooks.py"), Path("core/callback_side_caching.py")], ids=str)
def test_notebook_run_as_a_reader_runs_it_shows_no_warning(site, script, tmp_path, monkeypatch):
    """In a reader's Jupyter no PYTHONWARNINGS is set: the notebook's first cell (``first_notebook_cell``) ignores the
    declared warnings itself, so a fit prints no warning (nor the path of the reader's site-packages)."""
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    notebook_path = tmp_path / script.with_suffix(".ipynb").name
    shutil.copy(site.tree / "docs" / "examples" / script.with_suffix(".ipynb"), notebook_path)
    notebook = nbformat.read(notebook_path, as_version=4)
    assert notebook.cells[0].source == declared_warnings.FIRST_NOTEBOOK_CELL
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp_path}}).execute()
    written = stderr_outputs(notebook, Path("gallery") / script, (ROOT / "gallery" / script).read_text("utf-8"))
    assert written == []
