"""Notebooks: found in folders, read cell by cell (IPython's magics and shell lines left out, as ruff does),
findings placed as ``notebook.ipynb:cell N:line:col``, fixes written back into the cells with the outputs
untouched."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from lightning_migrate.checker import notebook

from ._util import run, unwrapped

IMPORTS = "%matplotlib inline\n!pip install lightning\nimport lightning.pytorch as pl\nimport torch"
MODEL = (
    "class LitModel(pl.LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        return self(batch).sum()\n"
    "\n"
    "    def validation_epoch_end(self, outputs):\n"
    '        print("epoch done")'
)
CACHING = (
    "class Cached(pl.LightningModule):\n"
    "    def validation_epoch_end(self, outputs):\n"
    '        self.log("val", torch.stack([o["x"] for o in outputs]).mean())'
)


def make(path: Path, *sources: str, markdown: str = "# A notebook") -> Path:
    """A notebook of a markdown cell then one code cell per source, each with an output, in Jupyter's layout."""
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    book.cells.append(nbformat.v4.new_markdown_cell(markdown))
    for i, source in enumerate(sources, start=1):
        cell = nbformat.v4.new_code_cell(source, execution_count=i)
        cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=f"output of cell {i}\n"))
        book.cells.append(cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(book), encoding="utf-8")
    return path


def test_a_folder_holding_only_a_notebook_is_checked(tmp_path, capsys):
    make(tmp_path / "colab" / "train.ipynb", IMPORTS, "files = !ls\nprint(files)", MODEL)
    code, lines, err = run([tmp_path / "colab"], capsys)
    assert code == 1
    [line] = lines
    assert line.startswith(f"{tmp_path}/colab/train.ipynb:cell 3:5:9: LM001 `validation_epoch_end(self, outputs)`")
    assert "(1 file checked)" in err


def test_a_notebook_named_on_the_command_line_is_read_as_a_notebook(tmp_path, capsys):
    path = make(tmp_path / "train.ipynb", IMPORTS, MODEL)
    code, lines, _ = run(["--output-format", "json", path], capsys)
    assert code == 1
    [record] = json.loads("\n".join(lines))
    assert (record["code"], record["cell"], record["line"], record["column"]) == ("LM001", 2, 5, 9)


def test_the_fix_goes_back_into_the_cells_and_nothing_else_changes(tmp_path, capsys):
    path = make(tmp_path / "train.ipynb", IMPORTS, MODEL)
    before = json.loads(path.read_text(encoding="utf-8"))
    assert run(["--fix", path], capsys)[0] == 1
    text = path.read_text(encoding="utf-8")
    after = json.loads(text)
    assert text == nbformat.writes(nbformat.reads(text, as_version=4))  # Jupyter's own layout, kept
    assert "".join(after["cells"][2]["source"]) == MODEL.replace(
        "validation_epoch_end(self, outputs)", "on_validation_epoch_end(self)"
    )
    for old, new in zip(before["cells"], after["cells"], strict=True):
        assert new.get("outputs") == old.get("outputs")
        assert {k: v for k, v in new.items() if k != "source"} == {k: v for k, v in old.items() if k != "source"}
    assert after["cells"][:2] == before["cells"][:2]  # the markdown and the magics' cell, as they were
    assert after["metadata"] == before["metadata"]
    assert run([path], capsys)[:2] == (0, [])


