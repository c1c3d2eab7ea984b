"""Defects found on real repositories: fixes that changed behaviour, hooks the checker missed, markers that gave
the wrong reason. Each test failed on the checker before its fix."""

from __future__ import annotations

import re
import textwrap

import libcst as cst
import pytest

from lightning_migrate.checker import check_source, proven

from ._util import codes, fix, run, unwrapped, write


def without_markers(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if "# lightning-migrate:" not in line)


# -- a fix called safe never makes code run that did not run before -------------------------------------------------

DEAD_CALLBACK = """
from lightning.pytorch import LightningModule
from lightning.pytorch.callbacks import Callback


class Model(LightningModule):
    def training_step(self, batch, batch_idx):
        return self(batch).sum()


class ValidateBest(Callback):
    def on_batch_end(self, trainer, pl_module):
        trainer.validate(ckpt_path="best")
"""


def test_renaming_a_dead_callback_hook_is_not_a_safe_fix():
    """Lightning >= 1.8 never calls ``on_batch_end``: renaming it to ``on_train_batch_end`` brings the body to life.
    Never **safe**: **proven** because a row of the scenario matrix runs the rename and finds the renamed hook called
    where the last 1.x release that ran the old one called it."""
    [finding] = check_source(DEAD_CALLBACK.encode()).findings
    assert (finding.code, finding.tier, finding.fix.shape) == ("LM006", "proven", "callback-on-batch-end/rename")
    assert proven.proving_rows("callback-on-batch-end/rename") == ["rewrite_callback_on_batch_start_end"]
    assert "def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):" in fix(DEAD_CALLBACK)


def test_the_revival_no_row_proves_is_an_opt_in_rewrite(monkeypatch):
    monkeypatch.setattr(proven, "shapes", lambda: frozenset())
    [finding] = check_source(DEAD_CALLBACK.encode()).findings
    assert (finding.code, finding.tier) == ("LM006", "unsafe")
    fixed = fix(DEAD_CALLBACK)
    assert "def on_batch_end(self, trainer, pl_module):" in fixed
    assert "# lightning-migrate: LM006 unsafe fix, " in fixed
    assert "renamed to `on_train_batch_end`, a shape no row of the scenario matrix proves" in fixed
    fixed = fix(DEAD_CALLBACK, unsafe_fixes=True)
    assert "def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):" in fixed
    assert "on_batch_end" not in fixed


def test_a_rename_to_a_hook_the_record_does_not_pair_it_with_is_not_proven(monkeypatch):
    """The rename is proven only where the last 1.x release that ran ``on_batch_end`` ran it beside the new hook
    alone (``stageless-hook-calls``): a record pairing it with other hooks too proves nothing about the rename."""
    recorded = proven.stageless()
    hooks = {**recorded["hooks"]["Callback"]["on_batch_end"], "hooks": ["on_train_batch_end", "on_test_batch_end"]}
    changed = {**recorded, "hooks": {"Callback": {**recorded["hooks"]["Callback"], "on_batch_end": hooks}}}
    monkeypatch.setattr(proven, "stageless", lambda: changed)
    [finding] = check_source(DEAD_CALLBACK.encode()).findings
    assert finding.tier == "unsafe"


ASYNC = {
    "LM001 rename": """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            async def training_epoch_end(self, outputs):
                self.done = True
        """,
    "LM002 drop": """
        from pytorch_lightning import Callback

        class C(Callback):
            async def on_train_epoch_end(self, trainer, pl_module, outputs):
                self.done = True
        """,
    "LM003 drop": """
        import pytorch_lightning as pl

        class M(pl.LightningModule):
            async def on_train_batch_start(self, batch, batch_idx, dataloader_idx):
                self.done = True
        """,
}


@pytest.mark.parametrize("source", ASYNC.values(), ids=ASYNC.keys())
def test_an_async_hook_gets_no_automatic_fix(source):
    # Lightning calls a hook without awaiting it: an `async def` body never runs, so making the name or the
    # signature right would turn an error into a hook that silently does nothing.
    [finding] = check_source(textwrap.dedent(source).encode()).findings
    assert finding.tier == "manual"
    fixed = fix(source, unsafe_fixes=True)
    assert fixed.count("async def ") == 1
    assert "manual fix, `async def`: a hook written as a coroutine function" in fixed
    assert without_markers(fixed) == textwrap.dedent(source)  # nothing else changed


# -- misses ---------------------------------------------------------------------------------------------------------


def test_a_hook_on_a_mixin_in_another_file_is_reported_where_it_is_defined(tmp_path, capsys):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "pkg/__init__.py": "",
            "pkg/mixins.py": """
                class LoggingMixin:
                    def training_epoch_end(self, outputs):
                        self.log("n", float(len(outputs)))
                """,
            "pkg/model.py": """
                import lightning.pytorch as pl

                from pkg.mixins import LoggingMixin


                class Model(LoggingMixin, pl.LightningModule):
                    def training_step(self, batch, batch_idx):
                        return batch.sum()
                """,
        },
    )
    code, lines, _ = run([tmp_path / "pkg" / "mixins.py"], capsys)
    assert code == 1
    [line] = lines
    assert line.startswith(f"{tmp_path / 'pkg' / 'mixins.py'}:3:9: LM001 ")
    assert "mixed into LightningModule `Model`" in line


def test_a_hook_assigned_in_the_class_body_is_reported():
    source = """
    import lightning.pytorch as pl


    def log_epoch(self, outputs):
        self.log("n", float(len(outputs)))


    class M(pl.LightningModule):
        training_epoch_end = log_epoch
    """
    assert codes(source) == [("LM001", 10, True)]
    fixed = fix(source, unsafe_fixes=True)
    assert "    # lightning-migrate: LM001 manual fix, assigned in the class body" in fixed
    assert fix(fixed) == fixed


def test_a_subclass_of_any_lightning_demo_module_is_a_module():
    # the demo classes come from the names recorded from the installed Lightning, not from a list typed by hand
    for base in ("LightningTransformer", "BoringModel", "DemoModel"):
        source = f"""
        from lightning.pytorch.demos import {base}

        class M({base}):
            def validation_epoch_end(self, outputs):
                pass
        """
        assert codes(source) == [("LM001", 5, True)], base


