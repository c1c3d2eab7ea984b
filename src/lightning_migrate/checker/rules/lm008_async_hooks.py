"""LM008: a hook of a Lightning class written ``async def``: calling it only makes a coroutine, whose body runs only
where something awaits it (see the rule's summary)."""

from __future__ import annotations

import libcst as cst

from lightning_migrate import hook_names
from lightning_migrate.checker.base import CALLBACK, MODULE, ClassContext, Finding, Rule, manual_fix
from lightning_migrate.checker.rules._common import signature


class AsyncHooks(Rule):
    code = "LM008"
    name = "async-hooks"
    title = "hooks written async def"
    owners = frozenset({MODULE, CALLBACK})
    summary = (
        f"A method of a ``{MODULE}`` or ``{CALLBACK}`` written ``async def`` whose name is one of the hooks "
        "Lightning calls (recorded from the installed Lightning's classes, not typed). Calling an ``async def`` "
        "function only makes a coroutine: where nothing awaits it, its body never runs, and Python warns, at most, "
        "that a coroutine was never awaited. Hooks other rules report (an old "
        "epoch-end hook written ``async def``) are left to them; their marker says the same."
    )
    fix_text = (
        "**manual**: a marker comment says why; make the hook a plain ``def`` and run what it awaited "
        "synchronously (``asyncio.run`` in the hook, or a thread the hook starts)."
    )
    example = """\
import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self(batch).sum()

    async def on_validation_epoch_end(self):
        print("validation done")
"""
    #: making the hook a plain ``def`` makes its body run for the first time: a change of behaviour, never automatic
    fixable = False
    #: a file with such a hook holds these bytes (the byte prefilter)
    name_fragments = ("async def",)

    def applies(self, name: str, kind: str) -> bool:
        """Whether an ``async def`` named ``name`` in a class of ``kind`` is a hook Lightning calls."""
        return name in hook_names.load()[kind]["hooks"]

    def check(self, ctx: ClassContext, func: cst.FunctionDef):
        if func.asynchronous is None or not self.applies(func.name.value, ctx.kind):
            return
        message = f"`async def {signature(func)}`: a hook written as a coroutine function (see the rule's page)"
        yield Finding(self.code, message, (), fix=manual_fix(self.code, "`async def`: a coroutine function"))
