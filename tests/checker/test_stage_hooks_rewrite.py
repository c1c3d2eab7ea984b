"""LM006: a stage-less epoch hook (``on_epoch_start``, ``on_epoch_end``) rewritten to be called from the stage hooks
that the newest 1.x release that ran it called it beside (``proven_rewrites.json``'s ``stageless``, read from that
release's recorded calls). Pairs: input, expected output, and look-alikes the rewrite leaves to a marker."""

from __future__ import annotations

import textwrap

import pytest

from lightning_migrate.checker import check_source, proven
from lightning_migrate.checker.base import PROVEN, UNSAFE
from migration_guide import record_proven

from ._util import fix, write

PAIRS = [
    (
        "a callback's on_epoch_end: called from the training, validation and test epoch ends",
        """\
        import pytorch_lightning as pl


        class Printer(pl.Callback):
            def on_epoch_end(self, trainer, pl_module):
                print(trainer.current_epoch)
        """,
        """\
        import pytorch_lightning as pl


        class Printer(pl.Callback):
            def _on_epoch_end(self, trainer, pl_module):
                print(trainer.current_epoch)

            def on_train_epoch_end(self, trainer, pl_module):
                self._on_epoch_end(trainer, pl_module)

            def on_validation_epoch_end(self, trainer, pl_module):
                self._on_epoch_end(trainer, pl_module)

            def on_test_epoch_end(self, trainer, pl_module):
                self._on_epoch_end(trainer, pl_module)
        """,
    ),
    (
        "a module's on_epoch_start: before the code of the stage hook the class defines (after its docstring)",
        """\
        import pytorch_lightning as pl


        class Model(pl.LightningModule):
            def on_test_epoch_start(self) -> None:
                \"\"\"Full masks when testing.\"\"\"
                self.noise = "full_mask"

            def on_epoch_start(self):
                self.seen = 0
        """,
        """\
        import pytorch_lightning as pl


        class Model(pl.LightningModule):
            def on_test_epoch_start(self) -> None:
                \"\"\"Full masks when testing.\"\"\"
                self._on_epoch_start()
                self.noise = "full_mask"

            def _on_epoch_start(self):
                self.seen = 0

            def on_train_epoch_start(self):
                self._on_epoch_start()

            def on_validation_epoch_start(self):
                self._on_epoch_start()
        """,
    ),
    (
        "a module's on_epoch_end beside an on_train_epoch_end that only passes: the call replaces the pass",
        """\
        import pytorch_lightning as pl


        class Model(pl.LightningModule):
            def on_train_epoch_end(self):
                pass

            def on_epoch_end(self):
                self.epochs += 1
        """,
        """\
        import pytorch_lightning as pl


        class Model(pl.LightningModule):
            def on_train_epoch_end(self):
                self._on_epoch_end()

            def _on_epoch_end(self):
                self.epochs += 1

            def on_validation_epoch_end(self):
                self._on_epoch_end()

            def on_test_epoch_end(self):
                self._on_epoch_end()
        """,
    ),
    (
        "a ModelCheckpoint subclass: the added on_train_epoch_end runs ModelCheckpoint's own first",
        """\
        import pytorch_lightning as pl


        class SaveEveryEpoch(pl.callbacks.ModelCheckpoint):
            def on_epoch_end(self, trainer, pl_module):
                self.save_checkpoint(trainer)
        """,
        """\
        import pytorch_lightning as pl


        class SaveEveryEpoch(pl.callbacks.ModelCheckpoint):
            def _on_epoch_end(self, trainer, pl_module):
                self.save_checkpoint(trainer)

            def on_train_epoch_end(self, trainer, pl_module):
                super().on_train_epoch_end(trainer, pl_module)
                self._on_epoch_end(trainer, pl_module)

            def on_validation_epoch_end(self, trainer, pl_module):
                self._on_epoch_end(trainer, pl_module)

            def on_test_epoch_end(self, trainer, pl_module):
                self._on_epoch_end(trainer, pl_module)
        """,
    ),
]


