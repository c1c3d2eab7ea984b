"""LM001's rename of an old epoch-end method whose body never reads ``outputs``: plain for the evaluation stages, with
a count of the epoch's batches for ``training_epoch_end`` (1.9.5 skipped it in an epoch that completed no batch), and
opt-in where a callback of the project may read what the renamed hook does, one epoch late."""

from __future__ import annotations

import textwrap

import pytest

from lightning_migrate.checker import check_source, proven
from lightning_migrate.checker.base import PROVEN, SAFE, UNSAFE
from lightning_migrate.checker.rules._rename import COUNTED

from ._util import fix, run, unwrapped, write

SCHEDULED = """\
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self(batch).sum()

    def training_epoch_end(self, outputs):
        self.lr_schedulers().step()
"""

COUNTED_SCHEDULED = """\
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.train_batches_this_epoch = 0  # the batches trained this epoch, counted in on_train_batch_end

    def training_step(self, batch, batch_idx):
        return self(batch).sum()

    def on_train_epoch_start(self):
        self.train_batches_this_epoch = 0

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.train_batches_this_epoch += 1

    def on_train_epoch_end(self):
        if not self.train_batches_this_epoch:  # no batch was trained this epoch
            return
        self.lr_schedulers().step()
"""


def tier(source: str) -> str | None:
    [finding] = [f for f in check_source(textwrap.dedent(source).encode()).findings if f.code == "LM001"]
    return finding.tier


def test_training_epoch_end_is_renamed_with_a_count_of_the_epochs_batches():
    assert tier(SCHEDULED) == (PROVEN if COUNTED["training-epoch-end"] in proven.shapes() else UNSAFE)
    assert fix(SCHEDULED) == COUNTED_SCHEDULED
    assert fix(COUNTED_SCHEDULED) == COUNTED_SCHEDULED  # nothing left to find


def test_the_count_goes_at_the_head_of_the_hooks_the_class_already_defines():
    source = SCHEDULED + (
        "\n    def on_train_epoch_start(self):\n        self.seen = []\n"
        "\n    def on_train_batch_end(self, out, batch, batch_idx):\n        self.seen.append(batch_idx)\n"
    )
    fixed = fix(source)
    assert "    def on_train_epoch_start(self):\n        self.train_batches_this_epoch = 0" in fixed
    assert "batch_idx):\n        self.train_batches_this_epoch += 1\n        self.seen.append(batch_idx)" in fixed
    assert fixed.count("def on_train_epoch_start") == fixed.count("def on_train_batch_end") == 1


def test_validation_and_test_epoch_end_are_a_plain_rename():
    for old, new in (("validation_epoch_end", "on_validation_epoch_end"), ("test_epoch_end", "on_test_epoch_end")):
        source = SCHEDULED.replace("training_epoch_end", old)
        assert tier(source) == SAFE
        assert fix(source) == source.replace(f"{old}(self, outputs)", f"{new}(self)")


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("    on_train_batch_end = print\n", "the class binds `on_train_batch_end` at line 8 other than with a `def`"),
        ("    async def on_train_epoch_start(self):\n        pass\n", "`on_train_epoch_start` is `async def`"),
        (
            "    def reset(self):\n        self.train_batches_this_epoch = 5\n",
            "already uses `self.train_batches_this_epoch`",
        ),
    ],
    ids=["bound by assignment", "async", "the counter's name taken"],
)
def test_where_the_count_cannot_be_added_the_rename_is_opt_in_and_says_why(extra, reason):
    source = SCHEDULED.replace(
        "    def training_epoch_end", extra.replace("\n", "\n", 1) + "\n    def training_epoch_end"
    )
    assert tier(source) == UNSAFE
    fixed = unwrapped(fix(source))
    assert "LM001 unsafe fix, rename without the count of the epoch's batches that guards the renamed hook" in fixed, (
        fixed
    )
    assert reason in fixed, fixed
    assert "def training_epoch_end(self, outputs):" in fixed  # nothing renamed without --unsafe-fixes


def test_a_base_or_a_subclass_defining_a_counting_hook_makes_it_opt_in():
    base = SCHEDULED.replace(
        "class Model(pl.LightningModule):",
        "class Base(pl.LightningModule):\n    def on_train_batch_end(self, outputs, batch, batch_idx):\n        pass\n"
        "\n\nclass Model(Base):",
    )
    assert "base class `Base` defines `on_train_batch_end`" in unwrapped(fix(base))
    sub = SCHEDULED + "\n\nclass Child(Model):\n    def on_train_epoch_start(self):\n        pass\n"
    assert "a subclass defines `on_train_epoch_start` of its own" in unwrapped(fix(sub))


