"""Shapes met in real repositories (the hand-labelled corpus, ``data/corpus/labels.toml``), each written here in
our own words as an input and what the checker must make of it."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from lightning_migrate.checker import check_source
from lightning_migrate.checker.cli import main

from ._util import codes, fix, run, unwrapped, write

# -- parameters with a default: Lightning calls the hook without them, so the hook works as it is ----------------

DEFAULTED = {
    "module epoch end, unused=None": """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_validation_epoch_end(self, unused=None):
                self.log("v", 1.0)
        """,
    "callback epoch end, keyword default": """
        from pytorch_lightning import Callback

        class C(Callback):
            def on_train_epoch_end(self, trainer, pl_module, log_dict=None):
                print(log_dict)
        """,
    "callback epoch end, keyword-only default": """
        from pytorch_lightning import Callback

        class C(Callback):
            def on_test_epoch_end(self, trainer, pl_module, *, verbose=False):
                pass
        """,
    "module batch start, unused=0": """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_train_batch_start(self, batch, batch_idx, unused=0):
                return None
        """,
    "callback batch end, dataloader_idx=0": """
        import pytorch_lightning as pl

        class C(pl.Callback):
            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
                pass
        """,
}


@pytest.mark.parametrize("source", DEFAULTED.values(), ids=DEFAULTED.keys())
def test_a_parameter_with_a_default_is_not_a_finding(source):
    assert codes(source) == []
    assert fix(source) == textwrap.dedent(source)


def test_only_the_parameter_without_a_default_is_dropped():
    source = """
    from pytorch_lightning import Callback

    class C(Callback):
        def on_train_epoch_end(self, trainer, pl_module, outputs, unused=None):
            pass
    """
    assert [code for code, _, _ in codes(source)] == ["LM002"]
    assert "def on_train_epoch_end(self, trainer, pl_module, unused=None):" in fix(source)


# -- the command over small projects -------------------------------------------------------------------------------


MODEL = """
    import lightning.pytorch as pl

    class Model(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            return batch

        def training_epoch_end(self, outputs):
            self.done = True
    """
#: MODEL with the evaluation hook, whose rename is a plain rename (``training_epoch_end`` is renamed with a count
#: of the epoch's batches, test_rename.py)
VALIDATION_MODEL = MODEL.replace("training_epoch_end", "validation_epoch_end")


def test_a_call_in_another_file_makes_the_rename_manual(tmp_path, capsys):
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": MODEL,
            "pkg/loop.py": """
                def finish(trainer):
                    trainer.model.training_epoch_end([])
                """,
        },
    )
    code, lines, _ = run(["--fix", tmp_path / "pkg"], capsys)
    assert code == 1
    fixed = unwrapped((tmp_path / "pkg" / "model.py").read_text())
    assert "def training_epoch_end(self, outputs):" in fixed  # not renamed: loop.py would call nothing
    assert "manual fix, `training_epoch_end` is used at loop.py:3" in fixed  # beside model.py: no project root
    assert "[safe fix" not in lines[0]


def test_a_dropped_parameter_passed_by_keyword_elsewhere_makes_the_drop_manual(tmp_path, capsys):
    write(
        tmp_path,
        {
            "cb.py": """
                from pytorch_lightning import Callback

                class Report(Callback):
                    def on_train_epoch_end(self, trainer, pl_module, outputs):
                        pass
                """,
            "run.py": """
                def report_all(callbacks, trainer, module, logs):
                    for cb in callbacks:
                        getattr(cb, "on_" + "train_epoch_end")(trainer, module, outputs=logs)
                """,
        },
    )
    code, _, _ = run(["--fix", tmp_path], capsys)
    assert code == 1
    fixed = unwrapped((tmp_path / "cb.py").read_text())
    assert "def on_train_epoch_end(self, trainer, pl_module, outputs):" in fixed
    assert "a call passes a dropped parameter by keyword at run.py:4" in fixed


def test_no_caller_anywhere_keeps_the_fix_safe(tmp_path, capsys):
    files = {"pkg/__init__.py": "", "pkg/model.py": VALIDATION_MODEL, "pkg/other.py": "x = 'validation_epoch_ends'\n"}
    write(tmp_path, files)
    code, lines, _ = run(["--fix", tmp_path], capsys)
    assert code == 1 and "[safe fix applied]" in lines[0]
    assert "def on_validation_epoch_end(self):" in (tmp_path / "pkg" / "model.py").read_text()


# -- --diff is a patch that applies ----------------------------------------------------------------------------------


def test_diff_applies_with_git_even_without_a_final_newline(tmp_path, capsys, monkeypatch):
    last_line_hook = textwrap.dedent(VALIDATION_MODEL).rstrip("\n")  # the file ends inside the hook, no newline
    write(tmp_path, {"a.py": last_line_hook, "b.py": MODEL})
    assert not (tmp_path / "a.py").read_bytes().endswith(b"\n")
    monkeypatch.chdir(tmp_path)
    code, lines, _ = run(["--diff", "a.py", "b.py"], capsys)
    assert code == 1
    patch = "\n".join(lines) + "\n"  # standard output: the patch alone
    assert "\\ No newline at end of file" in patch
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "fix.patch").write_text(patch, encoding="utf-8")
    proc = subprocess.run([*git, "apply", "--check", "fix.patch"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr + patch
    subprocess.run([*git, "apply", "fix.patch"], check=True)
    assert (tmp_path / "a.py").read_text().endswith("def on_validation_epoch_end(self):\n        self.done = True")
    assert main(["a.py", "b.py"]) == 0  # applied, nothing left


def test_diff_findings_and_patch_lines_do_not_mix(tmp_path, capsys, monkeypatch):
    """Standard output is the patch alone, in every output format; the findings go to standard error."""
    write(tmp_path, {"a.py": textwrap.dedent(MODEL).rstrip("\n"), "b.py": MODEL})
    monkeypatch.chdir(tmp_path)
    for form in ("text", "json", "github"):
        _, lines, err = run(["--diff", "--output-format", form, "a.py", "b.py"], capsys)
        assert [line for line in lines if line.startswith("---")] == ["--- a/a.py", "--- a/b.py"]
        assert all(line[:1] in " +-@\\" for line in lines), lines
        assert err.count("rules/LM001.html") == 2  # each finding links its rule


def test_diff_of_a_file_whose_name_holds_a_space_applies_with_patch(tmp_path, capsys, monkeypatch):
    """diff and git end such a name with a tab: without it, `patch -p1` looks for `sub/my`."""
    write(tmp_path, {"sub/my model.py": MODEL})
    monkeypatch.chdir(tmp_path)
    _, lines, _ = run(["--diff", "."], capsys)
    assert lines[:2] == ["--- a/sub/my model.py\t", "+++ b/sub/my model.py\t"]
    (tmp_path / "fix.patch").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.run(["patch", "-p1", "-i", "fix.patch"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "def on_train_epoch_end(self):" in (tmp_path / "sub" / "my model.py").read_text(encoding="utf-8")


# -- unresolved bases: a note, never a failure ------------------------------------------------------------------------

PLAIN_TORCH = """
    from .layers import Backbone

    class Classifier(Backbone):
        def training_step(self, batch):
            return batch

        def validation_epoch_end(self, outputs):
            return sum(outputs)
    """


def test_a_possibly_lightning_class_is_not_reported_by_default_and_never_fails(tmp_path, capsys):
    write(tmp_path, {"m.py": PLAIN_TORCH})
    code, lines, err = run([tmp_path], capsys)
    assert (code, lines) == (0, [])
    code, lines, err = run(["--notes", tmp_path], capsys)
    assert code == 0
    assert len(lines) == 1 and "note: possible (base class not resolved)" in lines[0]
    assert "0 findings" in err


# -- a run on single files resolves across the project root -----------------------------------------------------------


def test_a_single_file_sees_bases_and_callers_across_its_project(tmp_path, capsys, monkeypatch):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'x'\n",
            "src/app/__init__.py": "",
            "src/app/base.py": "import pytorch_lightning as pl\n\nclass Base(pl.LightningModule):\n    pass\n",
            "src/app/models/child.py": """
                from app.base import Base

                class Child(Base):
                    def test_epoch_end(self, outputs):
                        pass
                """,
            "scripts/eval.py": "def run(m):\n    m.test_epoch_end([])\n",
        },
    )
    monkeypatch.chdir(tmp_path / "src" / "app" / "models")
    code, lines, _ = run(["child.py"], capsys)  # what pre-commit does: file names only
    assert code == 1
    assert [line.split(" ")[:2] for line in lines] == [["child.py:5:9:", "LM001"]]
    assert "[safe fix]" not in lines[0]  # scripts/eval.py calls it
    assert "possible" not in lines[0]


# -- smaller items -------------------------------------------------------------------------------------------------


def test_a_file_that_does_not_parse_is_an_error_even_without_hook_like_text(tmp_path, capsys):
    write(tmp_path, {"bad.py": "def f(:\n    pass\n", "ok.py": MODEL})
    code, lines, err = run([tmp_path], capsys)
    assert code == 1  # ok.py's finding; bad.py is counted apart
    assert f"{tmp_path}/bad.py:1:" in err and "syntax error" in err
    assert len(lines) == 1  # ok.py still checked
    code, lines, err = run([tmp_path / "bad.py"], capsys)
    assert code == 2 and lines == []  # nothing found, a file not read: an error run
    assert err.strip().endswith("0 findings (0 files checked); 1 file could not be read (not checked)")
    code, lines, err = run([tmp_path / "bad.py", tmp_path / "ok.py"], capsys)
    assert code == 1 and len(lines) == 1  # the summary counts each file once: read, or not read
    assert "1 finding in 1 file (1 file checked);" in err
    assert err.strip().endswith("; 1 file could not be read (not checked)")


def test_staticmethod_hooks_are_counted_without_self():
    source = """
    from pytorch_lightning import Callback

    class C(Callback):
        @staticmethod
        def on_validation_epoch_end(trainer, pl_module, outputs):
            pass

        @staticmethod
        def on_train_epoch_end(trainer, pl_module):
            pass
    """
    assert [(code, line) for code, line, _ in codes(source)] == [("LM002", 6)]


def test_an_attribute_with_the_parameter_name_is_not_a_read():
    source = """
    import lightning.pytorch as pl

    class M(pl.LightningModule):
        def validation_epoch_end(self, outputs):
            self.outputs = self.eval()
    """
    assert "def on_validation_epoch_end(self):" in fix(source)


def test_the_message_quotes_the_users_own_signature():
    source = """
    import lightning.pytorch as pl

    class M(pl.LightningModule):
        def validation_epoch_end(self, outs: list) -> None:
            pass
    """
    [finding] = check_source(textwrap.dedent(source).encode()).findings
    assert finding.message.startswith("`validation_epoch_end(self, outs: list)`")


# -- what linter users expect --------------------------------------------------------------------------------------


def test_noqa_on_the_def_line_silences_the_rule(tmp_path, capsys):
    source = MODEL.replace(
        "def training_epoch_end(self, outputs):", "def training_epoch_end(self, outputs):  # noqa: LM001"
    )
    write(tmp_path, {"m.py": source, "n.py": MODEL.replace("outputs):", "outputs):  # noqa: LM005")})
    code, lines, _ = run(["--fix", tmp_path], capsys)
    assert code == 1
    assert [line.split(":")[0] for line in lines] == [f"{tmp_path}/n.py"]
    assert (tmp_path / "m.py").read_text() == textwrap.dedent(source)


def test_ignore_and_select(tmp_path, capsys):
    write(tmp_path, {"m.py": MODEL})
    assert run(["--ignore", "LM001", tmp_path], capsys)[0] == 0
    assert run(["--select", "LM001,LM002", "--ignore", "LM002", tmp_path], capsys)[0] == 1
    code, _, err = run(["--ignore", "LM999", tmp_path], capsys)
    assert code == 2 and "LM999" in err


def test_json_output(tmp_path, capsys):
    write(tmp_path, {"m.py": MODEL})
    code, lines, _ = run(["--output-format", "json", tmp_path], capsys)
    assert code == 1
    [record] = json.loads("\n".join(lines))
    assert record["code"] == "LM001" and record["line"] == 8 and record["column"] == 9
    assert record["filename"] == f"{tmp_path}/m.py" and record["fix"] == "proven" and record["note"] is False
    assert record["url"].endswith("checker/rules/LM001.html")


def test_github_output(tmp_path, capsys):
    write(tmp_path, {"m.py": MODEL})
    code, lines, _ = run(["--output-format", "github", tmp_path], capsys)
    assert code == 1
    assert lines[0].startswith(f"::error file={tmp_path}/m.py,line=8,col=9,title=LM001::`training_epoch_end(")


def test_github_output_annotates_a_file_that_cannot_be_read(tmp_path, capsys):
    """A file the run skipped is an annotation too, not only a line on standard error that a workflow hides."""
    write(tmp_path, {"m.py": MODEL, "broken.py": "def f(:\n"})
    code, lines, err = run(["--output-format", "github", tmp_path], capsys)
    assert code == 1
    [annotation] = [line for line in lines if line.startswith("::error title=lightning-migrate::")]
    assert f"{tmp_path}/broken.py" in annotation and "syntax error" in annotation
    assert f"error: {tmp_path}/broken.py" in err


def test_summary_counts_files_with_findings(tmp_path, capsys):
    write(tmp_path, {"a.py": MODEL, "b.py": MODEL, "c.py": "x = 1\n"})
    _, _, err = run([tmp_path], capsys)
    assert "2 findings in 2 files (3 files checked)" in err


# -- star re-exports -------------------------------------------------------------------------------------------------


def test_a_base_behind_a_star_re_export_is_resolved(tmp_path, capsys):
    write(
        tmp_path,
        {
            "lib/__init__.py": "",
            "lib/observables/__init__.py": "from .observable import *\nfrom .others import *\n",
            "lib/observables/others.py": "class Unrelated:\n    pass\n",
            "lib/observables/observable.py": """
                from pytorch_lightning.callbacks import Callback

                class Observable(Callback):
                    pass
                """,
            "lib/metrics.py": """
                from lib.observables import Observable

                class Accuracy(Observable):
                    def on_train_epoch_end(self, trainer, pl_module, outputs):
                        pass
                """,
            "lib/star_here.py": """
                from pytorch_lightning.callbacks import *

                class Timer(Callback):
                    def on_batch_end(self, trainer, pl_module):
                        pass
                """,
        },
    )
    code, lines, _ = run([tmp_path], capsys)
    assert code == 1
    assert [line.split(" ")[:2] for line in lines] == [
        [f"{tmp_path}/lib/metrics.py:5:9:", "LM002"],
        [f"{tmp_path}/lib/star_here.py:5:9:", "LM006"],
    ]
    assert not any("possible" in line for line in lines)


# -- names Lightning never calls -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "nearest"),
    [
        (
            "import lightning.pytorch as pl\n\nclass M(pl.LightningModule):\n"
            "    def on_training_epoch_end(self):\n        pass\n",
            "on_train_epoch_end",
        ),
        (
            "from pytorch_lightning import Callback\n\nclass C(Callback):\n"
            "    def on_val_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n        pass\n",
            "on_validation_batch_end",
        ),
    ],
)
def test_a_misspelt_hook_is_reported_with_the_nearest_real_name(source, nearest):
    [finding] = check_source(source.encode()).findings
    assert finding.code == "LM007" and finding.line == 4
    assert finding.message.endswith(f"did you mean `{nearest}`?")


def test_a_hook_like_method_the_project_calls_is_not_reported(tmp_path, capsys):
    write(
        tmp_path,
        {
            "m.py": "import lightning.pytorch as pl\n\nclass M(pl.LightningModule):\n"
            "    def on_custom_epoch_end(self):\n        pass\n",
            "n.py": "def f(m):\n    m.on_custom_epoch_end()\n",
        },
    )
    assert run([tmp_path], capsys)[:2] == (0, [])


# -- one setting for the docs address ------------------------------------------------------------------------------


def test_links_follow_the_one_docs_setting(monkeypatch):
    import tomllib

    from lightning_migrate.checker.core import DOCS_URL_VARIABLE, docs_url

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    monkeypatch.delenv(DOCS_URL_VARIABLE, raising=False)
    assert docs_url() == pyproject["project"]["urls"]["Documentation"]
    monkeypatch.setenv(DOCS_URL_VARIABLE, "https://example.org/guide")
    [finding] = check_source(textwrap.dedent(MODEL).encode(), fix=True).findings
    assert finding.url == "https://example.org/guide/checker/rules/LM001.html"
    marked = fix(
        MODEL.replace("self.done = True", "print(outputs)").replace("(self, outputs)", "(self, outputs, *rest)")
    )
    assert "https://example.org/guide/checker/rules/LM001.html" in marked


def test_a_marker_names_another_file_from_the_project_root_never_by_absolute_path(tmp_path, capsys, monkeypatch):
    """A marker is written into the user's file and read on other machines: it names the file of the caller relative
    to the project's root (where ``pyproject.toml`` is) wherever the command runs from -- here a folder outside the
    project, given the project's absolute path."""
    project = write(
        tmp_path / "proj",
        {
            "pyproject.toml": "",
            "src/pkg/__init__.py": "",
            "src/pkg/model.py": MODEL,
            "src/pkg/train/__init__.py": "",
            "src/pkg/train/loop.py": "def f(m):\n    m.training_epoch_end([])\n",
        },
    )
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, lines, _ = run(["--fix", project], capsys)
    assert code == 1
    fixed = (project / "src/pkg/model.py").read_text()
    assert "`training_epoch_end` is used at src/pkg/train/loop.py:2: change the callers too" in unwrapped(fixed)
    assert str(tmp_path) not in fixed
    [line] = lines
    assert line.startswith(f"{project}/src/pkg/model.py:8:9: LM001 ")  # the console names the file as it was given


def test_without_a_project_root_a_marker_names_another_file_from_the_marked_files_folder(tmp_path, capsys):
    """No ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git`` above the files: the path in the marker starts
    at the marked file's own folder (``../``), which a reader of that file can follow."""
    write(
        tmp_path,
        {
            "model/__init__.py": "",
            "model/lit.py": MODEL,
            "loop/__init__.py": "",
            "loop/run.py": "def f(m):\n    m.training_epoch_end([])\n",
        },
    )
    assert run(["--fix", tmp_path], capsys)[0] == 1
    fixed = (tmp_path / "model/lit.py").read_text()
    assert "`training_epoch_end` is used at ../loop/run.py:2: change the callers too" in unwrapped(fixed)
    assert str(tmp_path) not in fixed


# -- a rename must not change which method runs ---------------------------------------------------------------------


def test_a_rename_onto_a_name_a_base_class_defines_is_manual(tmp_path, capsys):
    write(
        tmp_path,
        {
            "base.py": """
                import lightning.pytorch as pl

                class Base(pl.LightningModule):
                    def on_validation_epoch_end(self):
                        self.log("base", 1.0)  # would stop running if the child's method took this name
                """,
            "child.py": """
                from base import Base

                class Child(Base):
                    def validation_epoch_end(self, outputs):
                        self.done = True
                """,
        },
    )
    code, lines, _ = run(["--fix", tmp_path], capsys)
    assert code == 1
    fixed = unwrapped((tmp_path / "child.py").read_text())
    assert "def validation_epoch_end(self, outputs):" in fixed
    assert "base class `Base` defines `on_validation_epoch_end`: merge by hand" in fixed


def test_a_rename_onto_a_name_a_subclass_defines_is_manual(tmp_path, capsys):
    write(
        tmp_path,
        {
            "base.py": """
                from pytorch_lightning import Callback

                class Counter(Callback):
                    def on_batch_end(self, trainer, pl_module):
                        self.n = getattr(self, "n", 0) + 1
                """,
            "special.py": """
                from base import Counter

                class Special(Counter):
                    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                        print(batch_idx)  # would replace the counting once the base's hook is renamed
                """,
        },
    )
    code, _, _ = run(["--fix", tmp_path], capsys)
    assert code == 1
    fixed = unwrapped((tmp_path / "base.py").read_text())
    assert "def on_batch_end(self, trainer, pl_module):" in fixed
    assert "a subclass in" in fixed and "special.py defines `on_train_batch_end`: merge by hand" in fixed


def test_a_hook_like_method_called_through_a_built_name_is_not_reported():
    source = """
    import lightning.pytorch as pl

    class M(pl.LightningModule):
        def val_epoch_end(self):
            pass

        def on_validation_epoch_end(self):
            getattr(self, STAGE + "_epoch_end")()
    """
    assert codes(source) == []
    assert [c for c, _, _ in codes(source.replace('STAGE + "_epoch_end"', '"other"'))] == ["LM007"]
    assert codes(source.replace('STAGE + "_epoch_end"', 'f"{STAGE}_epoch_end"')) == []  # an f-string builds it too


@pytest.mark.parametrize(
    ("base", "why"),
    [
        ("ModelCheckpoint", "Lightning's `ModelCheckpoint` defines `on_train_batch_end`"),
        ("SomeRetiredCallback", "Lightning's `SomeRetiredCallback` is not among the recorded classes"),
    ],
)
def test_a_rename_onto_a_hook_a_lightning_base_defines_is_manual(base, why):
    source = f"""
    from pytorch_lightning.callbacks import {base}

    class Saver({base}):
        def on_batch_end(self, trainer, pl_module):
            self.seen = True
    """
    fixed = fix(source)
    assert "def on_batch_end(self, trainer, pl_module):" in fixed  # the checkpointing hook is not replaced
    assert f"{why}" in fixed


def test_a_rename_under_plain_callback_is_not_refused():
    source = """
    from pytorch_lightning.callbacks import Callback

    class Counter(Callback):
        def on_batch_end(self, trainer, pl_module):
            self.seen = True
    """
    renamed = "def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):"
    assert renamed in fix(source, unsafe_fixes=True)


def test_a_method_of_the_lightning_callback_it_derives_from_is_not_unknown():
    """``BasePredictionWriter.write_on_epoch_end`` is called by Lightning for its subclasses: not LM007. The same
    name on a plain ``Callback`` is never called."""
    writer = textwrap.dedent(
        """\
        from lightning.pytorch.callbacks import BasePredictionWriter


        class Writer(BasePredictionWriter):
            def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
                self.kept = predictions
        """
    )
    assert codes(writer) == []
    plain = writer.replace("BasePredictionWriter", "Callback")
    assert [c for c, _, _ in codes(plain)] == ["LM007"]


@pytest.mark.parametrize("tool", ["patch", "git"])
def test_diff_applies_to_a_name_with_a_tab_and_to_a_latin_1_file(tmp_path, capsysbinary, monkeypatch, tool):
    """The patch is the files' own bytes (a Latin-1 file's `é` stays one byte) and a name holding a tab is quoted
    as git quotes it: both tools apply it."""
    latin = "# -*- coding: latin-1 -*-\n" + textwrap.dedent(VALIDATION_MODEL).replace(
        "self.done = True", "self.done = 1  # \u00e9t\u00e9"
    )
    (tmp_path / "lat.py").write_bytes(latin.encode("latin-1"))
    write(tmp_path, {"tab\there.py": MODEL})
    monkeypatch.chdir(tmp_path)
    assert main(["--diff", "lat.py", "tab\there.py"]) == 1
    patch = capsysbinary.readouterr().out
    assert b'--- "a/tab\\there.py"\n' in patch and b"# \xe9t\xe9\n" in patch
    (tmp_path / "fix.patch").write_bytes(patch)
    if tool == "git":
        subprocess.run(["git", "init", "-q"], check=True)
        command = ["git", "apply", "fix.patch"]
    else:
        command = ["patch", "-p1", "-i", "fix.patch"]
    proc = subprocess.run(command, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert b"def on_train_epoch_end(self):" in (tmp_path / "tab\there.py").read_bytes()
    assert (tmp_path / "lat.py").read_bytes() == latin.replace(
        "validation_epoch_end(self, outputs)", "on_validation_epoch_end(self)"
    ).encode("latin-1")