def test_a_misspelt_hook_the_project_also_calls_is_reported(tmp_path, capsys):
    write(
        tmp_path,
        {
            "model.py": """
                import lightning.pytorch as pl

                class M(pl.LightningModule):
                    def predict_epoch_end(self, results):
                        self.results = results

                    def on_validation_epoch_end(self):
                        self.predict_epoch_end(results=None)
                """,
        },
    )
    code, lines, _ = run([tmp_path], capsys)
    assert code == 1
    [line] = lines
    assert ":5:9: LM007 " in line and "did you mean `on_predict_epoch_end`?" in line
    assert "is not among the LightningModule hooks recorded from Lightning " in line
    assert "; the project calls it (line 9 of this file)" in line


def test_a_misspelt_hook_is_reported_when_another_file_holds_its_name_as_a_string(tmp_path, capsys):
    write(
        tmp_path,
        {
            "model.py": """
                import lightning.pytorch as pl

                class M(pl.LightningModule):
                    def training_batch_end(self, outputs, batch, batch_idx):
                        pass
                """,
            "table.py": 'RENAMED = {"training_batch_end": "on_train_batch_end"}\n',
        },
    )
    code, lines, _ = run([tmp_path], capsys)
    assert code == 1
    [line] = lines
    assert "LM007" in line and "did you mean `on_train_batch_end`?" in line


# -- markers that gave the wrong reason: a dict key, a keyword to another call, torch.autograd.grad(outputs=...) ----


def test_a_dict_key_or_a_keyword_to_another_method_is_not_a_caller(tmp_path, capsys):
    write(
        tmp_path,
        {
            "observer.py": """
                import pytorch_lightning as pl

                class Observer(pl.Callback):
                    def __init__(self):
                        self.counts = {"on_train_batch_end": 0}

                    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx):
                        self.counts["on_train_batch_end"] += 1
                        self.per_layer(trainer, batch_idx=batch_idx)
                """,
            "layers.py": """
                class Layers:
                    def per_layer(self, trainer, batch_idx, dataloader_idx=0):
                        return self.chan(trainer=trainer, dataloader_idx=dataloader_idx)
                """,
        },
    )
    code, _, _ = run(["--fix", tmp_path], capsys)
    assert code == 1
    fixed = (tmp_path / "observer.py").read_text()
    assert "lightning-migrate:" not in fixed
    assert "def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):" in fixed


def test_torch_autograd_grad_outputs_is_not_a_call_passing_outputs():
    source = """
    import torch
    from pytorch_lightning import Callback

    class GradNorm(Callback):
        def on_train_epoch_end(self, trainer, pl_module, outputs):
            x = torch.ones(1, requires_grad=True)
            (g,) = torch.autograd.grad(outputs=(x * 2).sum(), inputs=x)
            self.norm = float(g)
    """
    fixed = fix(source)
    assert "def on_train_epoch_end(self, trainer, pl_module):" in fixed
    assert "lightning-migrate:" not in fixed


def test_a_keyword_passed_through_a_built_name_still_blocks_the_drop(tmp_path, capsys):
    # `getattr(cb, name)(..., log_dict=...)` may call the hook: the dropped parameter would break it
    write(
        tmp_path,
        {
            "cb.py": """
                from pytorch_lightning import Callback

                class Report(Callback):
                    def on_train_epoch_end(self, trainer, pl_module, log_dict):
                        pass
                """,
            "run.py": """
                def report_all(callbacks, trainer, module, logs, name):
                    for cb in callbacks:
                        getattr(cb, name)(trainer, module, log_dict=logs)
                """,
        },
    )
    run(["--fix", tmp_path], capsys)
    assert "def on_train_epoch_end(self, trainer, pl_module, log_dict):" in (tmp_path / "cb.py").read_text()


# -- a fix never corrupts a file ------------------------------------------------------------------------------------

FORM_FEED = (
    b"import lightning.pytorch as pl\n\x0c\nclass Other: pass\nclass M(pl.LightningModule):\n"
    b'    def validation_epoch_end(self, outputs):\n        self.log("epoch", 1.0)\n\n\nx = 1\n'
)
LINE_SEPARATOR = (
    'import lightning.pytorch as pl\n\n\ndef f():\n    """a\u2028b"""\n\n\n@staticmethod\ndef g(): pass\n'
    "class Empty: pass\nclass M(pl.LightningModule):\n"
    '    def validation_epoch_end(self, outputs):\n        self.log("x", 1)'
).encode()


@pytest.mark.parametrize("source", [FORM_FEED, LINE_SEPARATOR], ids=["form feed", "U+2028 in a docstring"])
def test_characters_str_splitlines_cuts_at_do_not_shift_the_fix(source):
    # Python counts only \n, \r\n and \r as line ends; str.splitlines also cuts at \x0c, \x1c-\x1e, \x85, U+2028
    result = check_source(source, fix=True)
    assert result.error is None
    expected = source.replace(b"def validation_epoch_end(self, outputs):", b"def on_validation_epoch_end(self):")
    assert result.new_source == expected


def test_a_rewrite_that_would_change_other_code_is_refused(tmp_path, capsys, monkeypatch):
    # the last check does not trust the splice: with the old line splitting, the file is left as it was
    from lightning_migrate.checker import core

    monkeypatch.setattr(core, "split_lines", lambda text: text.splitlines(keepends=True))
    result = check_source(FORM_FEED, fix=True)
    assert result.new_source is None
    assert result.error == (
        "fix refused, file left unchanged: the rewrite would change code it does not fix: `class Other: pass`"
    )
    path = tmp_path / "ff.py"
    path.write_bytes(FORM_FEED)
    code, lines, err = run(["--fix", path], capsys)
    assert path.read_bytes() == FORM_FEED
    assert code == 1  # the finding is still a finding; the refused fix is counted apart
    assert f"error: {path}: fix refused, file left unchanged: " in err
    assert err.strip().splitlines()[-1].endswith("; changed 0 files; 1 other error")
    assert len(lines) == 1 and ": LM001 " in lines[0]  # the finding is still reported