READER = """\
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def validation_epoch_end(self, outputs):
        self.best = 3


class Report(pl.Callback):
    def on_validation_epoch_end(self, trainer, pl_module):
        print(pl_module.best)
"""


def test_a_callback_that_may_read_the_module_at_that_epoch_end_makes_the_rename_opt_in(tmp_path, capsys):
    """1.x ran ``validation_epoch_end`` before the callbacks' ``on_validation_epoch_end``; the renamed hook runs after
    them, so ``Report`` would print the value of the validation run before (measured: the ``*-outputs-lifetime``
    hook orders of the 1.9.5 record)."""
    write(tmp_path, {"m.py": READER})
    code, lines, _ = run(["--fix", tmp_path / "m.py"], capsys)
    assert code == 1 and "[unsafe fix not applied]" in lines[0]
    fixed = unwrapped((tmp_path / "m.py").read_text())
    assert (
        "the project's callback `Report` (m.py) defines `on_validation_epoch_end` and may read what this method does"
        in fixed
    )
    assert "def validation_epoch_end(self, outputs):" in fixed
    # a callback that reads nothing of the module, and a body that changes nothing outside its call, keep it safe
    quiet = READER.replace("print(pl_module.best)", 'print("done")')
    assert tier(quiet) == SAFE
    pure = READER.replace("self.best = 3", "return len(outputs) * 0")
    assert check_source(pure.encode()).findings[0].tier != UNSAFE


def test_the_counted_rename_skips_the_body_in_an_epoch_without_a_batch_on_the_installed_lightning():
    """Run on the installed Lightning: ``on_train_batch_start`` returns ``-1`` in epoch 1, so that epoch trains no
    batch; the renamed body runs in epochs 0 and 2 only, as 1.9.5 ran ``training_epoch_end`` (its record of
    ``data/rewrites/module_training_epoch_end_unread.py``, run by test_rewrite_equivalence.py)."""
    # the tests session installs Lightning (requirements.txt), so this runs in CI; a checker-only environment
    # without Lightning can still run the rest of the file
    pl = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.demos.boring_classes import BoringModel

    source = textwrap.dedent("""\
        from lightning.pytorch.demos.boring_classes import BoringModel


        class Model(BoringModel):
            def on_train_batch_start(self, batch, batch_idx):
                return -1 if self.current_epoch == 1 else None

            def training_epoch_end(self, outputs):
                self.ended.append(self.current_epoch)
        """)
    fixed = check_source(source.encode(), fix=True).new_source
    assert fixed is not None
    namespace: dict = {"BoringModel": BoringModel}
    exec(compile(fixed.decode(), "fixed.py", "exec"), namespace)
    model = namespace["Model"]()
    model.ended = []
    trainer = pl.Trainer(
        max_epochs=3,
        limit_train_batches=2,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model)
    assert model.ended == [0, 2]


def test_the_count_is_made_in_init_so_a_fit_resumed_mid_epoch_runs(tmp_path):
    """A fit resumed from a checkpoint saved mid-epoch calls no ``on_train_epoch_start`` for the epoch it resumes (the
    first version of the count raised ``AttributeError`` there, in the scenario matrix's ``resume-mid-epoch`` runs):
    the count is made in ``__init__``, and the renamed body runs at the end of the resumed epoch and the next, as
    1.9.5 ran ``training_epoch_end``."""
    # the tests session installs Lightning (requirements.txt), so this runs in CI; a checker-only environment
    # without Lightning can still run the rest of the file
    pl = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.demos.boring_classes import BoringModel

    source = textwrap.dedent("""\
        from lightning.pytorch.demos.boring_classes import BoringModel


        class Model(BoringModel):
            def training_epoch_end(self, outputs):
                ENDED.append(self.current_epoch)
        """)
    fixed = check_source(source.encode(), fix=True).new_source
    assert fixed is not None and b"self.train_batches_this_epoch = 0  # the batches trained" in fixed
    ended: list[int] = []
    namespace: dict = {"BoringModel": BoringModel, "ENDED": ended}
    exec(compile(fixed.decode(), "fixed.py", "exec"), namespace)

    def trainer(**kwargs):
        return pl.Trainer(
            max_epochs=2, limit_train_batches=2, limit_val_batches=0, logger=False, enable_progress_bar=False,
            enable_model_summary=False, default_root_dir=tmp_path, **kwargs,
        )  # fmt: skip

    saving = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=1, save_top_k=-1, filename="{step}")
    trainer(callbacks=[saving]).fit(namespace["Model"]())
    assert ended == [0, 1]
    ended.clear()
    trainer().fit(namespace["Model"](), ckpt_path=tmp_path / "step=1.ckpt")  # after batch 0 of epoch 0
    assert ended == [0, 1]