@pytest.mark.parametrize(("source", "expected"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_pair(source, expected):
    expected = textwrap.dedent(expected)
    assert fix(source, unsafe_fixes=True) == expected
    compile(expected, "expected", "exec")
    assert check_source(expected.encode()).findings == []  # nothing left to report: a second --fix changes nothing


LOOK_ALIKES = [
    (
        "an on_train_epoch_end that returns early: the call would not run at its end",
        """\
        class M(pl.LightningModule):
            def on_train_epoch_end(self):
                if self.skip:
                    return
                self.log("x", 1.0)

            def on_epoch_end(self):
                self.count += 1
        """,
        "has a `return` before its end",
    ),
    (
        "a training_epoch_end, which LM001 rewrites to the same stage hook",
        """\
        class M(pl.LightningModule):
            def training_epoch_end(self, outputs):
                self.log("x", 1.0)

            def on_epoch_end(self):
                self.count += 1
        """,
        "rewritten into the same stage hooks",
    ),
    (
        "an on_train_epoch_end that takes the old outputs, which LM002 rewrites",
        """\
        class M(pl.LightningModule):
            def on_train_epoch_end(self, outputs):
                self.log("x", 1.0)

            def on_epoch_start(self):
                self.count = 0
        """,
        "takes other parameters than the hook's own",
    ),
    (
        "an async stage hook",
        """\
        class M(pl.LightningModule):
            async def on_test_epoch_end(self):
                self.log("x", 1.0)

            def on_epoch_end(self):
                self.count += 1
        """,
        "with `async` or a decorator",
    ),
    (
        "a stage hook bound otherwise in the class body",
        """\
        class M(pl.LightningModule):
            on_validation_epoch_end = print

            def on_epoch_end(self):
                self.count += 1
        """,
        "the class already binds `on_validation_epoch_end`",
    ),
    (
        "code that calls the old hook by name",
        """\
        class M(pl.LightningModule):
            def on_epoch_end(self):
                self.count += 1

            def on_fit_end(self):
                self.on_epoch_end()
        """,
        "change the callers too",
    ),
    (
        "a subclass in the file defines a stage hook that would replace the added one",
        """\
        class Base(pl.Callback):
            def on_epoch_end(self, trainer, pl_module):
                print("epoch")


        class Child(Base):
            def on_validation_epoch_end(self, trainer, pl_module):
                print("validated")
        """,
        "a subclass defines `on_validation_epoch_end`",
    ),
]


@pytest.mark.parametrize(("source", "why"), [p[1:] for p in LOOK_ALIKES], ids=[p[0] for p in LOOK_ALIKES])
def test_look_alikes_keep_a_marker(source, why):
    source = "import pytorch_lightning as pl\n\n\n" + textwrap.dedent(source)
    findings = [f for f in check_source(source.encode(), fix=True, unsafe_fixes=True).findings if f.code == "LM006"]
    assert [f.tier for f in findings] == ["manual"], findings  # the marker, no edit
    fixed = fix(source, unsafe_fixes=True)
    assert "def _on_epoch" not in fixed and why in fixed, fixed


def test_a_subclass_in_another_file_of_the_project_is_seen(tmp_path, capsys):
    from ._util import run

    project = write(
        tmp_path / "project",
        {
            "pyproject.toml": "",
            "base.py": """\
                import pytorch_lightning as pl


                class Base(pl.Callback):
                    def on_epoch_end(self, trainer, pl_module):
                        print("epoch")
                """,
            "child.py": """\
                from base import Base


                class Child(Base):
                    def on_test_epoch_end(self, trainer, pl_module):
                        print("tested")
                """,
        },
    )
    code, out, _ = run(["--fix", "--unsafe-fixes", project], capsys)
    assert code == 1
    assert "a subclass defines `on_test_epoch_end`" in (project / "base.py").read_text(encoding="utf-8")


def test_the_tier_follows_the_matrix_rows():
    source = "import pytorch_lightning as pl\n\n\nclass P(pl.Callback):\n    def on_epoch_end(self, trainer, m):\n"
    source += "        pass\n"
    [finding] = check_source(source.encode()).findings
    assert finding.fix.shape == "callback-on-epoch-end/stage-hooks"
    assert finding.tier == (PROVEN if finding.fix.shape in proven.shapes() else UNSAFE)


def test_the_stage_hooks_come_from_the_recorded_calls():
    """The shipped record is what the calls recorded on the newest 1.x release that ran the hooks give."""
    assert proven.stageless() == record_proven.record()["stageless"]
    assert proven.stageless()["release"] == "1.4.9"  # 1.9.5 refuses the hooks: its record holds the error


def test_pairing_the_recorded_calls():
    """An ``end`` hook pairs with the stage hook the owner's calls show right before it, a ``start`` hook with the one
    right after; a stage hook that also ran without it (predict here) is left out, and a hook with one call that
    pairs with nothing gets no entry."""
    calls = {
        "fit": {
            "calls": [
                ["Callback", "on_epoch_start", "train"],
                ["Callback", "on_train_epoch_start", "train"],
                ["LightningModule", "on_train_epoch_end", "train"],  # another owner's: not the callback's pair
                ["Callback", "on_train_epoch_end", "train"],
                ["Callback", "on_epoch_end", "train"],
                ["Callback", "on_batch_end", "train"],  # no stage hook of its kind before it
            ]
        },
        "predict": {
            "calls": [
                ["Callback", "on_epoch_start", "predict"],
                ["Callback", "on_predict_epoch_start", "predict"],
                ["Callback", "on_predict_epoch_end", "predict"],
            ]
        },
    }
    assert record_proven.stageless(calls) == {
        "Callback": {
            "on_epoch_end": {"hooks": ["on_train_epoch_end"], "position": "after"},
            "on_epoch_start": {"hooks": ["on_train_epoch_start", "on_predict_epoch_start"], "position": "before"},
        }
    }
    calls["predict"]["calls"].append(["Callback", "on_epoch_end", "predict"])  # now every predict end pairs too
    assert record_proven.stageless(calls)["Callback"]["on_epoch_end"]["hooks"] == [
        "on_train_epoch_end",
        "on_predict_epoch_end",
    ]


def test_plain_fix_applies_the_rewrite_the_matrix_proves():
    """Each stage-less epoch hook's shape is proven by a row of the scenario matrix (run in every configuration of
    the training stage, compared with where 1.4.9 called the hook), so plain ``--fix`` applies it."""
    for owner in ("callback", "module"):
        for hook in ("start", "end"):
            assert proven.proving_rows(f"{owner}-on-epoch-{hook}/stage-hooks"), (owner, hook)
    module = (
        "\n\nclass Model(pl.LightningModule):\n    def training_step(self, batch, batch_idx):\n        return batch\n"
    )
    source = textwrap.dedent(PAIRS[0][1]) + module  # a module of the checked files that defines no stage hook
    assert fix(source) == textwrap.dedent(PAIRS[0][2]) + module


#: What the callback's ``on_epoch_end`` reads, set by the module in a stage hook (1.4.9 ran the module's
#: ``on_train_epoch_end`` first, then the callback's ``on_epoch_end``; 2.x runs the callbacks' stage hooks first).
ORDER = """\
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return batch

    def on_train_epoch_end(self):
        self.summary_text = f"epoch {self.current_epoch}"


class Reader(pl.Callback):
    def on_epoch_end(self, trainer, pl_module):
        print(pl_module.summary_text)
"""


def test_a_callback_end_hook_that_may_read_what_the_module_sets_in_a_stage_hook_is_opt_in():
    """Moved into the callback's stage hooks, the body runs before the module's: it would read the epoch before's
    value. Proven again where the module defines none of the stage hooks, or the body reads nothing of it."""
    [finding] = [f for f in check_source(ORDER.encode()).findings if f.code == "LM006"]
    assert finding.tier == UNSAFE
    assert "`Model` (<source>) may define `on_train_epoch_end`" in finding.fix.withheld
    assert "1.x ran `on_epoch_end` after the module's stage hooks" in finding.fix.withheld
    for source in (
        ORDER.replace("on_train_epoch_end(self)", "on_fit_end(self)"),
        ORDER.replace("print(pl_module.summary_text)", 'print("epoch over")'),
    ):
        [finding] = [f for f in check_source(source.encode()).findings if f.code == "LM006"]
        assert finding.tier == PROVEN, source
    training_epoch_end = ORDER.replace("on_train_epoch_end(self)", "training_epoch_end(self, outputs)")
    assert [f.tier for f in check_source(training_epoch_end.encode()).findings if f.code == "LM006"] == [UNSAFE]
    alone = ORDER.split("\n\n\nclass Reader")[0].replace("class Model(pl.LightningModule)", "class Other(pl.Callback)")
    alone += "\n\n\nclass Reader" + ORDER.split("\n\n\nclass Reader")[1]
    [finding] = [f for f in check_source(alone.encode()).findings if f.code == "LM006"]
    assert finding.tier == UNSAFE and "the module, defined in no checked file," in finding.fix.withheld


def test_a_callback_batch_end_hook_that_may_read_the_module_is_opt_in_beside_its_batch_end():
    source = ORDER.replace("on_train_epoch_end(self):", "on_train_batch_end(self, outputs, batch, batch_idx):")
    source = source.replace("on_epoch_end(self, trainer, pl_module)", "on_batch_end(self, trainer, pl_module)")
    [finding] = [f for f in check_source(source.encode()).findings if f.code == "LM006"]
    assert (finding.tier, finding.fix.shape) == (UNSAFE, "callback-on-batch-end/rename")
    assert "may define `on_train_batch_end`" in finding.fix.withheld


def test_a_module_start_hook_a_callback_may_read_at_its_stage_start_is_opt_in():
    """1.4.9 ran the module's ``on_epoch_start`` before every callback's ``on_train_epoch_start``; moved into the
    module's, it runs after them."""
    source = ORDER.replace(
        "    def on_train_epoch_end(self):\n        self.summary_text",
        "    def on_epoch_start(self):\n        self.tag",
    ).replace("def on_epoch_end(self, trainer, pl_module)", "def on_train_epoch_start(self, trainer, pl_module)")
    [finding] = [f for f in check_source(source.encode()).findings if f.code == "LM006"]
    assert finding.tier == UNSAFE
    assert "the project's callback `Reader` (<source>) defines `on_train_epoch_start`" in finding.fix.withheld
    quiet = source.replace("print(pl_module.summary_text)", 'print("start")')
    [finding] = [f for f in check_source(quiet.encode()).findings if f.code == "LM006"]
    assert finding.tier == PROVEN


def test_the_matrix_truth_of_the_calls():
    """The truth of a ``calls`` row: for each stage epoch of the run, in order, the recorded hooks the page's class
    defines that 1.4.9 called beside it, as ``[edge, stage]``; a predict epoch calls none."""
    from migration_guide.scenarios import space, truth

    recipe = next(r for r in space.load_space().recipes if r.id == "rewrite_callback_on_epoch_start_end")
    events = [
        {"hook": "on_validation_epoch_start", "stage": "sanity_check"},
        {"hook": "on_validation_epoch_end", "stage": "sanity_check"},
        {"hook": "on_train_epoch_start", "stage": "train"},
        {"hook": "on_train_epoch_end", "stage": "train"},
        {"hook": "on_predict_epoch_start", "stage": "predict"},
        {"hook": "on_predict_epoch_end", "stage": "predict"},
    ]
    assert truth.stageless_calls(recipe, space.ROOT / recipe.page, events) == [
        ["start", "sanity_check"],
        ["end", "sanity_check"],
        ["start", "train"],
        ["end", "train"],
    ]


BATCH_HOOK = """\
import pytorch_lightning as pl


class CheckSeed(pl.Callback):
    def on_batch_start(self, trainer, *args, **kwargs):
        print(trainer.global_step)
"""


def test_a_batch_hook_whose_star_arguments_take_the_new_ones_is_renamed():
    """``on_batch_start(self, trainer, *args, **kwargs)`` whose body reads neither: renamed (proven, as the rename
    of ``on_batch_start`` is), its ``*args`` taking ``pl_module, batch, batch_idx``."""
    [finding] = check_source(BATCH_HOOK.encode()).findings
    assert (finding.tier, finding.fix.shape) == (PROVEN, "callback-on-batch-start/rename")
    expected = BATCH_HOOK.replace("def on_batch_start", "def on_train_batch_start")
    assert fix(BATCH_HOOK) == expected
    assert check_source(expected.encode()).findings == []


def test_a_batch_hook_that_reads_its_star_arguments_keeps_a_marker():
    source = BATCH_HOOK.replace("print(trainer.global_step)", "print(args[0])")
    [finding] = check_source(source.encode()).findings
    assert finding.tier == "manual"


def test_the_matrix_truth_of_the_batch_hooks_calls():
    """The batch hooks' row: a ``start`` at each training batch's start, an ``end`` at its end (1.4.9 called
    ``on_batch_start`` and ``on_batch_end`` beside the training batch hooks alone); the epoch hooks' row reads the
    same events and finds its epoch calls only."""
    from migration_guide.scenarios import space, truth

    recipes = {r.id: r for r in space.load_space().recipes}
    events = [
        {"hook": "on_validation_epoch_start", "stage": "sanity_check"},
        {"hook": "on_validation_epoch_end", "stage": "sanity_check"},
        {"hook": "on_train_epoch_start", "stage": "train"},
        *({"hook": f"on_train_batch_{edge}", "stage": "train"} for _ in range(2) for edge in ("start", "end")),
        {"hook": "on_train_epoch_end", "stage": "train"},
    ]
    batches = recipes["rewrite_callback_on_batch_start_end"]
    assert truth.stageless_calls(batches, space.ROOT / batches.page, events) == [
        ["start", "train"],
        ["end", "train"],
        ["start", "train"],
        ["end", "train"],
    ]
    epochs = recipes["rewrite_callback_on_epoch_start_end"]
    assert truth.stageless_calls(epochs, space.ROOT / epochs.page, events) == [
        ["start", "sanity_check"],
        ["end", "sanity_check"],
        ["start", "train"],
        ["end", "train"],
    ]


def test_the_added_hooks_keep_a_blank_line_above_the_next_method():
    """The next method has no blank line above it of its own -- the old hook's last line holds spaces alone (a
    notebook's cell in phlippe/uvadlc_notebooks), or the class has none between methods: the added hooks leave one
    above it, not glued to their last line."""
    for tail in ("            print(1)\n            \n", "            print(1)\n"):
        source = (
            "import pytorch_lightning as pl\n\n\nclass CB(pl.Callback):\n"
            "    def on_epoch_end(self, trainer, pl_module):\n        if trainer.current_epoch:\n"
            f"{tail}    def other(self):\n        pass\n"
        )
        fixed = check_source(source.encode(), fix=True, unsafe_fixes=True).new_source.decode()
        assert "self._on_epoch_end(trainer, pl_module)\n\n    def other(self):" in fixed, fixed