# -- bad input is an error naming the file, never a traceback ----------------------------------------------------

ONE_LINE_DEFS = {
    "the old hook": (
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx): return batch.sum()
            def training_epoch_end(self, outputs): print(outputs)  # kept
        """,
        "        self.training_step_outputs.clear()\n        print(outputs)  # kept\n",
    ),
    "__init__": (
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def __init__(self): super().__init__(); self.a = 1
            def validation_epoch_end(self, outputs):
                print(outputs)
        """,
        "    def __init__(self):\n        super().__init__(); self.a = 1\n        self.validation_step_outputs = ",
    ),
    "the batch-end hook": (
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0): print(1)
            def validation_epoch_end(self, outputs):
                print(outputs)
        """,
        "            self.validation_step_outputs[dataloader_idx].append(outputs)\n        print(1)\n",
    ),
    "the epoch-start hook": (
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def on_validation_epoch_start(self): print(1)
            def validation_epoch_end(self, outputs):
                print(outputs)
        """,
        "        self.validation_step_outputs.clear()  # nothing left over from a run that stopped half-way\n"
        "        print(1)\n",
    ),
}


@pytest.mark.parametrize(("source", "expected"), ONE_LINE_DEFS.values(), ids=ONE_LINE_DEFS.keys())
def test_a_one_line_def_gets_the_caching_rewrite(source, expected):
    # a one-line body becomes an indented block; the cache is created after `super().__init__()`
    fixed = fix(source, unsafe_fixes=True)
    assert expected in fixed
    assert "lightning-migrate:" not in fixed


def test_a_file_too_deeply_nested_to_parse_is_an_error_and_other_files_are_checked(tmp_path, capsys):
    sum_of_ones = " + ".join(["1"] * 3000)  # the parser takes it; ast runs out of stack
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "deep.py": f"# training_epoch_end\nX = {sum_of_ones}\n",
            "m.py": """
                import lightning.pytorch as pl

                class M(pl.LightningModule):
                    def training_epoch_end(self, outputs):
                        self.log("x", 1.0)
                """,
        },
    )
    code, lines, err = run(["--diff", tmp_path / "m.py"], capsys)
    assert code == 1 and err.count("error:") == 0
    # the deep file mentions the hook's name and cannot be searched: the rename is not safe
    assert "deep.py mentions `training_epoch_end` but is too deeply nested to parse: change the callers too" in (
        unwrapped("\n".join(line[1:] for line in lines if line.startswith("+")))  # the marker the diff adds
    )
    code, lines, err = run([tmp_path], capsys)
    assert code == 1  # m.py's finding; deep.py is counted apart
    assert err.strip().splitlines()[-1].endswith("; 1 file could not be read (not checked)")
    assert f"error: {tmp_path / 'deep.py'}: file too deeply nested to parse, file skipped" in err
    assert [line.split(":")[0] for line in lines] == [str(tmp_path / "m.py")]


# -- a safe fix never replaces, hides or wakes up code ------------------------------------------------------------

BOUND_ELSEWHERE = {  # the binding, and its line in the source below
    "assignment": ("    on_train_epoch_end = shared\n", 12),
    "annotated assignment": ("    on_train_epoch_end: Callable = shared\n", 12),
    "def in an if": (
        "    if sys.version_info >= (3, 0):\n        def on_train_epoch_end(self):\n            pass\n",
        13,
    ),
    "import in a try": (
        "    try:\n        from hooks import on_train_epoch_end\n    except ImportError:\n        pass\n",
        13,
    ),
}


@pytest.mark.parametrize(("binding", "line"), BOUND_ELSEWHERE.values(), ids=BOUND_ELSEWHERE.keys())
def test_a_rename_onto_a_name_the_class_binds_otherwise_is_manual(binding, line):
    source = (
        "import sys\nfrom typing import Callable\n\nimport lightning.pytorch as pl\n\n\n"
        "def shared(self):\n    pass\n\n\n"
        f"class M(pl.LightningModule):\n{binding}\n    def training_epoch_end(self, outputs):\n"
        '        self.log("epoch", 1.0)\n'
    )
    [finding] = check_source(source.encode()).findings
    assert finding.tier == "manual"
    assert f"(the class already binds `on_train_epoch_end` at line {line}: merge by hand)" in finding.message
    assert without_markers(fix(source, unsafe_fixes=True)) == source


@pytest.mark.parametrize(
    ("binding", "hook"),
    [
        ("on_validation_epoch_start = start", "on_validation_epoch_start"),
        ("on_validation_batch_end = lambda self, *a: None", "on_validation_batch_end"),
    ],
)
def test_the_caching_rewrite_never_replaces_a_hook_bound_by_assignment(binding, hook):
    source = f"""
        import lightning.pytorch as pl

        def start(self):
            pass

        class M(pl.LightningModule):
            {binding}

            def validation_epoch_end(self, outputs):
                print(outputs)
        """
    fixed = fix(source, unsafe_fixes=True)
    assert f"the class binds `{hook}` at line 8 other than with a `def`: merge by hand" in fixed
    assert without_markers(fixed) == textwrap.dedent(source)


def test_a_callbacks_caching_rewrite_never_replaces_a_batch_hook_bound_by_assignment():
    source = """
        from lightning.pytorch import Callback

        class C(Callback):
            on_train_batch_end = lambda self, *a: None

            def on_train_epoch_end(self, trainer, pl_module, outputs):
                print(outputs)
        """
    fixed = fix(source, unsafe_fixes=True)
    assert without_markers(fixed) == textwrap.dedent(source)
    assert "# lightning-migrate: LM002 manual fix" in fixed


