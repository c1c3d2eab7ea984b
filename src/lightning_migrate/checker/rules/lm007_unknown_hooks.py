"""LM007: a method of a Lightning class that looks like a hook but is none, so Lightning never calls it."""

from __future__ import annotations

import difflib
import functools
import re

import libcst as cst

from lightning_migrate import hook_names
from lightning_migrate.checker.core import (
    CALLBACK,
    MODULE,
    RULES,
    ClassContext,
    Finding,
    Rule,
    manual_fix,
    register,
)
from lightning_migrate.checker.rules._common import signature

#: What a hook name looks like: the epoch, batch and step events Lightning's hooks are named after.
HOOK_LIKE = re.compile(r"^(?:on_)?[a-z]+(?:_[a-z]+)*_(?:epoch_(?:start|end)|batch_(?:start|end)|step_end)$")


#: Words users write for the words in Lightning's hook names (spelling, not facts about Lightning).
SYNONYMS = {"training": "train", "val": "validation", "valid": "validation", "begin": "start", "eval": "validation"}


def nearest_hook(name: str, hooks: list[str]) -> str | None:
    """The real hook ``name`` most likely means: the same words spelt Lightning's way (``on_val_batch_end`` ->
    ``on_validation_batch_end``, ``predict_epoch_end`` -> ``on_predict_epoch_end``), else the closest by
    :func:`difflib.get_close_matches`; ``None`` when nothing is close."""
    words = [SYNONYMS.get(word, word) for word in name.split("_")]
    for candidate in ("_".join(words), "on_" + "_".join(words)):
        if candidate in hooks:
            return candidate
    close = difflib.get_close_matches(name, hooks, n=1, cutoff=0.6)
    return close[0] if close else None


@functools.cache
def recorded() -> dict:
    """The hook names recorded from Lightning (:mod:`lightning_migrate.hook_names`)."""
    return hook_names.load()


@register
class UnknownHooks(Rule):
    code = "LM007"
    name = "unknown-hooks"
    title = "methods named like a hook that Lightning does not have (misspelt, or removed without a trace)"
    owners = frozenset({MODULE, CALLBACK})
    summary = (
        "A method of a ``LightningModule`` or ``Callback`` whose name looks like an epoch, batch or step hook "
        "(``..._epoch_end``, ``..._batch_start``, ``..._step_end``) but is not a name of the installed Lightning's "
        "classes -- ``on_training_epoch_end``, ``predict_epoch_end`` -- and that nothing in the project calls: "
        "its code never runs (:claim:`unknown-names-never-called`). The message names the nearest real hook. The real "
        "names are recorded from Lightning's ``LightningModule``, ``Callback`` and hook classes, not typed by hand; "
        "names other rules cover are left to them."
    )
    fix_text = (
        "**manual**: a marker comment names the nearest real hook; rename the method to it and check its "
        "parameters against that hook's signature."
    )
    example = """\
import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self(batch).sum()

    def on_training_epoch_end(self):
        print("epoch done")
"""
    #: reported only when no code in the project uses the name (a method the project calls is not dead)
    never_called = True
    #: renaming would make Lightning start calling code that never ran: a change of behaviour, so never automatic
    fixable = False

    def matches(self, name: str, kind: str) -> bool:
        names = recorded()[kind]
        if name in names["names"] or not HOOK_LIKE.match(name):
            return False
        return not any(name in rule.hooks and kind in rule.owners for rule in RULES.values() if rule is not self)

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        hook = func.name.value
        if hook in recorded()["classes"].get(ctx.via or "", ()):
            return  # a method of the Lightning class it derives from (BasePredictionWriter.write_on_epoch_end, ...)
        nearest = nearest_hook(hook, recorded()[ctx.kind]["hooks"])
        lightning = recorded()["lightning"]
        message = f"`{signature(func)}` is not a {ctx.kind} hook of Lightning {lightning['version']}: never called"
        what = "never called"
        if nearest:
            message += f"; did you mean `{nearest}`?"
            what = f"never called: did you mean {nearest}"
        yield Finding(self.code, message, (), fix=manual_fix(self.code, what))