def test_an_import_a_rewrite_needs_goes_into_the_cell_with_the_imports(tmp_path, capsys):
    path = make(tmp_path / "train.ipynb", IMPORTS, "x = 1", CACHING)
    assert run(["--fix", "--unsafe-fixes", path], capsys)[0] == 1
    cells = ["".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    # as isort sorts it: the standard library's section first, below the IPython lines, which are restored
    assert cells[1] == IMPORTS.replace("import lightning", "from collections import defaultdict\n\nimport lightning")
    assert cells[2] == "x = 1"
    assert "def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):" in cells[3]
    assert run([path], capsys)[:2] == (0, [])


def test_ipython_syntax_is_left_out_but_python_that_looks_like_it_is_read():
    book = notebook.read(
        nbformat.writes(
            nbformat.v4.new_notebook(
                cells=[
                    nbformat.v4.new_code_cell("%%bash\necho def validation_epoch_end"),
                    nbformat.v4.new_code_cell('msg = ("%s"\n       % "x")\nobj?\n!ls'),
                ]
            )
        )
    )
    lines = book.source.splitlines()
    assert "echo" not in book.source  # the cell magic's cell is skipped whole
    assert '       % "x")' in lines  # a continuation line inside brackets is Python
    assert sum("lightning-migrate-ipython" in line for line in lines) == 2  # obj? and !ls
    compile(book.source, "nb", "exec")
    assert book.place(lines.index('       % "x")') + 1) == (2, 2)


def test_a_cell_that_does_not_parse_is_reported_and_the_others_are_checked(tmp_path, capsys):
    path = make(tmp_path / "broken.ipynb", IMPORTS, "def validation_epoch_end(self, outputs:\n    pass", MODEL)
    code, lines, err = run([path], capsys)
    assert code == 1  # the other cells' finding; the cell not read is counted apart
    assert "(1 file checked)" in err  # read, without its broken cell
    assert err.strip().endswith("; 1 notebook read in part (a cell that does not parse skipped)")
    assert f"{path}:cell 2:1:" in err and "syntax error, cell skipped" in err
    assert [line.split(": LM")[0] for line in lines] == [f"{path}:cell 3:5:9"]


def test_a_cell_that_does_not_parse_alone_is_left_out_and_named():
    cells = [nbformat.v4.new_code_cell(s) for s in ("x = [1,\n 2", "y = 1", "await asyncio.sleep(0)")]
    book = notebook.read(nbformat.writes(nbformat.v4.new_notebook(cells=cells)))
    [(number, err)] = book.broken  # the cell left open, not the next one; a top-level await is IPython's
    assert number == 1 and err.lineno == 1
    assert "x = [1" not in book.source and "y = 1" in book.source


def test_a_shell_line_continued_with_a_backslash_is_left_out_whole():
    book = notebook.read(
        nbformat.writes(
            nbformat.v4.new_notebook(
                cells=[nbformat.v4.new_code_cell("!nsys profile \\\n    --delay 15 \\\n    python x.py\nz = 1")]
            )
        )
    )
    compile(book.source, "nb", "exec")
    assert sum("lightning-migrate-ipython" in line for line in book.source.splitlines()) == 3


def test_a_notebook_in_another_language_is_not_read(tmp_path, capsys):
    path = make(tmp_path / "r.ipynb", "validation_epoch_end <- function(outputs) NULL")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["metadata"]["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    path.write_text(json.dumps(data), encoding="utf-8")
    assert run([path], capsys)[:2] == (0, [])


@pytest.mark.parametrize("text", ["{not json", '{"cells": 3}'])
def test_a_file_that_is_not_a_notebook_is_an_error(tmp_path, capsys, text):
    path = tmp_path / "bad.ipynb"
    path.write_text(text, encoding="utf-8")
    code, _, err = run([path], capsys)
    assert code == 2 and f"{path}: not a notebook" in err


@pytest.mark.parametrize(
    ("change", "cause"),
    [
        (lambda d: d["metadata"].update(language_info="python"), "`metadata.language_info` is not an object"),
        (lambda d: d["metadata"].update(kernelspec=["python"]), "`metadata.kernelspec` is not an object"),
        (lambda d: d["metadata"]["kernelspec"].update(language=["python"]), "`metadata.kernelspec.language` is not"),
        (lambda d: d.update(metadata=[]), "`metadata` is not an object"),
        (lambda d: d["cells"][1].update(source=[1, 2]), "cell 1: `source` is not a string or a list of strings"),
    ],
    ids=["language_info a string", "kernelspec a list", "language a list", "metadata a list", "source of numbers"],
)
def test_malformed_metadata_or_source_is_an_error_naming_the_notebook(tmp_path, capsys, change, cause):
    path = make(tmp_path / "bad.ipynb", MODEL)
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    good = make(tmp_path / "good.ipynb", IMPORTS, MODEL)
    code, lines, err = run([path, good], capsys)
    assert code == 1
    assert f"error: {path}: not a notebook: {cause}" in err or f"error: {path}: {cause}" in err
    assert [line.split(":")[0] for line in lines] == [str(good)]  # the other notebook is still checked


def test_a_rewrite_that_loses_the_cells_is_refused_and_named(tmp_path, capsys, monkeypatch):
    # notebook.write refuses a rewrite whose cell markers went missing; the command reports it, writes nothing
    def lost(book, new_source):
        raise notebook.NotebookError("the rewrite lost the boundaries between cells")

    monkeypatch.setattr(notebook, "write", lost)
    path = make(tmp_path / "cells.ipynb", IMPORTS, MODEL)
    before = path.read_bytes()
    code, lines, err = run(["--fix", path], capsys)
    assert path.read_bytes() == before
    assert code == 1
    assert f"error: {path}: fix refused, notebook left unchanged: the rewrite lost the boundaries between cells" in err
    assert len(lines) == 1 and ": LM001 " in lines[0]


def test_indented_comments_in_a_later_cell_stay_in_that_cell(tmp_path, capsys):
    # libcst keeps an indented comment after a class's last method with that method, the next cell's marker too
    model = "import lightning.pytorch as pl\n\nclass M(pl.LightningModule):\n    def training_step(self, batch, i):\n"
    model += "        return batch\n\n    def training_step_end(self, out):\n        return out\n"
    path = make(tmp_path / "cells.ipynb", model, "        # self.log('x', 1)\n")
    code, lines, err = run(["--fix", path], capsys)
    assert (code, err.count("error:")) == (1, 0)
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    assert "".join(cells[1]["source"]) == "        # self.log('x', 1)\n"
    assert "# lightning-migrate: LM005 manual fix" in "".join(cells[0]["source"])


def changed_lines(before: str, after: str) -> list[str]:
    """The lines ``difflib.ndiff`` marks as removed or added."""
    import difflib

    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:1] in "+-"]