def test_a_mixins_hook_is_not_renamed_safely(tmp_path, capsys):
    # Model(pl.LightningModule, LogMixin): Lightning's own on_train_epoch_end comes first in the MRO, so a
    # renamed mixin hook would never run (before the fix, fit raised)
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "pkg/__init__.py": "",
            "pkg/mixins.py": """
                class LogMixin:
                    def training_epoch_end(self, outputs):
                        print("epoch")
                """,
            "pkg/model.py": """
                import lightning.pytorch as pl

                from pkg.mixins import LogMixin


                class Model(pl.LightningModule, LogMixin):
                    def training_step(self, batch, batch_idx):
                        return batch.sum()
                """,
        },
    )
    before = (tmp_path / "pkg" / "mixins.py").read_text()
    code, lines, _ = run(["--fix", tmp_path / "pkg" / "mixins.py"], capsys)
    after = unwrapped((tmp_path / "pkg" / "mixins.py").read_text())
    assert code == 1
    assert without_markers(after) == before
    assert "LM001 manual fix, a mixin of `Model`: which hook of that name `Model` has depends on the mixin's" in after


def test_a_rename_in_a_class_with_an_unresolved_base_is_manual():
    source = """
        import lightning.pytorch as pl
        from somelib import EMAMixin

        class M(EMAMixin, pl.LightningModule):
            def training_epoch_end(self, outputs):
                self.log("x", 1.0)
        """
    [finding] = check_source(textwrap.dedent(source).encode()).findings
    assert finding.tier == "manual"
    fixed = fix(source)
    assert "base `EMAMixin` is not resolved; it may define `on_train_epoch_end`: merge by hand" in fixed
    assert without_markers(fixed) == textwrap.dedent(source)


NEVER_PASSED = {
    "callback validation": "from lightning.pytorch import Callback\n\nclass G(Callback):\n"
    "    def on_validation_epoch_end(self, trainer, pl_module, outputs):\n        trainer.should_stop = True\n",
    "module validation": "import lightning.pytorch as pl\n\nclass G(pl.LightningModule):\n"
    "    def on_validation_epoch_end(self, outputs):\n        self.trainer.should_stop = True\n",
    "another name on the train hook": "from lightning.pytorch import Callback\n\nclass G(Callback):\n"
    "    def on_train_epoch_end(self, trainer, pl_module, logs):\n        trainer.should_stop = True\n",
}


@pytest.mark.parametrize("source", NEVER_PASSED.values(), ids=NEVER_PASSED.keys())
def test_dropping_a_parameter_no_release_passed_is_manual(source):
    # every release raised TypeError calling these: the body never ran, and dropping the parameter would run it
    [finding] = check_source(source.encode()).findings
    assert (finding.code, finding.tier) == ("LM002", "manual")
    fixed = fix(source, unsafe_fixes=True)
    assert "the old signature of this hook lacks these parameters: dropping them makes its body run where it did " in (
        fixed
    )
    assert without_markers(fixed) == source


def test_dropping_the_outputs_a_release_passed_stays_safe():
    source = (
        "from lightning.pytorch import Callback\n\nclass G(Callback):\n"
        "    def on_train_epoch_end(self, trainer, pl_module, outputs):\n        print(trainer.current_epoch)\n"
    )
    [finding] = check_source(source.encode()).findings
    assert (finding.code, finding.tier) == ("LM002", "safe")
    assert fix(source) == source.replace(", outputs)", ")")


def test_dropping_the_only_keyword_only_parameter_drops_the_bare_star():
    from lightning_migrate.checker.base import drop_params

    def dropped(code: str) -> str:
        [func] = cst.parse_module(code).body
        return cst.Module([drop_params(func, {"outputs"})]).code

    assert dropped("def f(self, trainer, pl_module, *, outputs): pass\n") == "def f(self, trainer, pl_module): pass\n"
    assert dropped("def f(self, *, outputs): pass\n") == "def f(self): pass\n"
    assert dropped("def f(self, *, outputs, b): pass\n") == "def f(self, *, b): pass\n"


def test_a_keyword_only_outputs_is_reported_and_marked_not_a_syntax_error(tmp_path, capsys):
    # 1.x passed outputs positionally: a keyword-only `outputs` made the hook raise, so no drop is safe
    path = tmp_path / "kw1.py"
    path.write_text(
        "import lightning.pytorch as pl\n\nclass C(pl.Callback):\n"
        '    def on_train_epoch_end(self, trainer, pl_module, *, outputs): print("x")\n',
        encoding="utf-8",
    )
    code, lines, err = run(["--diff", path], capsys)
    assert (code, err.count("error:")) == (1, 0)
    assert ": LM002 " in err  # with --diff, the findings go to standard error


def test_the_marker_of_a_hook_whose_body_reads_nothing_does_not_say_it_reads():
    fixed = fix(
        """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def training_epoch_end(self, *, outputs):
                pass
        """
    )
    assert "# lightning-migrate: LM001 manual fix, no automatic rewrite: the hook takes other parameters" in fixed
    assert "reads" not in fixed


# -- misses: hooks bound where the class body's top-level defs are not ------------------------------------------


def test_an_assignment_in_a_one_line_class_body_is_reported_and_marked_above_the_class():
    source = """
        import lightning.pytorch as pl

        def f(self, outputs):
            pass

        class M(pl.LightningModule): training_epoch_end = f
        """
    assert codes(source) == [("LM001", 7, True)]
    fixed = fix(source)
    marker = "# lightning-migrate: LM001 manual fix, assigned in the class body: define on_train_epoch_end(self)"
    assert f"{marker} instead: " in fixed.splitlines()[6]
    assert without_markers(fixed) == textwrap.dedent(source)
    assert fix(fixed) == fixed


def test_a_chained_assignment_reports_each_removed_hook():
    source = """
        import lightning.pytorch as pl

        def f(self, outputs):
            pass

        class M(pl.LightningModule):
            validation_epoch_end = test_epoch_end = f
        """
    findings = check_source(textwrap.dedent(source).encode()).findings
    assert [(f.code, f.line, f.message.split("`")[1]) for f in findings] == [
        ("LM001", 8, "validation_epoch_end"),
        ("LM001", 8, "test_epoch_end"),
    ]
    assert [f.tier for f in findings] == ["manual", "manual"]


