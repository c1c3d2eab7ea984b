"""LM007: a method of a Lightning class that looks like a hook but is none, so Lightning never calls it."""

from __future__ import annotations

import difflib
import functools
import re

import libcst as cst

from lightning_migrate import hook_names
from lightning_migrate.checker.base import (
    CALLBACK,
    MODULE,
    ClassContext,
    Finding,
    Rule,
    manual_fix,
)
from lightning_migrate.checker.rules._common import signature

#: The events Lightning's hooks are named after: a hook-like name ends with one of them.
EVENTS = ("_epoch_start", "_epoch_end", "_batch_start", "_batch_end", "_step_end")
#: What a hook name looks like: words joined by underscores, ending with an event.
HOOK_LIKE = re.compile(r"^(?:on_)?[a-z]+(?:_[a-z]+)*(?:" + "|".join(EVENTS) + r")$")


#: Words users write for the words in Lightning's hook names (spelling, not facts about Lightning).
SYNONYMS = {"training": "train", "val": "validation", "valid": "validation", "begin": "start", "eval": "validation"}


def same_words(name: str, hooks: list[str]) -> str | None:
    """The real hook that is ``name``'s words spelt Lightning's way (``on_val_batch_end`` ->
    ``on_validation_batch_end``, ``predict_epoch_end`` -> ``on_predict_epoch_end``), or ``None``."""
    words = [SYNONYMS.get(word, word) for word in name.split("_")]
    for candidate in ("_".join(words), "on_" + "_".join(words)):
        if candidate in hooks:
            return candidate
    return None


def nearest_hook(name: str, hooks: list[str]) -> str | None:
    """The real hook ``name`` most likely means: :func:`same_words`, else the closest by
    :func:`difflib.get_close_matches`; ``None`` when nothing is close."""
    close = difflib.get_close_matches(name, hooks, n=1, cutoff=0.6)
    return same_words(name, hooks) or (close[0] if close else None)


@functools.cache
def recorded() -> dict:
    """The hook names recorded from Lightning (:mod:`lightning_migrate.hook_names`)."""
    return hook_names.load()


def removed() -> dict:
    """The hooks an old release's recorded hook classes had and the installed release's lack
    (:func:`lightning_migrate.hook_names.load_removed`)."""
    return hook_names.load_removed()


class UnknownHooks(Rule):
    code = "LM007"
    name = "unknown-hooks"
    title = "methods named like a hook but matching none of its names (misspelt, or removed without a trace)"
    owners = frozenset({MODULE, CALLBACK})
    summary = (
        f"A method of a ``{MODULE}`` or ``{CALLBACK}`` whose name looks like an epoch, batch or step hook "
        "(``..._epoch_end``, ``..._batch_start``, ``..._step_end``) but is not a name of the installed Lightning's "
        "classes -- ``on_training_epoch_end``, ``predict_epoch_end`` -- and that nothing in the project calls. "
        "The recorded runs of removed names of that kind: :claim:`unknown-names-never-called`. The message names the "
        "nearest real hook. The real "
        f"names are recorded from Lightning's ``{MODULE}``, ``{CALLBACK}`` and hook classes, not typed by hand; "
        "names other rules cover are left to them. A method named after a hook of an old release's recorded hook "
        "classes that the installed release's lack (``on_pretrain_routine_start``, ``on_init_start``, "
        "``on_train_dataloader``) is reported too, whatever its name looks like; the message names those releases. "
        "A name that is a real "
        "hook's own words spelt another way (``predict_epoch_end``, ``training_batch_end``) is reported even when "
        "the project calls it itself, and the message says where the project does; it is left alone only when the "
        'project builds hook names at run time (``getattr(self, f"{stage}_epoch_end")``), as its own hooks.'
    )
    why = ":claim:`unknown-names-never-called`; :claim:`removed-epoch-end-hooks-refused`."
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
    #: renaming would make Lightning start calling code that never ran: a change of behaviour, so never automatic
    fixable = False
    name_fragments = (*EVENTS, *sorted({name for kind in (MODULE, CALLBACK) for name in removed()[kind]}))

    def matches(self, name: str, kind: str) -> bool:
        return name not in recorded()[kind]["names"] and (bool(HOOK_LIKE.match(name)) or name in removed()[kind])

    def check_assigned(self, ctx: ClassContext, name: str, value: str | None = None):
        """A removed hook bound in the class body (``on_init_start = log_start``): never called either."""
        had = removed()[ctx.kind].get(name)
        if not had or name in recorded()["classes"].get(ctx.via or "", ()):
            return
        if ctx.file.caller(name, (), dynamic=True, name_uses=False) is not None:
            return  # the project builds hook names at run time: its own hooks
        version = recorded()["lightning"]["version"]
        releases = " and ".join(had)
        message = (
            f"`{name}` (assigned in the class body) is not among the {ctx.kind} hooks recorded from Lightning "
            f"{version}; it is a hook of the recorded {releases}: see Lightning's CHANGELOG for its successor"
        )
        what = f"not a hook of Lightning {version}, a hook of the recorded {releases}: see Lightning's CHANGELOG"
        yield Finding(self.code, message, (), fix=manual_fix(self.code, what))

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        hook = func.name.value
        if hook in recorded()["classes"].get(ctx.via or "", ()):
            return  # a method of the Lightning class it derives from (BasePredictionWriter.write_on_epoch_end, ...)
        hooks = recorded()[ctx.kind]["hooks"]
        exact = same_words(hook, hooks)
        if ctx.file.caller(hook, (), dynamic=True, name_uses=False) is not None:
            return  # the project builds hook names at run time: its own hooks
        called = ctx.file.use_site(hook)
        if called is not None and exact is None:
            return  # a method the project calls is not dead
        had = removed()[ctx.kind].get(hook)
        nearest = None if had else exact or nearest_hook(hook, hooks)
        lightning = recorded()["lightning"]
        version = lightning["version"]
        message = f"`{signature(func)}` is not among the {ctx.kind} hooks recorded from Lightning {version}"
        what = f"not a hook of Lightning {version}"
        if had:
            message += (
                f"; it is a hook of the recorded {' and '.join(had)}: see Lightning's CHANGELOG for its successor"
            )
            what += f", a hook of the recorded {' and '.join(had)}: see Lightning's CHANGELOG"
        if called is not None:
            message += f"; the project calls it ({called})"
        if nearest:
            message += f"; did you mean `{nearest}`?"
            what += f": did you mean {nearest}"
        yield Finding(self.code, message, (), fix=manual_fix(self.code, what))