def test_the_count_goes_into_the_definition_python_binds():
    """A class that defines ``on_train_epoch_start`` twice runs the second: the reset goes there."""
    source = SCHEDULED + "\n    def on_train_epoch_start(self):\n        pass\n\n    def on_train_epoch_start(self):\n"
    source += "        self.seen = 0\n"
    fixed = fix(source)
    assert "def on_train_epoch_start(self):\n        pass\n" in fixed
    assert "def on_train_epoch_start(self):\n        self.train_batches_this_epoch = 0\n        self.seen = 0" in fixed


def test_a_base_that_uses_the_counters_name_makes_the_rename_opt_in():
    source = SCHEDULED.replace(
        "class Model(pl.LightningModule):",
        "class Base(pl.LightningModule):\n    def setup(self, stage):\n        self.train_batches_this_epoch = 4\n"
        "\n\nclass Model(Base):",
    )
    assert tier(source) == UNSAFE
    assert "base class `Base`'s file uses `.train_batches_this_epoch`" in unwrapped(fix(source))


def test_lightnings_own_callback_made_in_the_checked_files_may_read_the_module():
    """``ModelPruning`` prunes in its ``on_train_epoch_end``: the renamed hook would run after it, where
    ``training_epoch_end`` ran before (the breaker's sparsity run: 0.0, 0.25, 0.5 on 1.9.5; 0.25, 0.5, 0.625 after a
    plain rename). A checkpoint callback, which reads only what was logged, is not such a reader."""
    pruned = SCHEDULED + (
        "\n\nfrom lightning.pytorch.callbacks import ModelCheckpoint, ModelPruning\n\n"
        'trainer = pl.Trainer(callbacks=[ModelPruning("l1_unstructured", amount=0.25)])\n'
    )
    assert tier(pruned) == UNSAFE
    assert "the project's callback `ModelPruning` (<source>) defines `on_train_epoch_end`" in unwrapped(fix(pruned))
    checkpointed = pruned.replace('ModelPruning("l1_unstructured", amount=0.25)', "ModelCheckpoint()")
    assert tier(checkpointed) != UNSAFE
    shown = pruned.replace('ModelPruning("l1_unstructured", amount=0.25)', "TQDMProgressBar()")
    assert tier(shown.replace("ModelCheckpoint, ModelPruning", "TQDMProgressBar")) != UNSAFE  # it only prints


@pytest.mark.parametrize(
    "keeps",
    ["self.modules.append(pl_module)", 'self.refs["model"] = pl_module', "self.model = pl_module"],
    ids=["a call", "an item", "an attribute"],
)
def test_a_callback_that_keeps_the_module_in_another_hook_may_read_it(keeps):
    source = READER.replace(
        "    def on_validation_epoch_end(self, trainer, pl_module):\n        print(pl_module.best)",
        f"    def setup(self, trainer, pl_module, stage):\n        {keeps}\n\n"
        "    def on_validation_epoch_end(self, trainer, pl_module):\n        print(self.seen)",
    )
    assert tier(source) == UNSAFE, keeps


@pytest.mark.parametrize("signature", ["self, model", "self, *, model", "self, **kwargs"])
def test_a_callback_given_the_module_at_construction_may_read_it(signature):
    """``Report(model=model)``: the hook reads ``self.model.best``, an attribute ``__init__`` set from a parameter
    (keyword-only too); reading no attribute of it (``self.model`` printed) is reading nothing of the module."""
    kept = "model" if "model" in signature else 'kwargs["model"]'
    source = READER.replace(
        "    def on_validation_epoch_end(self, trainer, pl_module):\n        print(pl_module.best)",
        f"    def __init__({signature}):\n        self.model = {kept}\n\n"
        "    def on_validation_epoch_end(self, trainer, pl_module):\n        print(self.model.best)",
    )
    assert tier(source) == UNSAFE, signature
    if signature == "self, *, model":  # (a first or second parameter kept in self counts, whatever is read)
        assert tier(source.replace("print(self.model.best)", "print(self.model)")) == SAFE


@pytest.mark.parametrize(
    ("state", "read"),
    [
        ("STATE = {}", 'STATE.get("best")'),
        ("BEST = None", "BEST"),
        ("from .shared import STATE", 'STATE["best"]'),
    ],
    ids=["a dict", "a name rebound under global", "imported from the project"],
)
def test_a_callback_reading_a_global_the_module_may_write_is_a_reader(state, read):
    """The module's hook writes shared state (``STATE["best"] = ...``, ``global BEST``) that the callback's hook
    reads with neither naming the other; a constant (``LIMIT = 3``) is no shared state."""
    source = READER.replace("import lightning.pytorch as pl\n", f"import lightning.pytorch as pl\n\n{state}\n")
    source = source.replace("print(pl_module.best)", f"print({read})")
    assert tier(source) == UNSAFE, state
    constant = READER.replace("import lightning.pytorch as pl\n", "import lightning.pytorch as pl\n\nLIMIT = 3\n")
    assert tier(constant.replace("print(pl_module.best)", "print(LIMIT)")) == SAFE