def test_a_def_inside_an_if_of_the_class_body_is_reported_and_never_rewritten():
    source = """
        import lightning.pytorch as pl

        DEBUG = True

        class M(pl.LightningModule):
            if DEBUG:
                def training_epoch_end(self, outputs):
                    print("debug")
            else:
                pass
        """
    [finding] = check_source(textwrap.dedent(source).encode()).findings
    assert (finding.code, finding.line, finding.col, finding.tier) == ("LM001", 8, 13, "manual")
    fixed = fix(source, unsafe_fixes=True)
    assert "    # lightning-migrate: LM001 manual fix, defined inside the class body's `if`: fix by hand: " in fixed
    assert without_markers(fixed) == textwrap.dedent(source)


# -- a fix keeps the user's comments where they were -----------------------------------------------------------


def test_dropping_the_last_parameter_keeps_the_comments_of_the_others():
    source = """
        from typing import Any

        from lightning.pytorch import Callback

        class C(Callback):
            def on_train_epoch_end(
                self,
                trainer,
                pl_module,  # m
                outputs: list[Any],  # removed in 1.5
            ):
                print(trainer.current_epoch)
        """
    fixed = fix(source)
    assert "        pl_module,  # m\n    ):\n" in fixed
    assert "removed in 1.5" not in fixed  # the dropped parameter's own comment goes with it


def test_dropping_a_parameter_does_not_move_its_comment_onto_another():
    source = """
        from lightning.pytorch import Callback

        class C(Callback):
            def on_train_epoch_end(self, trainer,
                                   pl_module,
                                   outputs,  # all outputs
                                   ):
                print(trainer.current_epoch)
        """
    fixed = fix(source)
    assert "    def on_train_epoch_end(self, trainer,\n                           pl_module,\n" in fixed
    assert "# all outputs" not in fixed


def test_the_comment_above_the_old_hook_stays_above_it_after_the_caching_rewrite():
    source = """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def __init__(self):
                super().__init__()

            # average what validation returned
            def validation_epoch_end(self, outputs):
                print(outputs)
        """
    fixed = fix(source, unsafe_fixes=True)
    assert "\n    # average what validation returned\n    def on_validation_epoch_end(self):\n" in fixed
    assert fixed.count("# average what validation returned") == 1


def test_a_step_end_hook_followed_by_indented_comments_is_not_removed():
    source = """
        import lightning.pytorch as pl

        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                return batch.sum()

            def training_step_end(self, out):
                return out
                # self.log("x", 1)
        """
    [finding] = check_source(textwrap.dedent(source).encode()).findings
    assert (finding.code, finding.tier) == ("LM005", "manual")
    fixed = fix(source)
    assert '        # self.log("x", 1)\n' in fixed
    assert "LM005 manual fix, comments follow its body: remove it by hand, keeping what they say" in fixed
    assert without_markers(fixed) == textwrap.dedent(source)


# -- a caller is named for what it is (breaker report #10) -----------------------------------------------------------

VALIDATION_MODULE = """\
    import lightning.pytorch as pl


    class M(pl.LightningModule):
        def validation_epoch_end(self, outputs):
            print("done")
    """


def test_a_string_holding_the_hook_name_is_named_as_a_string(tmp_path, capsys):
    write(tmp_path, {"m.py": VALIDATION_MODULE + '\n    def other(self):\n        s = "validation_epoch_end"\n'})
    run(["--fix", tmp_path / "m.py"], capsys)
    text = unwrapped((tmp_path / "m.py").read_text(encoding="utf-8"))
    assert "`validation_epoch_end` is named in a string at line 9 of this file, which can call the method by name" in (
        text
    )


def test_an_alias_in_an_unrelated_class_of_another_file_is_not_a_caller(tmp_path, capsys):
    """``test_epoch_end = validation_epoch_end`` in another class's body aliases that class's own method: the
    module's hook is renamed; the same alias in the module's own class body still keeps the rename manual."""
    other = """\
        class Other:
            def validation_epoch_end(self):
                pass

            test_epoch_end = validation_epoch_end
        """
    write(tmp_path, {"m.py": VALIDATION_MODULE, "al.py": other})
    assert (
        "1 safe fix, 0 unsafe fixes (--unsafe-fixes), 0 manual; changed 1 file" in run(["--fix", tmp_path], capsys)[2]
    )
    assert "def on_validation_epoch_end(self):" in (tmp_path / "m.py").read_text(encoding="utf-8")

    aliased = VALIDATION_MODULE + "\n        test_epoch_end = validation_epoch_end\n"
    write(tmp_path, {"m.py": aliased})
    run(["--fix", tmp_path], capsys)
    text = unwrapped((tmp_path / "m.py").read_text(encoding="utf-8"))
    assert "def validation_epoch_end(self, outputs):" in text
    assert "`validation_epoch_end` is used at line 8 of this file: change the callers too" in text


ADAPTER_TASK = """\
    import lightning.pytorch as pl


    class Adapter:
        def test_epoch_end(self, outputs):
            return len(outputs)


    class AdapterTask(pl.LightningModule):
        def __init__(self, adapter: Adapter):
            super().__init__()
            self.adapter = adapter

        def test_epoch_end(self, outputs):
            return self.adapter.test_epoch_end(outputs)
    """
TEST_MODULE = """\
    import lightning.pytorch as pl


    class Detector(pl.LightningModule):
        def test_epoch_end(self, outputs):
            self.log("done", 1.0)
    """


def test_a_call_on_an_attribute_annotated_with_an_unrelated_class_is_not_a_caller(tmp_path, capsys):
    """``self.adapter.test_epoch_end(outputs)`` in another file (lightning-flash's ``AdapterTask``) calls the method of
    what ``self.adapter`` holds: a parameter annotated ``Adapter``, a class of the project unrelated to the module,
    so the module's hook is renamed. Where the attribute may hold the module -- its annotation names the module's
    class, a class of the project derives from both, or another assignment of that attribute exists -- the call
    still keeps the rename manual."""
    write(tmp_path, {"tasks.py": ADAPTER_TASK, "detector.py": TEST_MODULE})
    run(["--fix", tmp_path], capsys)
    assert "def on_test_epoch_end(self):" in (tmp_path / "detector.py").read_text(encoding="utf-8")

    kept = re.compile(r"`test_epoch_end` is used at \S*tasks\.py:1[56]: change the callers too")
    both = "from detector import Detector\nfrom tasks import Adapter\n\n\nclass Both(Adapter, Detector): ...\n"
    again = "self.adapter = adapter\n        self.adapter = Adapter()\n"
    for tasks, extra in (
        (ADAPTER_TASK.replace("adapter: Adapter", "adapter: Detector"), "from detector import Detector\n"),
        (ADAPTER_TASK, both),
        (ADAPTER_TASK.replace("self.adapter = adapter\n", again), ""),
        (ADAPTER_TASK.replace("adapter: Adapter", "adapter"), ""),
    ):
        write(tmp_path, {"tasks.py": tasks, "detector.py": TEST_MODULE, "more.py": extra})
        run(["--fix", tmp_path], capsys)
        text = unwrapped((tmp_path / "detector.py").read_text(encoding="utf-8"))
        assert "def test_epoch_end(self, outputs):" in text, tasks
        assert kept.search(text), text


