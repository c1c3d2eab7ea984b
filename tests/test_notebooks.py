"""Every notebook a reader downloads runs on its own, in a real Jupyter kernel, in an empty directory, and prints
the numbers its page shows; the downloaded script and notebook run as quietly as the page, without the build's
warning filters.

The kernel runs under the build's warning filters (``src/migration_guide/declared_warnings.py``, applied by
``build_mechanics.declared_warnings``): an undeclared warning is an error there too. A notebook that writes to
standard error fails, naming the script line of the cell.
A notebook run is the example's second run (the build ran the first): every number it prints must be the number on
its page, line by line, except quantities measured on the machine (:data:`MEASURED`) -- the examples are seeded
before their data and models are made.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from build_mechanics import declared_warnings  # the build's one list of accepted warnings
from builds import GALLERY_SCRIPTS, ROOT
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

#: A quantity measured on the machine that ran the example, not computed from seeded data: a time, a process's
#: memory, a memory growth per step, a ratio of timings ("1.14 x"), or a network port ("[127.0.0.1]:45746").
MEASURED = re.compile(r"-?[\d,]*\.?\d+\s*(?:ms|s|MiB|GiB|B/step|x)\b|\]:\d+")
#: A number as printed: an integer (with thousands separators) or a decimal, with an exponent.
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def printed_numbers(text: str) -> list[list[str]]:
    """The numbers of each non-empty line of ``text``, measured quantities (:data:`MEASURED`) left out."""
    return [NUMBER.findall(MEASURED.sub(" ", line)) for line in text.splitlines() if line.strip()]


def page_outputs(page: str) -> str:
    """The text sphinx-gallery printed on ``page`` (its captured-output blocks, in order)."""
    blocks = re.findall(r'<div class="sphx-glr-script-out[^"]*">(.*?)</div>\s*</div>', page, flags=re.S)
    return "\n".join(html.unescape(re.sub(r"<[^>]+>", "", block)) for block in blocks)


def test_printed_numbers_leave_out_what_the_machine_measured():
    text = (
        "loss 0.25 after 4 steps\n\nold contract 33.30 MiB   3491.8 B/step\nno cache 61 ms; 1.14 x\n"
        "at [127.0.0.1]:45746"
    )
    assert printed_numbers(text) == [["0.25", "4"], [], [], ["127.0", "0.1"]]


def execute(notebook: nbformat.NotebookNode, folder: Path) -> None:
    """Execute ``notebook`` with nbclient, in ``folder``, by a fresh ``python3`` kernel that talks over Unix
    sockets and is stopped at once when the last cell has run.

    ``shutdown_kernel="immediate"`` saves about 3 s a notebook over nbclient's ``"graceful"`` exit (7.0 s -> 4.1 s
    on ``forgetting_to_clear``). Over TCP, in one CI run of the 45 notebooks on two workers, a new kernel then found
    its port taken (``ZMQError: Address already in use``: jupyter_client picks free ports and releases them before
    the kernel binds them). ``transport="ipc"`` (jupyter_client's ``KernelManager`` options, set through nbclient's
    traitlets ``config``) binds socket files instead: no port to race for. Their ``ip`` (the files' path prefix) is
    absolute and in a folder of their own: a relative one (jupyter_client's default, ``kernel-ipc``) is read from the
    kernel's working directory, ``folder``, and from the client's, and the two never meet; and ``folder`` holds the
    notebook alone."""
    with tempfile.TemporaryDirectory(prefix="kernel-") as sockets:  # short: a socket's path has at most 107 bytes
        config = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "ipc")}})
        NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": folder}},
            shutdown_kernel="immediate",
            config=config,
        ).execute()


def run_alone(notebook_path: Path, monkeypatch) -> nbformat.NotebookNode:
    """Execute the notebook at ``notebook_path`` in a fresh kernel started with the build's ``PYTHONWARNINGS``."""
    notebook = nbformat.read(notebook_path, as_version=4)
    monkeypatch.setenv("PYTHONWARNINGS", declared_warnings.pythonwarnings())  # the kernel inherits it
    execute(notebook, notebook_path.parent)
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


def downloaded(site, script: Path, suffix: str) -> Path:
    """The file a reader downloads from the page of ``script`` (``.py`` or ``.ipynb``), as the page links it."""
    docname = f"examples/{script.with_suffix('').as_posix()}"
    name = re.escape(script.with_suffix(suffix).name)
    [href] = set(re.findall(rf'href="((?:\.\./)*_downloads/[0-9a-f]+/{name})"', site.page(docname)))
    return (site.outdir / docname).parent.joinpath(href).resolve()


def test_no_downloaded_notebook_shows_an_empty_code_cell(site):
    """Where a page's hidden checks stand, sphinx-gallery leaves an empty code cell; the reader's download has none."""
    blank = [
        f"{script.with_suffix('.ipynb')}: cell {number}"
        for script in GALLERY_SCRIPTS
        for number, cell in enumerate(nbformat.read(downloaded(site, script, ".ipynb"), as_version=4).cells)
        if cell.cell_type == "code" and not cell.source.strip()
    ]
    assert blank == []
    hidden = [s for s in GALLERY_SCRIPTS if "sphinx_gallery_start_ignore" in (ROOT / "gallery" / s).read_text("utf-8")]
    assert hidden, "no page hides a check: this test checks nothing"


@pytest.mark.parametrize("script", GALLERY_SCRIPTS, ids=str)
def test_notebook_runs_alone(site, script, tmp_path, monkeypatch):
    generated = downloaded(site, script, ".ipynb")
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
    page = site.page(f"examples/{script.with_suffix('').as_posix()}")
    shown, printed = printed_numbers(page_outputs(page)), printed_numbers(streams)
    differ = [f"  page: {a}\n  run:  {b}" for a, b in zip(shown, printed, strict=False) if a != b]
    assert len(shown) == len(printed) and not differ, (
        f"{script}: its second run printed other numbers than its page ({len(printed)} lines, page {len(shown)}):\n"
        + "\n".join(differ[:5])
    )


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


#: Examples run as a reader runs them (no PYTHONWARNINGS): a fit, a callback's fit, several DDP processes.
READER_RUNS = [
    Path("core/old_outputs_hooks.py"),
    Path("core/callback_side_caching.py"),
    Path("distributed/ddp_predict.py"),
]


@pytest.mark.parametrize("script", READER_RUNS, ids=str)
def test_notebook_run_as_a_reader_runs_it_shows_no_warning(site, script, tmp_path, monkeypatch):
    """In a reader's Jupyter no PYTHONWARNINGS is set: the notebook's cell after the title says what to install and
    turns Lightning's log and the notices that are not the example's down, so a fit prints no warning (nor the path of
    the reader's site-packages)."""
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    notebook_path = tmp_path / script.with_suffix(".ipynb").name
    shutil.copy(downloaded(site, script, ".ipynb"), notebook_path)
    notebook = nbformat.read(notebook_path, as_version=4)
    title, first = notebook.cells[0], notebook.cells[1]
    assert title.cell_type == "markdown" and title.source.startswith("# ")
    assert first.cell_type == "code" and first.source.startswith("# To install what this example ran on")
    assert f"lightning=={metadata.version('lightning')}" in first.source.splitlines()[0].split()
    assert len(first.source.splitlines()) <= 12
    execute(notebook, tmp_path)
    written = stderr_outputs(notebook, Path("gallery") / script, (ROOT / "gallery" / script).read_text("utf-8"))
    assert written == []


@pytest.mark.parametrize("script", READER_RUNS, ids=str)
def test_downloaded_script_runs_as_quietly_as_the_notebook(site, script, tmp_path):
    """``python script.py`` on the downloaded script, without the build's filters, in an empty directory: its title
    first, then the same cell as the notebook; nothing on standard error."""
    source = downloaded(site, script, ".py").read_text(encoding="utf-8")
    assert source.startswith('"""') and "\n# %%\n# To install what this example ran on" in source
    (tmp_path / script.name).write_text(source, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"} | {"MPLBACKEND": "Agg"}
    run = subprocess.run(
        [sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr == "", f"{script}: {run.stderr[-3000:]}"
    assert f"Lightning {metadata.version('lightning')}" in run.stdout