@pytest.mark.parametrize(
    "made",
    [
        "trainer = pl.Trainer(callbacks=[MetricsPrinter()])",
        "printer = MetricsPrinter()\ntrainer = pl.Trainer(callbacks=[printer])",
    ],
    ids=["in the list", "named in the list"],
)
def test_a_callback_of_another_package_given_to_the_trainer_may_read_the_module(made):
    """``MetricsPrinter`` comes from an installed package: its ``on_validation_epoch_end`` is in no checked file
    and may read what the renamed hook does; a listed name bound to anything else is no callback of it."""
    source = READER.split("\n\n\nclass Report")[0].replace(
        "import lightning.pytorch as pl\n", "import lightning.pytorch as pl\nfrom printers import MetricsPrinter\n"
    )
    assert tier(source) == SAFE
    assert tier(source + "\n\n" + made + "\n") == UNSAFE
    assert tier(source + "\n\n" + made.replace("printer = MetricsPrinter()", "printer = 3") + "\n") == (
        UNSAFE if "[MetricsPrinter()]" in made else SAFE
    )


def test_a_subclass_through_a_module_level_alias_is_a_subclass(tmp_path, capsys):
    """``LitModel = Classifier`` then ``class Tuned(LitModel)``: ``Tuned`` derives from ``Classifier``, and its own
    ``on_train_batch_end`` (no ``super()``) would count no batch, so the counted rename is opt-in -- in a snippet and
    in a project's file alike."""
    source = SCHEDULED + (
        "\n\nLitModel = Model\n\n\nclass Tuned(LitModel):\n"
        "    def on_train_batch_end(self, outputs, batch, batch_idx):\n        pass\n"
    )
    assert tier(source) == UNSAFE
    write(tmp_path, {"pkg/__init__.py": "", "pkg/models.py": source})
    run(["--fix", tmp_path / "pkg"], capsys)
    assert "a subclass defines `on_train_batch_end` of its own" in unwrapped(
        (tmp_path / "pkg" / "models.py").read_text()
    )


def test_a_class_of_an_unresolved_base_with_the_callbacks_hook_may_read_the_module():
    """``BaseReporter`` comes from another package: the class may be a callback, and its hook of the callback's
    signature reads the module, so the rename is opt-in; the same class that reads nothing of it does not count."""
    source = READER.replace(
        "class Report(pl.Callback):", "from reporting import BaseReporter\n\n\nclass Report(BaseReporter):"
    )
    assert tier(source) == UNSAFE
    assert tier(source.replace("print(pl_module.best)", 'print("done")')) == SAFE


def test_a_training_epoch_end_that_changes_nothing_is_a_plain_safe_rename():
    """``pass`` under comments (the lightning-hydra-template's module): running it in one more epoch changes nothing,
    so it gets no count."""
    source = SCHEDULED.replace("        self.lr_schedulers().step()", "        # what outputs holds\n\n        pass")
    assert tier(source) == SAFE
    assert fix(source) == source.replace("training_epoch_end(self, outputs)", "on_train_epoch_end(self)")


@pytest.mark.parametrize("body", ["pass", "...", '"""Nothing to do."""'])
def test_a_one_line_definition_that_does_nothing_is_a_plain_safe_rename(body):
    """``def training_epoch_end(self, outputs): pass`` on one line: its body is a suite of small statements."""
    source = SCHEDULED.replace("outputs):\n        self.lr_schedulers().step()", f"outputs): {body}")
    assert tier(source) == SAFE
    assert fix(source) == source.replace("training_epoch_end(self, outputs)", "on_train_epoch_end(self)")
    assert tier(source.replace(f"outputs): {body}", f"outputs): {body}; print(1)")) != SAFE


def test_a_body_that_computes_from_a_global_keeps_its_count():
    """``torch.stack(RESULTS)`` changes nothing outside its call but may raise on an empty global list in the epoch
    the old method was skipped: only a body that does nothing is renamed without the count."""
    source = SCHEDULED.replace("        self.lr_schedulers().step()", "        torch.stack(RESULTS).mean()")
    assert tier(source) == (PROVEN if COUNTED["training-epoch-end"] in proven.shapes() else UNSAFE)
