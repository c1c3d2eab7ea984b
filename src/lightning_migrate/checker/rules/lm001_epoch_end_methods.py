"""LM001: the epoch-end methods Lightning 2.0 removed (``training_epoch_end`` and its kin) on a LightningModule."""

from __future__ import annotations

import libcst as cst

from lightning_migrate import registry
from lightning_migrate.checker.base import (
    MODULE,
    ClassContext,
    Finding,
    Fix,
    Rule,
    manual_fix,
    named_params,
    plain_signature,
)
from lightning_migrate.checker.rules._caching import caching_fix
from lightning_migrate.checker.rules._common import (
    EPOCH_END_METHOD_PATTERNS,
    assigned_finding,
    literal_list,
    new_hook,
    removed,
)
from lightning_migrate.checker.rules._merge import MERGED, merge_fix
from lightning_migrate.checker.rules._rename import BATCH_HOOK, COUNTER, START_HOOK, rename_fix

#: the registry patterns of the rule; hooks, replacements and releases come from their entries
PATTERN_IDS = EPOCH_END_METHOD_PATTERNS
#: old hook -> registry pattern
HOOKS = {registry.get(pid).hook: pid for pid in PATTERN_IDS}
_OLD = literal_list(HOOKS)
_NEW = literal_list(new_hook(pid) for pid in PATTERN_IDS)
_STEP = registry.STEP_METHODS["train"]
#: the old method whose body the merge moves into its replacement (:mod:`._merge`), and that replacement
_MERGED = registry.get(next(iter(MERGED))).hook
_MERGED_INTO = new_hook(next(iter(MERGED)))