def test_a_fix_in_a_notebook_saved_with_crlf_changes_the_fixed_line_only(tmp_path, capsys):
    """A notebook saved on Windows (CRLF between JSON lines), its cells' sources written with CRLF too: the fix
    changes the one line it fixes, and every line end stays CRLF."""
    path = make(tmp_path / "train.ipynb", IMPORTS, MODEL)
    book = json.loads(path.read_text(encoding="utf-8"))
    for cell in book["cells"]:
        cell["source"] = [line.replace("\n", "\r\n") for line in cell["source"]]
    before = nbformat.writes(nbformat.from_dict(book)).replace("\n", "\r\n")
    path.write_bytes(before.encode("utf-8"))
    assert run(["--fix", path], capsys)[0] == 1
    after = path.read_bytes().decode("utf-8")
    assert changed_lines(before, after) == [
        '-     "    def validation_epoch_end(self, outputs):\\r\\n",',
        '+     "    def on_validation_epoch_end(self):\\r\\n",',
    ]
    assert after.count("\r\n") == before.count("\r\n") and "\n" not in after.replace("\r\n", "")


def test_a_notebook_in_another_layout_keeps_its_key_order(tmp_path, capsys):
    """A layout no usual json.dumps call gives back (here: two-space indentation, keys in the writer's own order,
    a space before each colon): the rewrite keeps the keys' order, the indentation and the spacing, so the diff
    shows the fix only."""
    path = make(tmp_path / "train.ipynb", IMPORTS, MODEL)
    book = json.loads(path.read_text(encoding="utf-8"))
    reordered = {"nbformat": book["nbformat"], "nbformat_minor": book["nbformat_minor"],
                 "metadata": book["metadata"], "cells": book["cells"]}  # fmt: skip
    before = json.dumps(reordered, indent=2, separators=(",", " : ")) + "\n"
    path.write_text(before, encoding="utf-8")
    assert run(["--fix", path], capsys)[0] == 1
    assert changed_lines(before, path.read_text(encoding="utf-8")) == [
        '-         "    def validation_epoch_end(self, outputs):\\n",',
        '+         "    def on_validation_epoch_end(self):\\n",',
    ]