# -- hooks bound or written so that Lightning raises, or never runs them ------------------------------------------

ASSIGNED = """
import lightning.pytorch as pl


def _print_epoch(self, outputs):
    print(len(outputs))


class M(pl.LightningModule):
    on_train_epoch_end = _print_epoch
"""


def test_a_hook_assigned_from_a_function_taking_outputs_is_reported_and_marked():
    [finding] = check_source(textwrap.dedent(ASSIGNED).encode()).findings
    assert (finding.code, finding.line) == ("LM002", 10)
    assert "`_print_epoch(self, outputs)`, which takes `outputs` beyond the hook's `self`" in (finding.message)
    expected = ASSIGNED.replace(
        "    on_train_epoch_end = _print_epoch",
        "    # lightning-migrate: LM002 manual fix, assigned in the class body: `_print_epoch` takes outputs, never "
        "passed: https://lightning-migrate.readthedocs.io/en/latest/checker/rules/LM002.html\n"
        "    on_train_epoch_end = _print_epoch",
    )
    assert fix(ASSIGNED) == textwrap.dedent(expected)


@pytest.mark.parametrize(
    "source",
    [
        ASSIGNED.replace("(self, outputs)", "(self)"),  # takes what Lightning passes
        ASSIGNED.replace("(self, outputs)", "(self, outputs=None)"),  # a default stands in
        ASSIGNED.replace("(self, outputs)", "(self, *args)"),
        ASSIGNED.replace("def _print_epoch", "def _other"),  # not a function of this file: nothing known
    ],
    ids=["no extra parameter", "a default", "*args", "defined elsewhere"],
)
def test_a_hook_assigned_from_a_function_lightning_can_call_is_left_alone(source):
    assert check_source(textwrap.dedent(source).encode()).findings == []


ASYNC_HOOK = """
import lightning.pytorch as pl


class M(pl.LightningModule):
    async def on_validation_epoch_end(self):
        print("never runs")
"""


def test_an_async_hook_on_a_module_is_reported_its_body_never_runs():
    [finding] = check_source(textwrap.dedent(ASYNC_HOOK).encode()).findings
    assert (finding.code, finding.line, finding.col) == ("LM008", 6, 15)
    assert "`async def on_validation_epoch_end(self)`: a hook written as a coroutine function" in finding.message
    fixed = fix(ASYNC_HOOK)
    assert "# lightning-migrate: LM008 manual fix, `async def`: a hook written as a coroutine function" in fixed
    assert "    async def on_validation_epoch_end(self):" in fixed  # never made to run by a fix


@pytest.mark.parametrize(
    "source",
    [
        ASYNC_HOOK.replace("async def on_validation_epoch_end", "def on_validation_epoch_end"),
        ASYNC_HOOK.replace("on_validation_epoch_end", "fetch_remote_metrics"),  # a helper, not a hook
        ASYNC_HOOK.replace("pl.LightningModule", "object"),  # not a Lightning class
    ],
    ids=["plain def", "an async helper", "not Lightning's"],
)
def test_async_look_alikes_are_left_alone(source):
    assert check_source(textwrap.dedent(source).encode()).findings == []


def test_an_async_old_hook_is_reported_once_by_its_own_rule():
    source = ASYNC_HOOK.replace("on_validation_epoch_end(self)", "on_validation_epoch_end(self, outputs)")
    assert [f.code for f in check_source(textwrap.dedent(source).encode()).findings] == ["LM002"]


# -- a safe fix never removes a comment of the user's -------------------------------------------------------------

MULTI_LINE = """
import lightning.pytorch as pl


class M(pl.LightningModule):
    def on_train_batch_start(
        self,
        batch,
        batch_idx,
        dataloader_idx,
        # the index is unused here
    ):
        print(batch_idx)
"""


def test_dropping_a_multi_line_dataloader_idx_keeps_the_comment_line_under_it():
    expected = MULTI_LINE.replace("        dataloader_idx,\n", "")
    assert fix(MULTI_LINE) == textwrap.dedent(expected)
    compile(expected, "expected", "exec")


def test_dropping_a_parameter_another_follows_keeps_the_comment_line_under_it():
    from lightning_migrate.checker.base import drop_params

    func = cst.parse_statement(
        "def f(\n    self,\n    batch,\n    extra,\n    # about batch_idx\n    batch_idx,\n):\n    pass\n"
    )
    new = cst.Module([drop_params(func, {"extra"})]).code
    assert new == "def f(\n    self,\n    batch,\n    # about batch_idx\n    batch_idx,\n):\n    pass\n"


def test_a_comment_on_the_dropped_parameter_s_own_line_goes_with_it():
    source = MULTI_LINE.replace("        dataloader_idx,\n", "        dataloader_idx,  # not used\n")
    expected = MULTI_LINE.replace("        dataloader_idx,\n", "")
    assert fix(source) == textwrap.dedent(expected)


# -- a Lightning alias imported from another file of the project ---------------------------------------------------

ALIASED = {
    "pyproject.toml": "",
    "common.py": "import pytorch_lightning as pl\n",
    "star.py": """
        from common import *


        class M(pl.LightningModule):
            def training_epoch_end(self, outputs):
                pass
        """,
    "named.py": """
        from common import pl


        class C(pl.Callback):
            def on_train_epoch_end(self, trainer, pl_module, outputs):
                pass
        """,
}