class EpochEndMethods(Rule):
    code = "LM001"
    name = "epoch-end-methods"
    title = f"{_OLD.replace('``', '')} on a {MODULE}"
    hooks = frozenset(HOOKS)
    owners = frozenset({MODULE})
    patterns = PATTERN_IDS
    summary = (
        f"A ``{MODULE}`` (or a subclass of one, or a mixin one derives from, in any file checked) that "
        f"defines {_OLD} -- or binds one in its class body (``{next(iter(HOOKS))} = log_epoch``)."
    )
    fix_text = (
        "The fix depends on what the body reads and what the class already defines.\n\n"
        f"- **The body never reads outputs**: the method is renamed to {_NEW} and loses the parameter -- "
        "unless the class already defines that hook, or code calls the method by its old name: **safe** for "
        f"the evaluation stages and for a ``{_MERGED}`` whose body does nothing (``pass``); "
        f"any other rename of ``{_MERGED}`` also counts the epoch's batches in "
        f"``self.{COUNTER}`` (made in ``__init__``, reset in ``{START_HOOK}``, counted in ``{BATCH_HOOK}``) "
        "and returns at once when it counted none, where the old method was skipped "
        "(:claim:`old-training-epoch-end-skipped-without-batches`; **proven**: a row runs the renamed module). "
        "Either is **unsafe** where a callback of the checked files defines the new hook and may read the "
        "module, as for the caching rewrite below (:claim:`plain-callbacks-before-module-epoch-ends`).\n"
        f"- **The class already defines {_MERGED_INTO}(self) beside {_MERGED}**: the old method's body goes "
        f"at the head of ``{_MERGED_INTO}``, before its own code, in the order of the recorded hook calls, "
        "inside an ``if`` on the same count of the epoch's batches "
        "(**proven**: a row runs the "
        "merged module); it stays **manual** where the joined bodies could run otherwise than the two calls did "
        "(a ``return`` in the old body, a local name both use, a subclass defining either).\n"
        "- **The body reads outputs**: **proven** when the rewrite's shape is proven (its runs give "
        "the values the old code gave in the recorded runs, in every Trainer configuration it declares; "
        "plain ``--fix`` applies it; a shape not proven "
        "is **unsafe**, opt-in with ``--unsafe-fixes``): "
        "module-side caching. The class "
        "gets a cache (``self.<step>_outputs``, created in ``__init__``, which is added when the class has none). "
        f"In training, ``{_STEP}`` appends what it returns, before each ``return`` (a step of the class's own "
        "that calls the inherited one is added when the class has none), as the module-side recipe does: a dict "
        '(a bare loss becomes ``{"loss": loss}``), detached, nothing for ``None``; the renamed hook divides the '
        "loss by ``accumulate_grad_batches`` under automatic optimization, or keeps it whole, as the release did "
        "(:claim:`old-list-loss-whole-then-divided`). In validation and test, the class's own step appends "
        "what it returns, before each ``return``, except ``None``, to its dataloader's list. Where the class "
        "inherits its step (or its step takes other parameters than ``batch, batch_idx, dataloader_idx=0``, "
        "binds ``dataloader_idx`` again, is decorated, returns inside a ``try`` or is called from other code), "
        "the rewrite appends each batch's "
        "``outputs`` in the stage's batch-end hook instead. The renamed hook starts by taking the cache as "
        "``outputs`` and clearing it. "
        "The rest of the body is unchanged (:claim:`training-outputs-wrapped-and-detached`; "
        ":claim:`validation-outputs-skipped-none`). In training, each step first adds its entry to the cache, "
        "and the renamed hook returns at once in an epoch in which no step ran "
        "(:claim:`old-training-epoch-end-skipped-without-batches`).\n"
        "- **Where a rewrite is held back**: a rewrite the checker cannot prove is "
        "**unsafe**: it is "
        "applied only when asked for, and otherwise a marker says so. The rewrite is **unsafe** too where a "
        "callback of the checked files defines the epoch-end hook the rewrite moves the code into and may read "
        "the module there: any use of its ``trainer`` or module parameter counts (``trainer.current_epoch`` "
        "too), as does a call of one of its own methods; a hook that uses neither, as the callback-side recipe's "
        "does, does not; a hook that keeps the module (in an attribute, an item or by a call) for later counts. "
        "So does a callback imported from the ``lightning`` package and made in the checked files whose class "
        "defines that hook, a progress bar excepted. The marker names the callback "
        "(:claim:`plain-callbacks-before-module-epoch-ends`) -- unless the moved code changes nothing outside its "
        "call (it computes a value and returns it, naming neither ``self`` nor a function that could change "
        "anything). **manual** where the checker has "
        "no proven rewrite for the class (the marker names which case): a step-end method that does more with each "
        "output than hand it, or an item of it, to ``self.log``, ``self.log_dict`` or ``print`` and return it; a "
        f"batch-end method defined in a base class or a subclass; other parameters; a ``{_STEP}`` that is "
        "decorated, returns inside a ``try``, is called from other code, or is run more than once a step by the "
        "optimizer's closure."
    )
    example = """\
import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self(batch).sum()
        return loss

    def training_epoch_end(self, outputs):
        # log once per epoch
        self.log("epoch", float(self.current_epoch))
"""

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        pattern_id = HOOKS[func.name.value]
        replacement = new_hook(pattern_id)
        message = removed(pattern_id, func)
        params = [param.name.value for param in named_params(func)[1:]]
        used = [name for name in params if ctx.reads(func, name)]
        if ctx.binds(replacement) is not None:
            made = merge_fix(ctx, func, pattern_id, replacement) if not used else f"the body reads {used[0]}"
            if isinstance(made, Fix):
                fix = made
                message += f" ({ctx.binds(replacement)}: its body goes at the head of it)"
            else:
                fix = manual_fix(self.code, f"merge into the existing {replacement}: {made}")
                message += f" ({ctx.binds(replacement)}: merge by hand)"
        elif not used and plain_signature(func):
            fix = rename_fix(ctx, func, pattern_id, replacement, params)
        else:
            made = caching_fix(ctx, func, pattern_id, 1)
            why = f"the body reads {used[0]}; no caching rewrite" if used else "no automatic rewrite"
            fix = made if isinstance(made, Fix) else manual_fix(self.code, f"{why}: {made}")
        yield Finding(self.code, message, (pattern_id,), fix=fix)

    def check_assigned(self, ctx: ClassContext, name: str, value: str | None = None):
        pattern_id = HOOKS[name]
        yield assigned_finding(self.code, pattern_id, name, f"define {new_hook(pattern_id)}(self) instead")
