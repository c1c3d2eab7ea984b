"""Helpers of several rules: messages from the registry."""

from __future__ import annotations

import libcst as cst

from lightning_migrate import registry
from lightning_migrate.checker.base import ClassContext, Finding, manual_fix

#: the registry patterns of LM001 (``training_epoch_end`` and its kin), whose rewrites other rules must not cross
EPOCH_END_METHOD_PATTERNS = ("training-epoch-end", "validation-epoch-end", "test-epoch-end")


def new_hook(pattern_id: str) -> str:
    """The name of the hook that replaces a registry pattern's (``on_train_epoch_end`` for ``training-epoch-end``).

    Raises:
        ValueError: the pattern has no one-to-one replacement (``new_signature`` is ``None``).
    """
    new_signature = registry.get(pattern_id).new_signature
    if new_signature is None:
        raise ValueError(f"{pattern_id}: the registry gives no replacement hook")
    return new_signature.partition("(")[0]


def new_params(pattern_id: str) -> list[str]:
    """The parameter names of the registry's ``new_signature`` of a pattern, ``self`` included."""
    signature = registry.get(pattern_id).new_signature or ""
    inside = signature.partition("(")[2].rpartition(")")[0]
    return [part.split("=")[0].split(":")[0].strip() for part in inside.split(",") if part.strip()]


def by_hook(pattern_ids: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """``{(hook, owner): pattern id}`` of the given registry patterns (``owner``: ``LightningModule``/``Callback``)."""
    return {(registry.get(pid).hook, registry.get(pid).owner): pid for pid in pattern_ids}


def literal_list(names) -> str:
    """``a``, ``b`` and ``c`` (reST literals) of names, in their order."""
    names = [f"``{name}``" for name in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def plain(rst: str) -> str:
    """reST inline literals as plain backticks: the registry's text, fit for a terminal."""
    return rst.replace("``", "`")


def signature(func: cst.FunctionDef) -> str:
    """``name(params)`` as the user's code writes it, on one line (comments and line breaks left out)."""
    code = cst.Module([]).code_for_node
    params = func.params
    parts: list[str] = []

    def one(param: cst.Param, star: str = "") -> str:
        text = star + param.name.value
        if param.annotation is not None:
            text += ": " + code(param.annotation.annotation)
        if param.default is not None:
            text += (" = " if param.annotation is not None else "=") + code(param.default)
        return text

    parts += [one(p) for p in params.posonly_params]
    if params.posonly_params:
        parts.append("/")
    parts += [one(p) for p in params.params]
    if isinstance(params.star_arg, cst.Param):
        parts.append(one(params.star_arg, "*"))
    elif params.kwonly_params:
        parts.append("*")
    parts += [one(p) for p in params.kwonly_params]
    if params.star_kwarg is not None:
        parts.append(one(params.star_kwarg, "**"))
    return " ".join(f"{func.name.value}({', '.join(parts)})".split())


def removed(pattern_id: str, func: cst.FunctionDef | None = None, bare: bool = False) -> str:
    """``"<signature> was removed in Lightning <version>: <replacement>"``, from the registry entry; the signature
    is the user's own (``func``) when given, else the registry's old signature; ``bare`` leaves it out."""
    pattern = registry.get(pattern_id)
    shown = signature(func) if func is not None else pattern.old_signature
    text = f"was removed in Lightning {pattern.removed_in}: {plain(pattern.replacement)}"
    return text if bare else f"`{shown}` {text}"


def assigned_finding(code: str, pattern_id: str, name: str, what: str) -> Finding:
    """The finding of a removed hook bound in a class body (``name = some_function``): the registry's message, and
    a marker -- the function is defined elsewhere, so nothing is rewritten -- saying ``what`` to do."""
    return Finding(
        code,
        f"`{name}` (assigned in the class body) {removed(pattern_id, bare=True)}",
        (pattern_id,),
        fix=manual_fix(code, f"assigned in the class body: {what}"),
    )


def default_zero(func: cst.FunctionDef, index: int) -> cst.FunctionDef:
    """``func`` with the positional parameter at ``index`` (``self`` is 0) defaulting to ``0``."""
    params = func.params
    posonly = len(params.posonly_params)
    seq = list(params.posonly_params if index < posonly else params.params)
    at = index if index < posonly else index - posonly
    param = seq[at]
    space = cst.SimpleWhitespace(" " if param.annotation is not None else "")
    seq[at] = param.with_changes(
        default=cst.Integer("0"), equal=cst.AssignEqual(whitespace_before=space, whitespace_after=space)
    )
    attr = "posonly_params" if index < posonly else "params"
    return func.with_changes(params=params.with_changes(**{attr: seq}))


def subclass_defines(ctx: ClassContext, method: str) -> bool:
    """Whether a class deriving from the class defines ``method``: in the same file, or in another file of the
    project."""
    file = ctx.file
    project, info = file.project, file.info
    for name, methods in info.methods.items():
        if method in methods and name != ctx.name:
            if any((a.name, c) == (info.name, ctx.name) for a, c in project.ancestors(info, info.classes[name])):
                return True
    return (
        file.path is not None
        and file.path in project.name_of
        and bool(project.subclasses_defining(info, ctx.name, method))
    )