def test_a_lightning_alias_imported_from_another_file_is_resolved(tmp_path, capsys):
    write(tmp_path, ALIASED)
    code, lines, err = run([tmp_path], capsys)
    assert code == 1, err
    assert [line.split(" ")[:2] for line in lines] == [
        [f"{tmp_path}/named.py:6:9:", "LM002"],
        [f"{tmp_path}/star.py:6:9:", "LM001"],
    ]
    assert all("possible" not in line for line in lines)
    code, _, err = run(["--fix", tmp_path], capsys)
    assert "def on_train_epoch_end(self):" in (tmp_path / "star.py").read_text()
    assert "def on_train_epoch_end(self, trainer, pl_module):" in (tmp_path / "named.py").read_text()


@pytest.mark.parametrize(
    "common",
    ["import numpy as pl\n", "pl = None\n", ""],
    ids=["another package under the alias", "not an import", "nothing bound"],
)
def test_an_alias_another_file_binds_to_something_else_is_not_lightning(tmp_path, capsys, common):
    write(tmp_path, {**ALIASED, "common.py": common})
    code, lines, _ = run([tmp_path], capsys)
    assert (code, lines) == (0, [])


# -- a proven rewrite is proven only where the hook order it relies on holds -----------------------------------------


def test_a_module_rewrite_read_by_a_project_callback_of_the_same_epoch_end_is_not_applied(tmp_path, capsys):
    """On 1.9.5 ``validation_epoch_end`` ran before every callback's ``on_validation_epoch_end``; on 2.x the module's
    ``on_validation_epoch_end`` runs after them (both recorded by running them). A callback of the project that reads
    what the old hook set would read the epoch before's value after the rename: the rewrite is not applied by plain
    ``--fix`` (its marker names the callback), and it still is where no callback defines that hook."""
    files = {
        "pyproject.toml": "",
        "model.py": """
            import torch
            import pytorch_lightning as pl


            class Model(pl.LightningModule):
                def validation_step(self, batch, batch_idx):
                    return {"acc": batch.float().mean()}

                def validation_epoch_end(self, outputs):
                    self.val_acc = torch.stack([o["acc"] for o in outputs]).mean()
            """,
        "callbacks.py": """
            import pytorch_lightning as pl


            class PrintAccuracy(pl.Callback):
                def on_validation_epoch_end(self, trainer, pl_module):
                    print(pl_module.val_acc)
            """,
    }
    write(tmp_path, files)
    code, lines, _ = run(["--fix", tmp_path], capsys)
    model = unwrapped((tmp_path / "model.py").read_text())
    assert "def validation_epoch_end(self, outputs):" in model
    reader = "the project's callback `PrintAccuracy` (callbacks.py) defines `on_validation_epoch_end`, which ran after"
    assert reader in model
    assert code == 1 and [line.endswith("[unsafe fix not applied] " + line.split()[-1]) for line in lines] == [True], (
        lines
    )

    alone = tmp_path / "alone"
    write(alone, {"pyproject.toml": "", "model.py": files["model.py"]})
    code, lines, _ = run(["--fix", alone], capsys)
    model = (alone / "model.py").read_text()
    assert "def on_validation_epoch_end(self):" in model and "validation_epoch_end(self, outputs)" not in model
    assert [line.split()[-4:-1] for line in lines] == [["[proven", "fix", "applied]"]], lines


PREDICT_CALLBACK = """
import pytorch_lightning as pl


class SavePredictions(pl.Callback):
    def on_predict_epoch_end(self, trainer, pl_module, outputs):
        self.saved = [len(per_loader) for per_loader in outputs]


def predict(trainer, model, loader, keep):
    return {call}
"""


@pytest.mark.parametrize(
    ("call", "tier"),
    [
        ("trainer.predict(model, loader, return_predictions=True)", "proven"),
        ("trainer.predict(model, loader)", "proven"),
        ("trainer.predict(model, loader, return_predictions=keep)", "unsafe"),
        ("trainer.predict(model, loader, return_predictions=False)", "unsafe"),
        ("trainer.predict(model, loader, None, False)", "unsafe"),
        ("trainer.predict(model, loader, return_predictions=True if keep else False)", "unsafe"),
        ('pl.Trainer(strategy="ddp_spawn").predict(model, loader)', "unsafe"),
    ],
)
def test_a_predict_rewrite_is_proven_only_where_no_call_may_turn_predictions_off(call, tier):
    """With ``return_predictions=False`` (a spawning strategy's default on 1.9.5) 1.4.9 and 1.9.5 passed empty
    lists; the rewrite passes every prediction, and no matrix row proves that: a call that may turn them off makes
    the rewrite opt-in, a literal ``True`` or the default does not."""
    source = PREDICT_CALLBACK.format(call=call)
    [finding] = check_source(source.encode()).findings
    assert (finding.code, finding.tier) == ("LM002", tier)
    if tier == "unsafe":
        assert "may predict with `return_predictions=False` (or a spawning strategy), where 1.x" in fix(source)


READ_AT_EPOCH_END = {
    "a method of the callback": (
        "def on_validation_epoch_end(self, trainer, pl_module):\n        self.report(trainer)\n\n"
        "    def report(self, trainer):\n        print(trainer.callback_metrics)"
    ),
    "getattr": 'def on_validation_epoch_end(self, t, m):\n        print(getattr(t, "callback_metrics"))',
    "a module kept in setup": (
        "def setup(self, trainer, pl_module, stage):\n        self.module = pl_module\n\n"
        "    def on_validation_epoch_end(self, trainer, pl_module):\n        print(self.module.val_acc)"
    ),
    "a hook bound by assignment": "on_validation_epoch_end = print",
    "**kwargs": "def on_validation_epoch_end(self, *args, **kwargs):\n        print(args)",
}