def test_an_added_import_goes_after_the_cell_that_installs_lightning(tmp_path, capsys):
    """A cell that runs ``!pip install lightning`` before importing it: the rewrite's Lightning import goes after
    that import, in that cell, never into an earlier cell that runs before the install."""
    training = CACHING.replace("validation_epoch_end", "training_epoch_end").replace('o["x"]', 'o["loss"]')
    step = "    def training_step(self, batch, batch_idx):\n        return batch.sum()\n\n"
    training = training.replace("    def ", step + "    def ")
    path = make(tmp_path / "train.ipynb", "import torch\nfrom torch import nn", IMPORTS, training)
    assert run(["--fix", "--unsafe-fixes", path], capsys)[0] == 1
    cells = ["".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    assert cells[1] == "import torch\nfrom torch import nn"
    assert cells[2] == IMPORTS.replace("import torch", "import torch\nfrom lightning.pytorch.utilities.memory import "
                                       "recursive_detach")  # fmt: skip


@pytest.mark.parametrize(
    "layout",
    [
        {"indent": 2, "separators": (",", " : ")},
        {"indent": "\t"},
        {"indent": None, "separators": (",", ":")},
        {"indent": None},
        {"indent": 1, "ensure_ascii": True},
    ],
    ids=["indent 2, spaced colon", "tab", "compact", "one line", "ascii escapes"],
)
def test_a_fix_keeps_the_notebooks_json_layout(tmp_path, capsys, layout):
    """Whatever wrote the notebook: the fix changes the fixed line and nothing else, byte for byte (the metadata
    holds a non-ASCII name, kept raw or escaped as it was)."""
    path = make(tmp_path / "train.ipynb", IMPORTS, MODEL)
    book = json.loads(path.read_text(encoding="utf-8"))
    book["metadata"]["authors"] = [{"name": "Zoë"}]
    before = json.dumps(book, **layout)
    path.write_text(before, encoding="utf-8")
    assert run(["--fix", path], capsys)[0] == 1
    old, new = (
        json.dumps(f"    def {hook}:\n")
        for hook in ("validation_epoch_end(self, outputs)", "on_validation_epoch_end(self)")
    )
    assert path.read_text(encoding="utf-8") == before.replace(old, new)


def test_a_cell_keeps_each_lines_own_line_end(tmp_path, capsys):
    """Mixed line ends in a cell (pasted code): a line the fix does not touch keeps its own, in the fixed cell and
    in the others."""
    path = make(tmp_path / "train.ipynb", IMPORTS, MODEL)
    book = json.loads(path.read_text(encoding="utf-8"))
    book["cells"][1]["source"] = ["import lightning.pytorch as pl\r\n", "x = 1\n", "y = 2\r\n"]
    book["cells"][2]["source"][0] = book["cells"][2]["source"][0].replace("\n", "\r\n")
    path.write_text(json.dumps(book, indent=1), encoding="utf-8")
    assert run(["--fix", path], capsys)[0] == 1
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["cells"][1]["source"] == book["cells"][1]["source"]
    fixed = [line.replace("validation_epoch_end(self, outputs)", "on_validation_epoch_end(self)") for line in
             book["cells"][2]["source"]]  # fmt: skip
    assert after["cells"][2]["source"] == fixed


def test_form_feeds_and_line_separators_are_characters_of_a_line(tmp_path, capsys):
    """Python cuts lines at \\n, \\r\\n and \\r only: a form feed or U+2028 inside a cell is part of its line."""
    path = make(tmp_path / "train.ipynb", "# Part one\f\nimport lightning.pytorch as pl", "DOC = 'a\u2028b'\n" + MODEL)
    before = json.loads(path.read_text(encoding="utf-8"))
    code, lines, err = run(["--fix", path], capsys)
    assert code == 1 and "error" not in err
    assert [line.split(": ")[1].split(" ")[0] for line in lines] == ["LM001"]
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["cells"][1] == before["cells"][1]
    assert "on_validation_epoch_end(self)" in "".join(after["cells"][2]["source"])


def test_a_marker_names_a_caller_in_a_notebook_by_cell_and_line(tmp_path, capsys):
    """A notebook's findings are placed as ``cell N``; so is the caller a marker names (not a line of the checker's
    joined source)."""
    path = make(tmp_path / "train.ipynb", IMPORTS, MODEL, "model = LitModel()\nmodel.validation_epoch_end([])")
    run(["--fix", path], capsys)
    cells = ["".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    assert "`validation_epoch_end` is used at cell 3, line 2 of this notebook" in unwrapped(cells[2])


@pytest.mark.parametrize("magic", ["%%time", "%%capture out", "%%timeit -n 1 -r 1"])
def test_a_cell_a_magic_runs_as_python_is_checked_and_fixed_below_its_magic(tmp_path, capsys, magic):
    """``%%time`` and ``%%capture`` run the rest of their cell as Python: its old hook is found and fixed, and the
    magic line is kept as it was; a ``%%bash`` cell holding the same text is still skipped."""
    path = make(tmp_path / "timed.ipynb", IMPORTS, f"{magic}\n{MODEL}", "%%bash\necho def validation_epoch_end")
    code, lines, _ = run([path], capsys)
    assert code == 1 and [line.split(": LM")[0] for line in lines] == [f"{path}:cell 2:6:9"], lines
    run(["--fix", path], capsys)
    cells = ["".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    assert cells[2].startswith(magic + "\nclass LitModel(pl.LightningModule):\n")
    assert "def on_validation_epoch_end(self):" in cells[2] and "def validation_epoch_end" not in cells[2]
    assert cells[3] == "%%bash\necho def validation_epoch_end"


def test_a_cell_magic_after_blank_lines_is_still_the_cells_magic():
    """IPython drops a cell's leading blank lines: a ``%%bash`` cell that starts with one is still skipped whole, a
    ``%%time`` cell still read below its magic."""
    book = notebook.read(
        nbformat.writes(
            nbformat.v4.new_notebook(
                cells=[
                    nbformat.v4.new_code_cell("\n%%bash\necho def validation_epoch_end"),
                    nbformat.v4.new_code_cell("\n\n%%time\nx = 1"),
                ]
            )
        )
    )
    assert [cell.checked for cell in book.cells] == [False, True] and not book.broken
    assert "echo" not in book.source and "x = 1" in book.source.splitlines()


def test_a_notebook_without_hooks_is_checked_cell_by_cell_as_jupyter_runs_it(tmp_path, capsys):
    """Top-level ``await`` and a ``from __future__`` import at the top of a later cell run in Jupyter: no syntax
    error, exit 0."""
    path = make(
        tmp_path / "plain.ipynb", "import asyncio\nawait asyncio.sleep(0)", "from __future__ import annotations"
    )
    code, lines, err = run([path], capsys)
    assert (code, lines) == (0, []) and "0 findings (1 file checked)" in err and "error" not in err