@pytest.mark.parametrize("body", list(READ_AT_EPOCH_END.values()), ids=list(READ_AT_EPOCH_END))
def test_a_callback_that_may_read_the_module_at_the_same_epoch_end_withholds_the_rewrite(body):
    """Found by trying to break the first version, which read only the hook's module parameter."""
    source = (
        "import pytorch_lightning as pl\nimport torch\n\n\nclass Model(pl.LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n        return {'acc': batch.float().mean()}\n\n"
        "    def validation_epoch_end(self, outputs):\n"
        "        self.val_acc = torch.stack([o['acc'] for o in outputs]).mean()\n\n\n"
        f"class Reader(pl.Callback):\n    {body}\n"
    )
    [finding] = [f for f in check_source(source.encode()).findings if f.code == "LM001"]
    assert finding.tier == "unsafe"
    assert "the project's callback `Reader` (<source>) defines `on_validation_epoch_end`" in fix(source)


#: Old epoch-end bodies (as public repositories wrote them) that change nothing outside their call: 1.x dropped
#: what they return, so a callback's epoch-end hook has nothing of theirs to read, before or after them.
CHANGES_NOTHING_OUTSIDE = {
    "a returned dict": (
        "avg = torch.stack([o['acc'] for o in outputs]).mean()\n"
        "        return {'avg_acc': avg, 'log': {'acc': avg}, 'progress_bar': {'acc': avg}}"
    ),
    "a loop and a division": (
        "total = 0\n        for output in outputs:\n            total += output['acc']\n"
        "        total = total / len(outputs)\n        return {'val_loss': total}"
    ),
    "a value computed and dropped": "torch.stack([x['acc'] for x in outputs]).mean()",
}
#: Look-alikes that may change what a callback reads at the same epoch end.
CHANGES_SOMETHING = {
    "self.log": "self.log('acc', torch.stack([o['acc'] for o in outputs]).mean())",
    "a method of the module": "return self._shared_epoch_end(outputs)",
    "an item set": "outputs[0]['acc'] = 0",
    "an in-place tensor method": "outputs[0]['acc'].add_(1)",
    "a function of the project": "report(outputs)",
    "print": "print(len(outputs))",
    "a global": "global LAST\n        LAST = len(outputs)",
    "torch shadowed": "torch = outputs[0]['acc']\n        torch.stack([])",
    "numpy": "np.mean([len(outputs)])",
}


@pytest.mark.parametrize(
    ("body", "tier"),
    [
        *((body, "proven") for body in CHANGES_NOTHING_OUTSIDE.values()),
        *((body, "unsafe") for body in CHANGES_SOMETHING.values()),
    ],
    ids=[*CHANGES_NOTHING_OUTSIDE, *CHANGES_SOMETHING],
)
def test_a_callback_of_the_same_epoch_end_withholds_no_rewrite_of_a_body_that_changes_nothing_outside(body, tier):
    """Found in the corpus (lightning-bolts: six modules whose ``validation_epoch_end`` returns a dict 1.x dropped,
    beside a callback of the project defining ``on_validation_epoch_end``): the order of the two hooks matters only
    when the old hook changes something the callback can read."""
    source = (
        "import numpy as np\nimport pytorch_lightning as pl\nimport torch\n\n\nclass Model(pl.LightningModule):\n"
        "    def validation_step(self, batch, batch_idx):\n        return {'acc': batch.float().mean()}\n\n"
        f"    def validation_epoch_end(self, outputs):\n        {body}\n\n\n"
        "class Reader(pl.Callback):\n    def on_validation_epoch_end(self, trainer, pl_module):\n"
        "        print(trainer.callback_metrics, pl_module.layer)\n"
    )
    [finding] = [f for f in check_source(source.encode()).findings if f.code == "LM001"]
    assert (finding.fix.shape, finding.tier) == ("validation-epoch-end/per-dataloader/step", tier)
    if tier == "unsafe":
        assert "the project's callback `Reader` (<source>) defines `on_validation_epoch_end`" in fix(source)


@pytest.mark.parametrize(
    ("extra", "tier"),
    [
        ("cb = pl.callbacks.LambdaCallback(on_train_epoch_end=lambda t, m: print(m.mean))", "unsafe"),
        (
            "class Best(pl.callbacks.ModelCheckpoint):\n    def on_train_epoch_end(self, trainer, pl_module):\n"
            "        print(trainer.callback_metrics)",
            "proven",
        ),
    ],
    ids=["LambdaCallback", "a checkpoint subclass (2.x calls it after the module)"],
)
def test_the_training_rewrite_and_the_callbacks_of_its_epoch_end(extra, tier):
    source = (
        "import pytorch_lightning as pl\nimport torch\n\n\nclass Model(pl.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n        return {'loss': batch.sum()}\n\n"
        "    def training_epoch_end(self, outputs):\n"
        "        self.mean = torch.stack([o['loss'] for o in outputs]).mean()\n\n\n"
        f"{extra}\n"
    )
    [finding] = [f for f in check_source(source.encode()).findings if f.code == "LM001"]
    assert finding.tier == tier


def test_a_callback_file_that_does_not_parse_counts_as_a_reader(tmp_path, capsys):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "model.py": """
                import pytorch_lightning as pl


                class Model(pl.LightningModule):
                    def validation_epoch_end(self, outputs):
                        self.n = len(outputs)
                """,
            "cb.py": (
                "import pytorch_lightning as pl\n\n\nclass C(pl.Callback):\n"
                '    def on_validation_epoch_end(self, t, m):\n        print(f"{")\n'
            ),
        },
    )
    code, lines, _ = run([tmp_path / "model.py"], capsys)
    assert [line.split("[")[-1].split("]")[0] for line in lines] == ["unsafe fix"], lines


def test_a_class_of_an_unresolved_framework_base_with_an_epoch_end_method_gets_a_note():
    """``class MyTask(ClassificationTask)`` of a framework the checker cannot read, defining only
    ``validation_epoch_end``: a note with ``--notes`` (it may be a LightningModule), nothing without."""
    source = """
        from mylib.tasks import ClassificationTask


        class MyTask(ClassificationTask):
            def validation_epoch_end(self, outputs):
                self.log("n", len(outputs))


        class Plain(ClassificationTask):
            def on_epoch_end(self):
                pass
        """
    assert codes(source, notes=True) == [("LM001", 6, False)]
    assert codes(source) == []
