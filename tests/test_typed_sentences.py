"""The guard for typed sentences: rendered prose that speaks of Lightning's behaviour outside a claim.

The site's rule is that what it says about Lightning comes from running Lightning: a sentence about what Lightning
(a hook, the Trainer, a callback of Lightning's) does is a claim, rendered from ``data/claims.toml`` by the
``:claim:`` role and checked against its evidence at every build (``docs/_ext/guide/claims.py``), or it is rendered
from records. This guard reads the built HTML's prose -- what a reader reads -- and flags every sentence, outside a
claim and outside what the renderers of records wrote, in which a *name* is followed, within a few words, by a
*behaviour verb*:

- the names: Lightning's hook names as recorded from Lightning (``src/lightning_migrate/data/hook_names.json``: every
  ``LightningModule`` and ``Callback`` hook with ``_`` in its name, and the callback classes Lightning exports), the
  old hooks of the registry, the ``Trainer`` entry points of the registry (``trainer.fit``, ...), and the words
  ``Lightning`` and ``Trainer``;
- the verbs: :data:`VERBS`;

and every sentence that names the default of a ``Trainer`` argument (:data:`DEFAULT_NAMED`).

A finding names the source file and line of the sentence (found by its words in the page's source; the built page
otherwise). Run it on a build: ``python tests/test_typed_sentences.py _build/html``.
"""

from __future__ import annotations

import ast
import html.parser
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from lightning_migrate import hook_names, registry  # noqa: E402
from migration_guide import probes  # noqa: E402

#: What Lightning (the library, the Trainer, a callback class of Lightning's) or a hook's caller does: behaviour
#: verbs, each stem with its inflections (:func:`_inflections`). Wide on purpose: a contributor's verb is not the
#: guard's; a sentence about the reader's own code that uses one reads better as an instruction ("Append ...").
VERB_STEMS = (
    "abort accept accumulate allow append apply average become build call cast catch check clear clone "
    "collect compute contain convert copy crash create deprecate detach detect disable discard divide drop emit "
    "enable execute expect fail fill find fire flush follow free gather get give hand hold ignore include infer "
    "invoke keep let load log lose move multiply notice pass precede print produce raise receive reduce refuse "
    "reject reload remain remove repeat replace report require reset restart restore resume return run "
    "save scale send shard shuffle skip sort split stay stop store sum support sync take throw treat trigger "
    "unwrap update wait warn wrap write yield "
    "block compile deadlock die hang pad recompile rename vanish disappear introduce cache read survive outlive"
).split()
IRREGULAR = (
    "released releasing ran caught gave given got gotten held kept lost sent threw thrown hung emptied empties built"
).split()


def _inflections(stem: str) -> set[str]:
    """``stem`` and its third person, past and gerund forms, spelled as English spells them."""
    forms = {stem}
    if stem.endswith(("s", "sh", "ch", "x", "z")):
        forms.add(stem + "es")
    elif stem.endswith("y") and stem[-2:-1] not in "aeiou":
        forms |= {stem[:-1] + "ies", stem[:-1] + "ied"}
    else:
        forms.add(stem + "s")
    if stem.endswith("e"):
        forms |= {stem + "d", stem[:-1] + "ing"}
    elif stem.endswith("y"):
        forms |= {stem + "ing"} | ({stem + "ed"} if stem[-2:-1] in "aeiou" else set())
    else:
        double = (
            stem[-1]
            if len(stem) > 2 and stem[-1] in "bdglmnpt" and stem[-2] in "aeiou" and stem[-3] not in "aeiou"
            else ""
        )
        forms |= {stem + double + "ed", stem + double + "ing", stem + "ed", stem + "ing"}
    return forms


VERBS = re.compile(
    r"\b(?:"
    + "|".join(sorted({f for stem in VERB_STEMS for f in _inflections(stem)} | set(IRREGULAR), key=len, reverse=True))
    + r")\b"
)
#: What a hook itself does is the reader's code ("``training_step`` returns the loss", "clearing in
#: ``on_train_epoch_end``"): these verbs say nothing of Lightning next to a hook name.
READER_VERBS = (
    "return append cache clear collect compute log read reset save store sum average update write print take "
    "accumulate keep hold gather become reduce check fill clone cast convert sort split shuffle scale multiply "
    "divide use build move apply rename pad"
).split()
#: Third-person and past forms that say what something does or did, never an instruction to the reader: with a
#: name of Lightning, a hook or a thing whose behaviour the site states (:data:`CONCEPTS`), a sentence holding one
#: states a behaviour ("``MeanMetric`` weights each batch", "each process sees its shard", "the loss is divided").
BEHAVIOUR_FORMS = (
    "sees saw seen happens happened counts counted shares shared weights adds added monitors monitored "
    "differs differed reaches reached averages averaged divides divided multiplies multiplied scales scaled reduces "
    "reduced gathers gathered skips skipped keeps kept holds held resets clears cleared frees freed returns returned "
    "stores stored caches cached logs logged computes computed updates updated accumulates accumulated takes took "
    "becomes became fills filled clones cloned casts converts moves moved applies applied sorts splits shuffles "
    "shuffled reads collects collected writes wrote written prints printed appends appended sums summed checks"
).split()
#: Forms of :data:`BEHAVIOUR_FORMS` that say what happens to a hook, not what its code does ("Validation happens before
#: ``on_train_epoch_end``", "``on_train_batch_end`` sees the divided loss").
HOOK_FORMS = (
    "sees saw seen happens happened shares shared weights monitors monitored differs differed reaches reached skips "
    "skipped"
).split()
#: What happens to a hook, on either side of its name ("Lightning's loop calls ``on_train_epoch_end``",
#: "``on_train_epoch_end`` receives nothing"): the verbs of :data:`VERB_STEMS` but the reader's own.
HOOK_VERBS = re.compile(
    r"\b(?:"
    + "|".join(
        sorted(
            {f for stem in VERB_STEMS if stem not in READER_VERBS for f in _inflections(stem)}
            | {"ran", "got", "gotten", "given", "gave"}
            | set(HOOK_FORMS),
            key=len,
            reverse=True,
        )
    )
    + r")\b"
)
#: Things whose behaviour the site states, Lightning's, torch's and torchmetrics' (a sentence saying what one does
#: is a claim): Lightning's loops and mechanisms, what a hook receives, torch's tensors and autograd.
CONCEPTS = [
    "the sanity check", "MeanMetric", "autograd", "inference_mode", "torch.inference_mode", "self.all_gather",
    "all_gather", "DistributedSampler", "the distributed sampler", ".detach()", ".clone()", "F.mse_loss",
    "F.cross_entropy", "the old list", "gloo", "the old hook", "the old hooks", "the old signature",
    "the old signatures", "validation loop", "the validation loop", "each process", "every process", "self.log",
    "a slice", "the prediction writer", "BoringModel's loss",
    # third round: Lightning's loops and samplers, the optimizer step, Python (what it raises when Lightning calls)
    "the loop", "the training loop", "the fit loop", "the evaluation loop", "the predict loop", "the sampler",
    "the optimizer step", "the step's output", "the step's outputs", "a step's output", "a step's outputs",
    # fourth round: autograd's own mechanisms, the old list by its longer name
    "the backward pass", "a backward pass", "the autograd graph", "grad_fn", "a saved tensor", "the saved tensors",
    "the old outputs list", "the outputs list",
]  # fmt: skip
#: The processes of a distributed run: what one does with the reader's code is the recipe's ("each rank sums its
#: losses"), what happens to one is Lightning's or torch's ("the other worker is stopped", "each rank sees its
#: shard"): read with the hooks' verbs (:data:`HOOK_VERBS`), as a hook name is.
PROCESSES = [
    "rank 0", "each rank", "every rank", "the other rank", "the other ranks", "one rank", "a worker", "one worker",
    "each worker", "every worker", "the workers", "the other worker", "a worker process", "the worker processes",
    "worker processes", "the main process", "the other process", "the other processes",
]  # fmt: skip
#: A hook named by its kind ("a callback's epoch-end hook", "the batch-end hooks"): read as a hook name is.
HOOK_KINDS = [
    "epoch-end hook", "epoch-end hooks", "batch-end hook", "batch-end hooks", "epoch-start hook", "epoch-start hooks",
    "batch-start hook", "batch-start hooks",
]  # fmt: skip
#: Lightning's callbacks named by their kind ("the monitoring callbacks refuse ..."): read with the verb right after
#: them (:func:`_immediate_verb`).
CALLBACK_KINDS = re.compile(r"\b(?:(?:a|an|the|each|every|any)\s+)?(?:monitoring|Lightning['’]s) callbacks?\b", re.I)
#: The libraries under Lightning, and its strategies, named as a subject ("DDP splits the data", "torchmetrics resets
#: the metric", "PyTorch frees the graph"): what they do is a claim as much as what Lightning does.
LIBRARIES = [
    "torch", "PyTorch", "torchmetrics", "DDP", "FSDP", "DeepSpeed", "NCCL", "torch.compile", "DDPStrategy",
    "the DDP strategy", "the strategy", "the launcher", "ddp_fork", "ddp_spawn", "Python", "gloo", "Gloo",
]  # fmt: skip
#: What a concept does: the hooks' verbs and every form of :data:`BEHAVIOUR_FORMS`.
CONCEPT_VERBS = re.compile(
    r"\b(?!replace)(?:" + HOOK_VERBS.pattern[len(r"\b(?:") : -len(r")\b")] + "|" + "|".join(BEHAVIOUR_FORMS) + r")\b"
)  # "replaces" next to a hook is the guide's replacement ("each removed hook and what replaces it")
#: Words that state a change of behaviour between releases ("no longer", "is gone"): with a name, a claim.
CHANGE = re.compile(r"\b(?:no longer|any ?more|(?:is|are|was|were) gone|went away|used to|since (?:1|2)\.)", re.I)
#: What a hook, a callback or the arguments are handed, said as what is left them ("a step that returns nothing
#: leaves a callback no outputs", "leaves outputs empty"): what Lightning passes, whatever the subject.
HANDED = re.compile(
    r"\b(?:leaves?|leaving|left|gives?|gave|given|hands?|handed|pass(?:es|ed)?)\s+"
    r"(?:(?:a|an|the|each|every|its|their)\s+)?(?:callbacks?|hooks?|modules?|outputs|batch_indices|\S+_(?:end|start))"
    r"(?:['’]s?)?\s+(?:no|nothing|empty|None|an\s+empty)\b"
    r"|\b(?:leaves?|leaving|left|makes?|made)\s+(?:the\s+)?(?:outputs|batch_indices)\s+(?:empty|None|\{\})"
)
#: A state a name is in ("autograd is off", "the list stays empty").
STATE = re.compile(
    r"\b(?:is|are|was|were|stays?|stayed|remains?|remained)\s+(?:not\s+|still\s+)?"
    r"(?:on|off|detached|attached|alive|freed|enabled|disabled)\b"
)
#: Whether a thing is there, with a release: what that release had ("before 1.5 the argument was still there").
PRESENCE = re.compile(
    r"\b(?:is|are|was|were)\s+(?:still\s+|not\s+|no\s+longer\s+)?(?:there|present|available|absent|missing)\b"
)
#: An order of events ("the callback's hook comes before the module's", "validation comes between ..."): with a
#: name of what Lightning runs (:data:`EVENTS`), the order Lightning runs them in.
ORDER = re.compile(
    r"\b(?:comes?|came|goes|went|runs?|ran|fires?|fired|happens?|happened|(?:is|are|was|were|gets?) called)\s+"
    r"(?:first|last|before|after|between|next|earlier|later|once|twice)\b"
)
#: What Lightning runs, as a sentence about order names it.
EVENTS = re.compile(
    r"\b(?:hooks?|validation|training|testing|prediction|evaluation|sanity check|callbacks?|callback['’]s|"
    r"module['’]s|loops?|epoch-end|batch-end|optimizer step)\b",
    re.I,
)
#: A release of Lightning named in a sentence (``1.x``, ``Lightning 2.0``, ``on 1.4.9``; a bare ``2.5`` is a number):
#: with a verb, what that release did.
RELEASE = re.compile(
    r"\b(?:[Ll]ightning|pytorch-lightning|[Rr]eleases?|[Ss]ince|[Bb]efore|[Aa]fter|[Uu]ntil|[Oo]n|[Ii]n|to|and)\s+"
    r"(?:[12]\.x|1\.\d{1,2}(?:\.\d+)?|2\.\d{1,2}(?:\.\d+)?)(?![\w]|\.\d)"
    r"|(?<![\w.=])[12]\.x\b"
)
#: How many words may stand between a name and its verb, on either side ("Lightning 2.x never calls", "calls the
#: module's ``on_train_epoch_end``").
GAP = 6
#: Rendered content that is not typed prose, by the class of its HTML element, each with why. Each is set by an
#: extension or by sphinx-gallery, never by a page: a page whose source sets one of these classes by hand
#: (``.. rst-class::``, ``:class:``, a MyST ``{rst-class}``, raw HTML) is itself a finding (:func:`opt_outs`), so no
#: markup switches the guard off.
NOT_PROSE = {
    "claim": "a claim: rendered from data/claims.toml and checked against its evidence at every build",
    "sphx-glr-script-out": "what an example printed, captured by sphinx-gallery",
    "from-records": "sentences the guide's extensions write from probe records and recorded runs",
    "old-hooks-table": "the reference table: the registry's changelog facts and this build's probe records",
    "old-hooks-summary": "the landing page's summary of the reference table, rendered from the probe records",
    "probe-environment": "the release the probe records came from",
    "symptom-index": "error and warning texts captured by this build",
    "symptom-quotes": "error texts captured by this build",
    "symptoms-fixed-here": "error and warning texts captured by this build",
    "compat-table": "the recorded runs of every release (data/compat/*.json)",
    "scenario-matrix": "the scenario matrix's cells, run at every build",
    "claims-table": "the list of claims itself",
    "sphx-glr-footer": "sphinx-gallery's download links",
    "headerlink": "the pilcrow of a heading link",
    "lightning-version": "the release a gallery page's output came from, read from that output",
    "related-pages": "the theme's links to the previous and next pages: their titles, read on their own pages",
    "compat-received": "what the old hooks received on a release, rendered from its recorded runs",
    "compat-texts": "the error and warning texts and outcomes each release recorded, rendered from data/compat",
    "recipe-domain": "where a recipe works: the settings of the runs that held, rendered from the matrix's results",
}
#: Code is the reader's code, not prose -- but its docstrings are prose a page shows: they are read
#: (:func:`docstrings`).
CODE = "highlight"
#: Sentences the guard may flag that are not about Lightning's behaviour, by page and a fragment of their text
#: (an empty fragment: the whole page), each with why. Keep it short: a sentence about Lightning is a claim.
ALLOWED: dict[tuple[str, str], str] = {
    ("contributing.html", ""): "the contributors' page describes the build (its extensions and checks), not Lightning",
    ("*", "Callback-side caching: replace a callback’s on_train_epoch_end(..., outputs)"): "the title of the "
    "callback-side page, wherever a link or a list names it: an instruction to the reader",
    ("*", "Callback-side caching: replace a callback's on_train_epoch_end(..., outputs)"): "the same title where "
    "Sphinx writes it without smart quotes (a card's alt text)",
    ("checker/rules/LM001.html", "The body never reads outputs: the method is renamed"): "what the checker's fix "
    "writes",
    ("examples/caching/detach_cached_tensors.html", "This page trains the same module twice"): "what the page does",
    ("examples/stages/predict_epoch_end.html", "Run trainer.predict; return the exception"): "a docstring of the "
    "page's own helper",
    ("examples/caching/callback_owned_cache.html", "(Or pass num_sanity_val_steps=0 to the Trainer"): "an "
    "instruction to the reader",
    ("examples/caching/several_losses_manual_optimization.html", "training_step appends a detached"): "what the "
    "recipe's own code does",
    (
        "examples/pitfalls/monitoring_callbacks_read_cleared_cache.html",
        "As on Module-side caching: training_step caches",
    ): "what the recipe's own code does",
    ("examples/pitfalls/monitoring_callbacks_read_cleared_cache.html", "A subclass of the callback class"): "a "
    "docstring of the page's own helper",
    ("examples/core/automatic_rewrite.html", "The module gets a cache, emptied when each epoch starts"): "what the "
    "checker's rewrite writes",
    ("examples/core/automatic_rewrite.html", "lightning-migrate --fix rewrites"): "what the checker's rewrite writes",
    ("examples/core/automatic_rewrite.html", "A module written for Lightning 1.x, saved in a file"): "the page's own "
    "old module",
    ("examples/stages/predict_epoch_end.html", "Instead of the results of a module’s on_predict_epoch_end"): "an "
    "instruction to the reader",
    ("examples/core/callback_side_caching.html", "Instead of the outputs argument of a callback’s"): "an instruction "
    "to the reader",
    ("checker/rules/LM009.html", "that 2.x removed"): "the rule's definition: its names are read from the module "
    "listings recorded from the last 1.x release and the installed one (its summary says so), not typed",
    ("checker/rules/LM009.html", "where the last 1.x release binds the name"): "the rule's definition, from the "
    "recorded module listings",
    ("checker/rules/LM009.html", "Code written for an older 1.x release is covered too"): "the rule's definition, "
    "from the module listing recorded from that release",
    ("checker/rules/LM009.html", "safe when every name the statement imports was moved"): "the fix the rule writes, "
    "from the recorded module listings",
    ("checker/index.html", "that 2.x removed"): "LM009's title in the rules table (see its page)",
    ("checker/rules/LM009.html", "Likewise when the old release itself exported"): "the rule's definition, from "
    "the recorded module listings",
    (
        "reference/compatibility.html",
        "on each 2.x release the table lists, the two replacements run",
    ): "how the page's runs were made; their results are the recorded tables below it",
    ("reference/compatibility.html", "Each replacement example of this guide, run as it is"): "how the page's runs "
    "were made; their results are the recorded table below it",
    ("examples/index.html", "Every example on these pages checks what it claims"): "what the site's examples do",
    ("examples/index.html", "Mistakes that migrated code actually makes"): "what the site's pages show",
    ("examples/pitfalls/index.html", "Mistakes that migrated code actually makes"): "what the site's pages show",
    ("reference/scenarios.html", "Open a recipe’s dropdowns"): "an instruction to the reader",
    ("examples/caching/callback_owned_cache.html", "A callback that only counts"): "a docstring of the page's own "
    "callback",
    ("checker/rules/LM008.html", "Calling an async def function only makes a coroutine"): "Python's semantics of "
    "calling an async def function (the language reference), not a behaviour of Lightning, torch or torchmetrics",
}


def names() -> tuple[list[str], list[str]]:
    """``(subjects, hooks)``: the names of Lightning itself (the words ``Lightning`` and ``Trainer``, the ``Trainer``
    entry points of the registry, the callback classes Lightning exports) and of the hooks it calls (every recorded
    ``LightningModule`` and ``Callback`` hook with ``_`` in its name, and the registry's old hooks), read from the
    recorded hook names and the registry, never typed here."""
    recorded = hook_names.load()
    callback_hooks = set(recorded["Callback"]["hooks"])
    subjects = {
        "Lightning",
        "Trainer",
        "trainer",
        "PyTorch Lightning",
        "pytorch-lightning",
    } | {  # Lightning's callback classes, not the demo modules of lightning.demos
        name
        for name, methods in recorded["classes"].items()
        if callback_hooks & set(methods) and "training_step" not in methods
    }
    subjects |= {f"{owner}.{run}" for run in registry.RUNS for owner in ("trainer", "Trainer")}
    hooks = {pattern.hook for pattern in registry.PATTERNS} | set(HOOK_KINDS)
    for kind in ("LightningModule", "Callback"):
        hooks |= {name for name in recorded[kind]["hooks"] if "_" in name}
    for name in subjects & set(recorded["classes"]):  # the methods of Lightning's callback classes
        hooks |= {method for method in recorded["classes"][name] if "_" in method}
    return sorted(subjects, key=len, reverse=True), sorted(hooks, key=len, reverse=True)


def _alternatives(words: list[str]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(word) for word in words) + r")(?!\w|\.\w)")


SUBJECTS, HOOKS = (_alternatives(group) for group in names())
CONCEPT_NAMES = re.compile(_alternatives(sorted(CONCEPTS, key=len, reverse=True)).pattern, re.I)
PROCESS_NAMES = re.compile(_alternatives(sorted(PROCESSES, key=len, reverse=True)).pattern, re.I)
LIBRARY_NAMES = re.compile(_alternatives(sorted(LIBRARIES, key=len, reverse=True)).pattern, re.I)
#: Forms that say what Lightning or a library does to processes and runs ("the launcher starts one process per
#: device"): verbs of a subject only (a run of the reader's "starts" and "ends"). The subjects' verbs: every behaviour
#: verb, the forms of :data:`HOOK_FORMS` ("``ModelCheckpoint`` monitors ...") and these.
SUBJECT_FORMS = "starts started spawns spawned forks forked launches launched".split()
#: A verb that stands for another ("Lightning still never does", "as the old list did"): right after a name, what
#: the name does (:func:`_immediate_verb`).
PRO_VERBS = {"does", "did", "doesn't", "didn't", "doesn’t", "didn’t"}
SUBJECT_VERBS = re.compile(
    VERBS.pattern[: -len(r")\b")] + "|" + "|".join([*HOOK_FORMS, *SUBJECT_FORMS, "monitor"]) + r")(?![\w’'])"
)
#: A path into Lightning's or torch's API, named as a subject: an attribute of the trainer
#: (``self.trainer.strategy.reduce``, ``trainer.sanity_checking``), a function of torch (``torch.stack``,
#: ``F.mse_loss``) or a tensor's method (``loss.detach()``). The entry points (``trainer.fit``) are Lightning's names.
API_PATHS = re.compile(
    r"(?<![\w.])(?:self\.trainer(?:\.\w+)+|trainer\.(?!(?:fit|validate|test|predict)\b)\w+(?:\.\w+)*"
    r"|(?:torch|F|nn)\.\w+(?:\.\w+)*(?:\(\))?|\w+(?:\.\w+)*\.(?:detach|clone|item)\(\)(?:\.\w+\(\))*)(?![\w(])"
)
#: The arguments of Lightning's own that a page may set by name, written as a setting (``sync_dist=True``): a setting
#: that does something ("``sync_dist=True`` averages the values") is Lightning doing it.
KEYWORDS = re.compile(
    r"(?<![\w.])(?:"
    + "|".join(sorted({*probes.TRAINER_DEFAULTS, "sync_dist", "on_epoch", "on_step", "return_predictions",
                       "use_distributed_sampler", "write_interval", "ckpt_path", "reduce_fx"}, key=len, reverse=True))
    + r")=\S+"
)  # fmt: skip
#: The arguments Lightning hands a hook, named as a subject ("outputs is built from ..."): read with the hooks' verbs.
ARGUMENTS = re.compile(r"(?<![\w.\[\"'])(?:outputs|batch_indices|results)(?![\w\[=.])")
#: Words between a name and its verb that do not stop the verb being the name's ("torch.stack still needs").
ADVERBS = {"still", "never", "also", "only", "then", "itself", "always", "just", "now", "first", "silently", "itself,"}
#: Plural nouns that follow a name as a compound ("the Lightning docs", "torch functions"), not as its verb.
PLURAL_NOUNS = set(
    "docs users releases hooks classes callbacks modules examples versions pages logs metrics tensors errors warnings "
    "strategies loops defaults internals steps batches settings calls runs values processes ranks workers arguments "
    "parameters loaders dataloaders outputs results names utilities tests notes issues changes options configurations "
    "objects functions packages semantics wheels libraries threads modes states".split()
)
#: Words before a name that make it a modifier or an object, not a subject ("the Lightning docs", "with torch.cat").
MODIFIER_BEFORE = {"the", "a", "an", "your", "its", "their", "this", "that", "each", "every", "of", "with", "to",
                   "from", "by", "in", "on", "for", "under", "like", "unlike", "than", "via", "own", "whatever",
                   "more", "many", "some", "whether"}  # fmt: skip


def _immediate_verb(
    part: str,
    names_: re.Pattern[str],
    closed: re.Pattern[str] | None = None,
    past: bool = False,
    copula: bool = False,
    open_: bool = True,
) -> bool:
    """Whether a name of ``names_`` is the subject of the verb right after it (adverbs aside): a passive ("is
    given", "is kept for it"), a verb of ``closed``, one that stands for another (:data:`PRO_VERBS`: "Lightning
    still never does"), or a third-person form the closed lists do not hold ("as Lightning recommends", "``torch.stack``
    needs", "``trainer.sanity_checking`` tells"); with ``past`` a past form ("after Lightning prepared it"), with
    ``copula`` a statement of what it is ("``.detach()`` is a view", "``self.trainer.val_dataloaders`` is one loader
    or a list"); without ``open_``, only the closed verbs and a passive. A name after an article, a preposition, a
    question word or a verb is not a subject ("the Lightning docs", "with ``torch.cat``", "whether ``outputs`` ...",
    "a callback that reads ``outputs``"), nor one followed by a comma or a colon."""
    for match in names_.finditer(part):
        before = part[: match.start()].split()
        if before and (before[-1].lower().strip("(") in MODIFIER_BEFORE | EMBEDDED or VERBS.fullmatch(before[-1])):
            continue  # a modifier ("the Lightning docs"), an object ("a callback that reads outputs skips ...")
        if part[match.end() : match.end() + 2] in ("'s", "’s") or part[match.end() : match.end() + 1] in ",:;)":
            continue
        raw = part[match.end() :].split()
        while raw and raw[0].lower() in ADVERBS:
            raw = raw[1:]
        after = [w.strip(',;()`"“”') for w in raw]
        if not after or not re.fullmatch(r"[a-z’']+[.:;,]?", after[0]):
            continue
        word, following = after[0].rstrip(".:;,"), after[1].rstrip(".:;,") if len(after) > 1 else ""
        if word in PASSIVE and (VERBS.fullmatch(following) or following == "not" and len(after) > 2):
            return True  # "a monitoring callback is given ...", "no list of outputs is kept for it"
        if copula and word in ("is", "are", "was", "were") and following.lower() in (
            "a", "an", "the", "one", "another", "no", "only", "not"
        ):  # fmt: skip
            return True
        noun = word in NOUNS_TOO and (raw[0].endswith(":") or (len(raw) > 1 and raw[1].startswith("(")))
        if word in PRO_VERBS or (closed is not None and closed.fullmatch(word) and not noun):
            return True
        if not open_ or word in ("is", "was", "has", "this", "thus", "plus", "its", "as", "us", "yes", "yourself"):
            continue
        if word in PLURAL_NOUNS or (len(raw) > 1 and raw[1].startswith("(")):
            continue  # a compound ("the Lightning docs"), a relative clause ("the exception Lightning raised (...)")
        if (word.endswith("s") and not word.endswith(("ss", "us", "is", "'s", "’s"))) or (past and word.endswith("ed")):
            return True
    return False


#: Words before a participle that make it a verb of the sentence ("the metric is reset", "the hook gets called").
PASSIVE = {"is", "are", "was", "were", "be", "been", "being", "gets", "get", "got", "stays", "remains"}


class ProseReader(html.parser.HTMLParser):
    """Every text of a page a reader reads, one block (paragraph, list item, heading, table row, admonition
    paragraph) per entry: the article, and what templates put around it (nav, sidebars and scripts aside, which
    repeat the pages' titles); with what :data:`NOT_PROSE` names left out, and the docstrings of the Python code the
    page shows read as prose (:attr:`docstrings`)."""

    BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "figcaption", "caption", "tr", "blockquote",
              "summary"}  # fmt: skip
    #: Blocks that are headings: a heading opened by a question word names a topic (:func:`topic`); a dropdown's
    #: title (sphinx-design's ``<summary>``) and a rubric are headings too.
    HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6", "summary"}
    VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "col", "source"}
    SKIP_TAGS = {"script", "style", "nav", "aside", "header", "svg", "button", "form", "label", "head", "title"}
    PYTHON = re.compile(r"\bhighlight-(?:python\d?|ipython\d?|default|py)\b", re.I)

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.in_body = False
        self.skip_stack: list[int] = []  # depths at which a skipped element started
        self.depth = 0
        self.row_depth = 0  # inside a table row: its cells are one block
        self.python_depth = 0  # inside a Python code block: its docstrings are read
        self.code: list[str] | None = None
        self.blocks: list[str] = []
        self.headings: set[int] = set()  # the indices in blocks of the headings
        self.heading = False  # the current block is a heading
        self.docstrings: list[str] = []
        self.current: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        self.depth += 1
        if tag == "body":
            self.in_body = True
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        if self.python_depth == 0 and self.PYTHON.search(attributes.get("class") or ""):
            self.python_depth = self.depth
        if not self.skip_stack and (tag in self.SKIP_TAGS or classes & NOT_PROSE.keys() or tag == "pre"):
            self.skip_stack.append(self.depth)
            if tag == "pre" and self.python_depth and not classes & NOT_PROSE.keys():
                self.code = []
        if tag == "tr":
            self._flush()
            self.row_depth = self.depth
        elif tag in ("td", "th") and self.row_depth:
            self.current.append(" — ")
        elif tag in self.BLOCKS and not self.row_depth:
            self._flush()
            self.heading = tag in self.HEADINGS or "rubric" in classes

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if self.skip_stack and self.skip_stack[-1] == self.depth:
            self.skip_stack.pop()
            if self.code is not None:
                self.docstrings += docstrings("".join(self.code))
                self.code = None
        if tag == "tr" and self.row_depth == self.depth:
            self.row_depth = 0
            self._flush()
        elif tag in self.BLOCKS and not self.row_depth:
            self._flush()
        if self.python_depth == self.depth:
            self.python_depth = 0
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.code is not None:
            self.code.append(data)
        elif self.in_body and not self.skip_stack:
            self.current.append(data)
        elif self.in_body and self.skip_stack:
            self.current.append(" \x00 ")  # a claim or record stands here: the sentence goes on around it

    def _flush(self) -> None:
        text = re.sub(r"(?:\s*\x00)+\s*", " \x00 ", " ".join("".join(self.current).split()))
        if text.strip(" \x00—"):
            if self.heading:
                self.headings.add(len(self.blocks))
            self.blocks.append(text)
        self.current = []
        self.heading = False

    def close(self) -> None:
        super().close()
        self._flush()

    def title(self) -> str | None:
        """The page's title: its first heading, without the heading's link."""
        first = min(self.headings, default=None)
        return None if first is None else _plain(self.blocks[first]) or None


def _plain(block: str) -> str:
    """A block's words, without what the guard left unread (a heading's link)."""
    return " ".join(block.replace("\x00", " ").split())


#: reST inline markup in a text the guard reads at its source -- a docstring or a comment of the code a page shows,
#: a data file's reason, the registry's replacement -- where a page would have rendered it: a claim (unread, as on a
#: page), a role with a title (its title), any other role (its target), a literal or an interpreted text (its words).
CLAIM_ROLE = re.compile(r":claim:`[^`]*`")
TITLED_ROLE = re.compile(r":[\w:+.-]+:`([^`<]*?)\s*<[^`>]*>`")
ANY_ROLE = re.compile(r":[\w:+.-]+:`(!?)(~?)([^`]*)`")
LITERAL = re.compile(r"``(.+?)``|`([^`]+)`")


def unmarked(text: str) -> str:
    """``text`` with its reST inline markup (:data:`LITERAL`, :data:`ANY_ROLE`, ...) read as a page shows it: the
    guard reads "the old ``outputs`` list held the loss" as "the old outputs list held the loss", and a claim as
    the placeholder a page's claim leaves (``\\x00``)."""
    text = CLAIM_ROLE.sub(" \x00 ", text)
    text = TITLED_ROLE.sub(r"\1", text)
    text = ANY_ROLE.sub(lambda match: match[3].rsplit(".", 1)[-1] if match[2] else match[3], text)  # ~a.b: b
    return LITERAL.sub(lambda match: match[1] or match[2], text)


def docstrings(code: str) -> list[str]:
    """The docstrings (module, class, function) and the comments (:func:`comments`) of a block of Python code a page
    shows, each as one line of prose, its reST markup read as a page renders it (:func:`unmarked`); none when the
    block is not Python that parses (a shell line, a fragment)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node)
            if text:
                found.append(" ".join(unmarked(text).split()))
    return found + comments(code)


def comments(code: str) -> list[str]:
    """The comments of a block of Python code a page shows, each run of consecutive comment lines as one line of
    prose (what the reader reads beside the code, as a docstring)."""
    import io
    import tokenize

    runs: list[list[str]] = []
    last = -2
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                text = token.string.lstrip("#").strip()
                if token.start[0] == last + 1 and runs:
                    runs[-1].append(text)
                else:
                    runs.append([text])
                last = token.start[0]
    except (tokenize.TokenError, SyntaxError):
        return []
    return [" ".join(unmarked(" ".join(lines)).split()) for lines in runs if " ".join(lines).strip()]


SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z`(\"“‘])")
#: A word that opens a topic when it opens a heading or a lead-in ("What ``on_train_batch_end`` receives", "Why
#: outputs went away", "What each release does with each old shape:").
TOPIC_WORD = re.compile(r"^(?:What|When|Which|How|Why|Where|Who)\b", re.I)
#: A condition and then its main clause ("When a step returns None, Lightning skips ...", "Where ..., the Trainer
#: ..."): a statement, wherever it stands and however it ends.
CONDITION = re.compile(r"^(?:When|Whenever|Where|Wherever|If|Once|Unless|While)\b[^,;:]*,\s*\S", re.I)


def topic(part: str, heading: bool | None = None) -> bool:
    """Whether ``part`` (one sentence of a block) asks or names a topic instead of stating something: a question
    (it ends with ``?``), or a heading or a lead-in (it ends with ``:``) opened by a question word
    (:data:`TOPIC_WORD`) that is not a condition with its main clause (:data:`CONDITION`). ``heading``: whether the
    block is a heading (``None``: unknown, as for plain text: a part without a full stop reads as one)."""
    text = part.strip(" \x00")
    if text.endswith("?"):
        return True
    if not TOPIC_WORD.match(text) or CONDITION.match(text):
        return False
    if heading is None:
        heading = not text.endswith((".", "!", ";"))
    return heading or text.endswith(":")


def sentences(text: str, heading: bool | None = None) -> list[str]:
    """The sentences of a block that state something (:func:`topic`: questions, and headings and lead-ins that ask,
    are topics). ``heading``: whether the block is a heading (``None``: unknown)."""
    text = re.sub(r"^\s*[-*+]\s+", "", text)  # a list item's marker, as a plain-text list writes it
    text = re.sub(r"^\s*(?:FWIW|IIRC|AFAIK|IMO|IMHO|Yeah|Yes|\+1),?\s+", "", text)  # a comment's opener
    parts = SENTENCE_END.split(text)
    # a question answered by the next sentence states its answer: "Is the model in eval mode? No, it comes back in
    # train mode." reads as the question's statement, its answer's words after it
    answered = {i for i, part in enumerate(parts[:-1]) if part.rstrip().endswith("?") and ANSWER.match(parts[i + 1])}
    return [
        part.rstrip().rstrip("?") + "." if i in answered else part
        for i, part in enumerate(parts)
        if part.strip(" \x00") and (i in answered or not topic(part, heading))
    ]


#: The opening of a sentence that answers the question before it ("Yes.", "No, it ...", "It is setup, ...").
ANSWER = re.compile(r"\s*(?:Yes|No|Never|Always|Only|It is|It's|It’s|They are|They're)\b")


#: A default of Lightning named in prose: a default's value ("2 by default", "defaults to", "the default value") in a
#: sentence that names a ``Trainer`` argument whose default the probes record (``probes.TRAINER_DEFAULTS``).
_ARGUMENT = r"\b(?:" + "|".join(map(re.escape, probes.TRAINER_DEFAULTS)) + r")\b"
_DEFAULT_VALUE = r"\b(?:by default|defaults? (?:to|of|is|are)|default values?)\b"
#: What a ``Trainer`` argument sets, named by what it does ("the default sanity check is two batches").
_DEFAULT_OF = (
    r"\bdefault (?:sanity check|precision|strategy|logger|checkpointing|accumulation)\s+"
    r"(?:is|are|was|runs?|ran|has|does|takes|checks|makes|uses|holds|keeps)\b"
)
DEFAULT_NAMED = re.compile(f"{_DEFAULT_VALUE}.*{_ARGUMENT}|{_ARGUMENT}.*{_DEFAULT_VALUE}|{_DEFAULT_OF}", re.I)


#: Words that open a question or a topic: a verb before a colon in their clause names the topic of a lead-in ("What
#: the old hooks received:", "whatever Lightning raises:").
TOPIC_OPENERS = {"what", "which", "whether", "how", "whatever"}
#: Words after which "run", "runs", "call" and "calls" are nouns ("a run that stopped", "their calls").
NOUN_BEFORE = {
    "a",
    "an",
    "the",
    "each",
    "every",
    "one",
    "this",
    "that",
    "its",
    "their",
    "whole",
    "same",
    "next",
    "first",
    "second",
    "last",
    "real",
    "validation",
    "training",
    "test",
    "predict",
    "sanity",
    "stopped",
    "resumed",
    "another",
    "any",
    "no",
    "both",
    "two",
    "three",
    "several",
    "uninterrupted",
    "interrupted",
    "recorded",
    "of",
    "per",
    "his",
    "her",
    "your",
    "with",
    "collective",
    "empty",
    "full",
}


#: Stage words of :data:`NOUN_BEFORE`: before a verb form they make a noun only inside a noun phrase ("the
#: validation runs", "one training run"); opening the clause they are its subject ("Validation runs before training").
STAGE_WORDS = {"validation", "training", "test", "predict"}


def _noun_after(before: list[str]) -> bool:
    """Whether a verb form that is a noun too (:data:`NOUNS_TOO`) is a noun after the words ``before`` it: after a
    word of :data:`NOUN_BEFORE` ("a run", "their calls"), but after a stage word only when a word of that set stands
    before the stage word too ("the validation runs" is a noun, "validation runs before training" a statement)."""
    if not before or before[-1].lower().strip("(") not in NOUN_BEFORE:
        return False
    if before[-1].lower().strip("(") in STAGE_WORDS:
        return len(before) > 1 and before[-2].lower().strip("(") in NOUN_BEFORE
    return True


def _verb_at(words: list[str], index: int, verbs: re.Pattern[str]) -> bool:
    word = words[index].strip(".,;:()'\"`’”")
    previous = words[index - 1].lower().strip("(,") if index else ""
    before = words[index - 2].lower() if index > 1 else ""
    if (previous in PASSIVE or (previous == "not" and before in PASSIVE)) and VERBS.fullmatch(word):
        return True  # a passive: "the metric is reset", "the hook is not called"
    if previous in ("must", "should"):
        return False  # what the reader's code must do ("every rank must make the same calls")
    if word in ("times", "timed") and index + 1 < len(words) and words[index + 1].strip(".,;:") == "out":
        return True  # "gloo times out"
    if not verbs.fullmatch(word):
        return False
    if (word in VERB_STEMS or word == "monitor") and (
        previous in ("to", "please") or (previous in ("and", "or", "then") and _instruction(words))
    ):
        return False  # the reader's action: "to call fit", "Create a trainer and call fit"
    if (
        (
            words[index].endswith(":")
            and (word in NOUNS_TOO or any(w.lower() in TOPIC_OPENERS for w in words[max(0, index - GAP) : index]))
        )  # a heading's noun ("Trainer calls: fit"), a lead-in ("What the old hooks received:")
        or (index + 1 < len(words) and words[index + 1].startswith("("))
        or (index and word in NOUNS_TOO and _noun_after(words[:index]))  # "a run"
        or (index and word in NOUNS_TOO and words[index - 1].lower().endswith("ing"))  # "the same logging calls"
    ):
        return False
    return True


#: Verb forms that are nouns too ("a run", "the return value", "their calls", "the logs"): after a word of
#: :data:`NOUN_BEFORE` they are read as nouns; every other verb form stays a verb ("the Trainer that detaches").
NOUNS_TOO = set(
    "run runs call calls return returns log logs check checks update updates load loads save saves print report "
    "reports stop stops hold holds step steps sum sums average averages count counts share shares weight weights "
    "split splits sort fill catch wait release releases support yield scale scales cast casts keep warning drop drops "
    "copy copies gather clone sync shard shards cache caches read reads".split()
)


def _instruction(words: list[str]) -> bool:
    """Whether the sentence is an instruction to the reader: it starts with a verb's base form ("Create ...")."""
    first = next((w for w in words if w != "\x01"), "")
    if " ".join(words[:2]).lower() in ("make sure", "be sure", "let us", "i would", "we would") or first.lower() in (
        "let's", "let’s", "ensure", "i'd", "i’d", "we'd", "we’d"
    ):  # fmt: skip
        return True  # "Make sure your EarlyStopping monitors a key ...", "Let's start by opening your module"
    if first.lower() in CONDITION_OPENERS:  # "If you use DDP, add sync_dist=True ...": the clause after the comma
        comma = next((i for i, w in enumerate(words[:12]) if w.endswith(",")), None)
        if comma is not None and comma + 1 < len(words):
            return _instruction([words[comma + 1].capitalize(), *words[comma + 2 :]])
    return first[:1].isupper() and first.lower().strip(",") in {
        *VERB_STEMS,
        *READER_VERBS,
        *INSTRUCTION_VERBS,
        "define",
        "create",
        "add",
        "see",
        "walk",
        "measure",
        "note",
        "record",
        "compare",
    }


#: Base forms that open an instruction, beside the behaviour verbs' ("Give ``ModelCheckpoint`` the same key", "Switch
#: to a ``MeanMetric``").
INSTRUCTION_VERBS = set(
    "give set switch use delete override subclass import install change try open pick choose wrap register "
    "follow avoid prefer start".split()
)
#: Words that open a condition or a setting before an instruction ("If you use DDP, add ...").
CONDITION_OPENERS = {"if", "when", "whenever", "once", "with", "under", "for", "before", "after"}
#: Words that make a hook the reader's own code ("your ``on_train_batch_end``", "you define ..."), not Lightning's.
READERS = {"your", "you", "yours", "you'll", "you've"}


def flagged(sentence: str, context: str = "") -> bool:
    """Whether :func:`reasons` finds a reason to read the sentence as a statement of behaviour."""
    return bool(reasons(sentence, context))


def reasons(sentence: str, context: str = "") -> list[str]:
    """Why the sentence reads as a statement of what Lightning, torch or torchmetrics do, in the text outside claims
    and records (a claim or a record breaks the sentence: its parts are read apart):

    - ``default``: it names a default of a ``Trainer`` argument (:data:`DEFAULT_NAMED`);
    - ``change``: a change between releases (:data:`CHANGE`: "no longer", "is gone"), or a name (of Lightning, a
      hook, a :data:`CONCEPTS` entry) in a state (:data:`STATE`: "is off");
    - ``release``: a release of Lightning (:data:`RELEASE`) and a behaviour verb;
    - ``subject``: a name of Lightning with a verb (:data:`SUBJECT_VERBS`) within :data:`GAP` words after it, or the
      agent of a passive ("reset by Lightning");
    - ``hook``: a hook name with one of :data:`HOOK_VERBS` within :data:`GAP` words on either side;
    - ``concept``: a :data:`CONCEPTS` entry with one of :data:`CONCEPT_VERBS` after it, in a sentence that is not an
      instruction;
    - ``library``: a library under Lightning or a strategy (:data:`LIBRARIES`: ``torch``, ``torchmetrics``, ``DDP``)
      as the subject of a verb (:func:`_library_verb`);
    - ``process``: a process of a distributed run (:data:`PROCESSES`: "each rank", "one worker") with one of
      :data:`HOOK_VERBS` after it;
    - ``order``: an order of events (:data:`ORDER`: "comes before", "goes first") whose subject is something Lightning
      runs (:data:`EVENTS`), in a sentence that is neither an instruction nor about the reader's code;
    - ``resumption``: a checkpoint or a resumed run (:data:`RESUMPTION`) as the subject of a verb
      (:func:`_resumption_verb`: "a checkpoint saved when an epoch ends resumes at the start of the next one");
    - ``release``: also a release named by words as a subject (:func:`_release_verb`: "the newest release above that
      still calls them");
    - ``pronoun``: ``it``, ``they``, ``its`` or ``their`` as the subject of a behaviour verb, standing for a name of
      Lightning, a hook or a claim (:func:`_pronoun_verb`, :func:`_antecedent`: "The list they return ...", "...,
      and they never run"), read with ``context``: what comes before the sentence under its heading;
    - ``fragment``: a clause with no subject after a colon, a semicolon or a dash, opened by a behaviour verb's
      participle, in a sentence or ``context`` that names Lightning (:func:`_fragment`: "...: refused all the same").

    The later rounds (:data:`ELEVENTH_ROUND`, read part by part) add, among others, ``entity subject``: a clause whose
    subject names Lightning, torch, torchmetrics or DDP in any of :data:`ENTITIES`' ways, or is an action on one, with
    any finite verb (:func:`_entity_subject`); ``experienced``, ``setting``, ``quantity``, ``caption`` and more forms
    of ``outcome``, ``release`` and ``default``.

    A colon or semicolon ends the clause; a hook or concept the sentence calls the reader's (:data:`READERS`) is the
    reader's code; a modal ("must", "should") makes the rest of the clause what the reader's code must do; a name
    inside a question ("shows what each batch-end hook receives") is a topic. A sentence is read whatever word opens it
    (:func:`sentences` leaves out only questions, and headings and lead-ins that ask)."""
    found = []
    for part in sentence.split("\x00"):
        if DEFAULT_NAMED.search(part):
            found.append("default")
        named = any(group.search(part) for group in (SUBJECTS, HOOKS, CONCEPT_NAMES))
        if HANDED.search(part):
            found.append("handed")  # "a step that returns nothing leaves a callback no outputs"
        if CHANGE.search(part) or (named and STATE.search(part)):
            found.append("change")  # "the hook no longer receives outputs", "autograd is off in validation"
        words = part.split()
        upgrade = {w.lower().strip(",.;:'’") for w in words} & (READERS | {"readers", "upgrade", "upgrading"})
        if (
            RELEASE.search(part)
            and not upgrade  # the reader's own release ("If you are still on 1.9", "Upgrade to 2.0 ...")
            and (PRESENCE.search(part) or any(_verb_at(words, i, CONCEPT_VERBS) for i in range(len(words))))
        ):
            found.append("release")  # "on 1.4.9 the callback received an empty list", "in 1.5 it was still there"
        if (
            any(
                EVENTS.search(" ".join(part[: m.start()].split()[-GAP:]))
                and not (
                    m[0].split()[0] in NOUNS_TOO and _noun_after(part[: m.start()].split())
                )  # "the one validation run after training": a noun
                and not any(w.lower() in TOPIC_OPENERS for w in part[: m.start()].split()[-GAP:])
                # "shows how many training steps ran before the error": a topic
                for m in ORDER.finditer(part)
            )
            and not _instruction(words)
            and not any(w.lower().strip(".,;:'’`") in READERS for w in words)
        ):
            found.append("order")  # "a callback's epoch-end hook comes before the module's"
        if _library_verb(part):
            found.append("library")  # "DDP splits the data", "torch and gloo write to standard error"
        if _run_subject(part):
            found.append("run")  # "Before training, fit runs a sanity check"
        groups = [
            ("subject", SUBJECTS, SUBJECT_VERBS),
            ("hook", HOOKS, HOOK_VERBS),
            ("process", PROCESS_NAMES, HOOK_VERBS),
        ]
        if not _instruction(words):
            groups.append(("concept", CONCEPT_NAMES, CONCEPT_VERBS))
        found += [reason for reason, names_, verbs in groups if _verb_near(part, names_, verbs, reason)]
        if not _instruction(words):
            if _immediate_verb(part, SUBJECTS, past=True) or _immediate_verb(part, LIBRARY_NAMES):
                found.append("open verb")  # "as Lightning recommends", "after Lightning prepared it"
            if _immediate_verb(part, CALLBACK_KINDS, SUBJECT_VERBS):
                found.append("callback kind")  # "the monitoring callbacks refuse an epoch without their value"
            if _immediate_verb(part, ARGUMENTS, HOOK_VERBS, open_=False):
                found.append("argument")  # "outputs is built from what training_step returned"
            if _immediate_verb(part, API_PATHS, SUBJECT_VERBS, copula=True) or _immediate_verb(
                part, CONCEPT_NAMES, copula=True, open_=False
            ):
                found.append("api")  # "torch.stack needs ...", ".detach() is a view of the same storage"
            if _keyword_verb(part):
                found.append("setting")  # "sync_dist=True averages identical values"
            if _resumption_verb(part):
                found.append("resumption")  # "a checkpoint saved when an epoch ends resumes at the next one"
        if _release_verb(part):
            found.append("release")  # "the newest release above that still calls them"
    if _pronoun_verb(context, sentence):
        found.append("pronoun")  # "The list they return has ...", "..., and they never run"
    if not _instruction(sentence.split()) and _fragment(context, sentence):
        found.append("fragment")  # "The same setting with validation_epoch_end defined: refused all the same."
    for part in sentence.split("\x00"):
        found += [
            reason for reason, rule in (SIXTH_ROUND | SEVENTH_ROUND | EIGHTH_ROUND | TENTH_ROUND).items() if rule(part)
        ]
        found += [f"{reason} (11)" for reason, rule in ELEVENTH_ROUND.items() if rule(part)]
    return found


#: Words that open a question inside a sentence: a name after one is the topic of that question, not a subject.
EMBEDDED = {"what", "which", "whether", "how"}
#: Words after which a verb says what the reader's code must do, not what Lightning does.
MODALS = {"must", "should"}
#: Words a library's name may have between it and its verb ("torch and gloo write", "PyTorch itself frees").
LIBRARY_GAP_WORDS = {"and", "or", "itself", "also", "then", "never", "always", "only", "will", "does", "did", "not",
                     "no", "still", "now", "just", "first"}  # fmt: skip


def _keyword_verb(part: str) -> bool:
    """Whether a setting of Lightning's (:data:`KEYWORDS`: ``sync_dist=True``) is the subject of a verb: the first word
    after it, adverbs aside, is a behaviour verb or a third-person form."""
    for match in KEYWORDS.finditer(part):
        if match[0].endswith((",", ":", ";", ")")):
            continue
        after = part[match.end() :].split()
        while after and after[0].lower() in ADVERBS:
            after = after[1:]
        if after and (SUBJECT_VERBS.fullmatch(after[0].strip(".,;:")) or re.fullmatch(r"[a-z]+[^s]s[.,;:]?", after[0])):
            return True
    return False


def _run_subject(part: str) -> bool:
    """Whether a ``Trainer`` entry point (:data:`registry.RUNS`: ``fit``, ``validate``, ...) opens a clause as the
    subject of a behaviour verb ("Before training, fit runs a sanity check", "predict returns one list per loader"):
    what that call does is Lightning's. Its name alone, a noun after it ("each predict run") or a passive ("fit is
    called again") is the reader's call."""
    for clause in _clauses(part):
        words = [w.strip("`'\"") for w in clause]
        if words and words[0].lower() in ("then", "and", "so", "also", "first", "next"):
            words = words[1:]  # "Then validate calls ..."
        if len(words) > 1 and words[0].lower().removeprefix("trainer.").removesuffix("()") in registry.RUNS:
            if _verb_at(words, 1, SUBJECT_VERBS) and words[1] not in NOUNS_TOO - {"runs", "calls", "returns"}:
                return True
    return False


def _library_verb(part: str) -> bool:
    """Whether a library's name (:data:`LIBRARIES`) is the subject of a verb: the verb follows it, with only
    :data:`LIBRARY_GAP_WORDS`, an adverb or another library's name between (a name followed by a noun is an
    adjective: "a torchmetrics metric object", "a plain PyTorch loop")."""
    for match in LIBRARY_NAMES.finditer(part):
        if part[match.end() : match.end() + 2] in ("'s", "’s"):
            continue  # "torch's log line"
        before, after = part[: match.start()].split(), part[match.end() :].split()
        if before and before[-1].lower() in EMBEDDED | {"a", "an", "each", "every", "one"}:
            continue  # a topic, or an adjective ("For a DDP run, launch ...")
        words = [*before, "\x01", *after]
        for index in range(len(before) + 1, len(words)):
            word = words[index].strip(".,;:()'\"`’”").lower()
            if word in LIBRARY_GAP_WORDS or word.endswith("ly") or LIBRARY_NAMES.fullmatch(words[index].strip(",")):
                continue
            if _verb_at(words, index, SUBJECT_VERBS):
                return True
            break
    return False


def _verb_near(part: str, names_: re.Pattern[str], verbs: re.Pattern[str], reason: str) -> bool:
    for match in names_.finditer(part):
        before, after = part[: match.start()].split(), part[match.end() :].split()
        words = before + ["\x01"] + after
        at = len(before)
        agent = at >= 2 and words[at - 1] == "by" or at >= 3 and words[at - 1] in ("the", "a") and words[at - 2] == "by"
        following = part[match.end() : match.end() + 2]
        possessive = following in ("'s", "’s") or (match[0].endswith("s") and following[:1] in ("'", "’"))
        if possessive and reason != "subject":
            continue  # a possessive: its noun is the subject ("each rank's cache is printed below")
        asked = before[-2:] if reason == "subject" else before[-3:]
        opened = len(before) > len(asked) or any(w.endswith(":") for w in before[:-1])
        if opened and any(w.lower() in EMBEDDED for w in asked):
            continue  # a question inside the sentence names a topic ("shows what each batch-end hook receives")
        if reason == "subject" and agent:
            verb_at = at - 2 if words[at - 1] == "by" else at - 3
            if VERBS.fullmatch(words[verb_at].strip(".,;:()'\"`’”")):
                return True  # a passive with Lightning as its agent: "the metric is reset by Lightning"
        low = max(0, at - GAP)
        for i in range(at - 1, low - 1, -1):
            if words[i].endswith((":", ";")):
                low = i + 1
                break
        high = min(len(words), at + 1 + GAP)
        for i in range(at + 1, high):
            if words[i].lower() in MODALS:
                high = i  # what the reader's code must do ("every rank must make the same calls")
                break
            if words[i].endswith((":", ";")):
                high = i + 1
                break
        if reason != "subject" and any(w.lower().strip(".,'’`") in READERS for w in words[max(low, at - 3) : at]):
            continue  # "your on_train_batch_end", "your loss": the reader's own
        if reason == "hook" and re.search(r"\b(?:checker|lightning-migrate|--fix)\b", part):
            continue  # what the checker finds, reports or rewrites: a hook of the reader's code
        start = next((i + 1 for i in range(at - 1, -1, -1) if words[i].endswith((":", ";"))), 0)
        clause = [w for w in words[start:at] if w != "\x01"]
        after_name = [w.lower().strip(".,;:()`") for w in words[start:high] if w != "\x01"]
        done_to = any(  # a passive: what is done to the reader's hook ("Your hook is also executed at ...")
            w in PASSIVE and any(VERBS.fullmatch(v) for v in after_name[i + 1 : i + 3])
            for i, w in enumerate(after_name)
        )
        if (_instruction(clause) and "that" not in (w.lower() for w in clause)) or (
            clause and clause[0].lower() in ("your", "our", "you") and not done_to
        ):  # the reader's own code as the subject ("Your save step now happens in on_train_epoch_end")
            continue  # the clause is an instruction ("Give ModelCheckpoint the same key") or the reader's own
        window = [*range(low, at), *range(at + 1, high)] if reason == "hook" else [*range(at + 1, high)]
        if any(_verb_at(words, i, verbs) for i in window):
            return True
    return False


# -- Fifth round: what the earlier rules left to the reader's eye ----------------------------------------------------
#: A pronoun that may stand for a name of Lightning ("The list they return", "and they never run"): read with the
#: name it stands for (:func:`_antecedent`) as that name is read.
PRONOUNS = re.compile(r"(?<![\w'’])(?:it|they|its|their)(?![\w'’])", re.I)
#: Words after which a pronoun opens a clause, as its subject ("..., and they never run", "so it keeps ...").
CLAUSE_OPENERS = {
    "and", "but", "so", "that", "which", "when", "because", "while", "until", "before", "after", "once", "if", "as",
    "then", "where", "though", "although", "since", "unless", "whenever", "yet", "or", "nor", "there", "here",
}  # fmt: skip
#: Words before a pronoun that make it an object ("makes it run", "without it", "of them"), not a subject.
OBJECT_BEFORE = MODIFIER_BEFORE | EMBEDDED | {
    "without", "about", "into", "onto", "at", "after", "before", "makes", "make", "made", "let", "lets", "is", "was",
    "are", "were", "what", "whatever", "for", "see", "sees", "saw", "keep", "keeps", "has", "have", "had", "all",
}  # fmt: skip
#: Words that open a noun phrase: the noun after one is a candidate for what a later pronoun stands for.
DETERMINERS = {"a", "an", "the", "this", "these", "those", "each", "every", "its", "their", "your", "our",
               "another", "some", "no", "any", "one", "both", "either", "neither", "his", "her", "such"}  # fmt: skip
#: Prepositions: a name after one is an object or a modifier ("a subclass of ``BasePredictionWriter``"), not what a
#: later pronoun stands for.
PREPOSITIONS = {"of", "with", "to", "from", "by", "in", "on", "for", "under", "like", "unlike", "than", "via", "into",
                "without", "about", "at", "through", "beside", "inside", "outside", "over"}  # fmt: skip


def _antecedent(text: str) -> str | None:
    """What a pronoun at the end of ``text`` (the sentence before it, with the text before the sentence in its block
    and the block's heading) stands for, by the nearest candidate: ``"subject"`` (a name of Lightning: the words
    ``Lightning`` and ``Trainer``, an entry point, a callback class or kind -- or a claim, which speaks of one),
    ``"hook"`` (a hook's name or kind), or ``None`` (another noun phrase: "a cache", "the module", "your code"; or
    nothing). A noun right before the pronoun is the object of its clause ("the list they return"), not what it
    stands for; a name after a preposition, before a possessive or before a noun ("every ``Trainer`` setting") is a
    modifier; an earlier pronoun passes on what it stands for ("defines them ..., and they never run")."""
    words = text.split()
    if words and re.fullmatch(r"[a-z][a-z-]*", words[-1]) and words[-1] not in CLAUSE_OPENERS | OBJECT_BEFORE:
        words = words[:-1]  # a contact clause: "the list they return"
        if len(words) >= 1 and words[-1].lower() in DETERMINERS:
            words = words[:-1]
    candidates: list[tuple[int, str | None]] = []
    joined = " ".join(words)
    for kind, pattern in (("subject", SUBJECTS), ("hook", HOOKS), ("subject", CALLBACK_KINDS)):
        for match in pattern.finditer(joined):
            before = joined[: match.start()].split()
            following = joined[match.end() : match.end() + 2]
            after = joined[match.end() :].split()[:1]
            if before and before[-1].lower().strip("(") in PREPOSITIONS:
                continue
            if following in ("'s", "’s"):
                continue
            if after and re.fullmatch(r"[a-z]+", after[0]) and after[0] in PLURAL_NOUNS | {"setting", "class", "loop"}:
                continue
            candidates.append((match.end(), kind))
    for match in re.finditer(r"\x00", joined):
        candidates.append((match.end(), "subject"))  # a claim: a statement of Lightning's
    spans = _spans(joined)
    for index, word in enumerate(words):
        if word.lower() in DETERMINERS and index + 1 < len(words):
            noun = words[index + 1]
            at = len(" ".join(words[: index + 1])) + 1
            if not any(start <= at < end for start, end in spans):
                candidates.append((at + len(noun), None))
        elif word.lower().strip(",;:") in READERS:
            candidates.append((len(" ".join(words[: index + 1])), None))
    if not candidates:
        return None
    return max(candidates, key=lambda candidate: candidate[0])[1]


def _spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for pattern in (SUBJECTS, HOOKS, CALLBACK_KINDS) for m in pattern.finditer(text)]


def _pronoun_verb(context: str, part: str) -> bool:
    """Whether a pronoun is the subject of a behaviour verb and stands for a name of Lightning (:func:`_antecedent`):
    ``it`` or ``they`` right before the verb (adverbs aside: "they never run", "it is refused"), ``its`` or ``their``
    opening a clause whose verb follows its noun ("their outputs are dropped"). The verbs are the name's: every
    behaviour verb for Lightning (:data:`SUBJECT_VERBS`), the hooks' for a hook (:data:`HOOK_VERBS`)."""
    for match in PRONOUNS.finditer(part):
        before = part[: match.start()].split()
        previous = before[-1].lower() if before else ""
        opens = not before or previous.endswith((",", ":", ";", "—", "–", "(")) or previous in CLAUSE_OPENERS
        possessive = match[0].lower() in ("its", "their")
        if not opens and (possessive or previous.strip("(") in OBJECT_BEFORE or not re.fullmatch(r"[a-z-]+", previous)):
            continue  # an object ("makes it run"), a question ("what it logs"), a possessive inside a phrase
        after = [w.strip(',;()`"“”') for w in part[match.end() :].split()]
        if possessive:
            after = after[1:] if after and not VERBS.fullmatch(after[0]) else []  # "their outputs are dropped"
        while after and after[0].lower() in ADVERBS:
            after = after[1:]
        if not after:
            continue
        word = after[0].rstrip(".:;,")
        rest = [w for w in after[1:] if w.lower() not in ADVERBS and w.lower() != "not"]
        following = rest[0].rstrip(".:;,") if rest else ""
        if word in PASSIVE and VERBS.fullmatch(following):
            verb = True  # "it is refused", "they are called"
        elif word in PRO_VERBS or word in ("do", "don't", "don’t"):
            verb = True
        else:
            kind = _antecedent(context + " " + part[: match.start()])
            verbs = SUBJECT_VERBS if kind == "subject" else HOOK_VERBS
            plural = match[0].lower() in ("they", "their") and not possessive
            singular_form = word.endswith("s") or word.endswith("ed") or word in IRREGULAR
            verb = bool(verbs.fullmatch(word)) and (plural or possessive or singular_form) and kind is not None
            if verb:
                return True
            continue
        if _antecedent(context + " " + part[: match.start()]) is not None:
            return True
    return False


def _fragment(context: str, part: str) -> bool:
    """Whether a clause of ``part`` after a colon, a semicolon or a dash opens with a behaviour verb's participle or
    a hook's third-person form (:data:`HOOK_FORMS`), adverbs aside, and no subject, in a sentence or block that names
    Lightning, a hook, a concept or holds a claim. An instruction opens with the base form, a term before its
    definition ends with a colon ("holds: ..."), and a sentence that opens with a participle is most often a title
    ("Renamed the hook but kept outputs"): these are left alone."""
    named = context + " " + part
    if (
        not any(group.search(named) for group in (SUBJECTS, HOOKS, CONCEPT_NAMES, CALLBACK_KINDS))
        and "\x00" not in named
    ):
        return False
    for clause in re.split(r"(?<=[:;])\s|\s(?:[—–]|--)\s", part)[1:]:
        words = [w.strip(',()`"“”') for w in clause.split()]
        if words and words[0].endswith(":"):
            continue  # a term and its definition ("holds: every value matched; differs: ...")
        while words and words[0].lower() in ADVERBS | {"and", "but", "then", "so"}:
            words = words[1:]
        if not words:
            continue
        word = words[0].rstrip(".").lower()
        if word in HOOK_FORMS or (
            VERBS.fullmatch(word) and (word.endswith("ed") or word in IRREGULAR) and word not in ("need", "speed")
        ):
            return True
    return False


#: Lightning's checkpoints and the runs resumed from them: what one does ("a checkpoint saved when an epoch ends
#: resumes at the start of the next one") is Lightning's loop.
RESUMPTION = re.compile(
    r"(?<![\w.])(?:(?:a|an|the|each|every|that|this)\s+)?(?:checkpoints?|last\.ckpt|(?:resumed|restarted|interrupted) "
    r"(?:run|fit|epoch)s?|resumption|run resumed|fit resumed)(?![\w.])",
    re.I,
)


def _resumption_verb(part: str) -> bool:
    """Whether a checkpoint or a resumed run (:data:`RESUMPTION`) is the subject of a verb of :data:`CONCEPT_VERBS`
    within :data:`GAP` words after it: a finite one or a passive ("resumes", "ran", "is restored"), not a participle
    that describes it ("a run resumed from ..."); a name after a verb or a preposition is an object."""
    for match in RESUMPTION.finditer(part):
        before = [w.strip("(,").lower() for w in part[: match.start()].split()[-3:]]
        words = [w for w in before if w not in DETERMINERS]
        if any(w in PREPOSITIONS or VERBS.fullmatch(w) or (w.endswith("s") and w not in ("as", "is")) for w in words):
            continue  # an object: "validates the best checkpoint", "resumed from a checkpoint"
        text = RESUMPTION.sub(" \x02 ", part[match.start() :], count=1)
        words = text.split()
        at = words.index("\x02")
        for index in range(at + 1, min(len(words), at + 1 + GAP)):
            word = words[index].strip(".,;:()'\"`’”")
            if words[index].endswith((":", ";")) or word.lower() in MODALS:
                break
            finite = not word.endswith("ed") or words[index - 1].lower() in PASSIVE
            if finite and _verb_at(words, index, CONCEPT_VERBS):
                return True
    return False


#: Words between a release and its verb ("the release above that still calls them").
RELATIVE_GAP = {"that", "which", "who", "above", "below", "before", "after"}
#: A release named by words, not by its number ("the newest release above that still calls them", "every later
#: release"): what it does is what a numbered release does (:data:`RELEASE`).
RELEASE_WORDS = re.compile(r"\b(?:release|releases|version|versions)\b(?!\s+notes)", re.I)


def _release_verb(part: str) -> bool:
    """Whether a release named by words is the subject of a behaviour verb: the verb right after it, a relative
    pronoun, a word of place and adverbs aside ("the newest release above that still calls them", "every later
    release refuses it"), or a passive with the release as its agent ("removed by the next release")."""
    for match in RELEASE_WORDS.finditer(part):
        before, after = part[: match.start()].split(), part[match.end() :].split()
        agent = [w.lower() for w in before[-4:]]
        if "by" in agent:
            by = len(before) - len(agent) + agent.index("by")
            between = before[by + 1 :]
            if (
                by
                and all(w.lower() in DETERMINERS or re.fullmatch(r"[a-z]+", w) for w in between)
                and VERBS.fullmatch(before[by - 1].strip(".,;:"))
            ):
                return True  # "... was removed by the next release"
        if part[match.end() : match.end() + 2] in ("'s", "’s") or part[match.end() : match.end() + 1] in ",:;)":
            continue
        words = [*before, "\x01", *after]
        index = len(before) + 1
        while index < len(words) and words[index].lower() in RELATIVE_GAP | ADVERBS:
            index += 1
        if index < len(words) and _verb_at(words, index, SUBJECT_VERBS):
            return True
    return False


# -- Sixth round: shapes an audit of the built site found past the earlier rules ---------------------------------------
#: Third-person and past forms of failing: said of every case ("breaks any epoch-end code"), a rule of torch's or
#: Lightning's, not an observation of the page's run.
FAILURES = set(
    "breaks broke fails failed crashes crashed raises raised errors errored refuses refused rejects rejected".split()
)
#: Words that make a statement universal: a quantifier opening a noun phrase, or an adverb of always and never.
QUANTIFIERS = {"any", "every", "all", "whatever", "each"}
ALWAYS = {"always", "never", "invariably"}
#: What the site and the reader do: a subject of these is the site's own account or the reader's code.
SITE_SUBJECTS = {"page", "guide", "site", "build", "checker", "example", "examples", "you", "your", "we", "test",
                 "tests", "assert", "check", "checks"}  # fmt: skip


def _clauses(part: str) -> list[list[str]]:
    """The clauses of ``part``, split at a comma, a colon, a semicolon, a dash or a parenthesis, as word lists."""
    return [c.split() for c in re.split(r"[,:;()]|\s[—–]\s|\s--\s", part) if c.strip()]


def _universal_failure(part: str) -> bool:
    """Whether a clause states that something fails in every case: a failure verb (:data:`FAILURES`) whose object
    is quantified ("breaks any epoch-end code", "fails every call"), whose subject is ("any tensor that keeps its
    graph fails in NumPy", "every such call raises"), or with an adverb of always ("an undetached cache always fails").
    A relative clause ("any hook that fails"), a condition ("if any check fails"), an instruction, the reader's code
    and the site's own checks are left alone."""
    if _instruction(part.split()):
        return False
    for words in _clauses(part):
        low = [w.lower().strip(".,;:'\"`’”“") for w in words]
        for index, word in enumerate(low):
            if word not in FAILURES:
                continue
            before = low[:index]
            if before and before[-1] in ("that", "which", "who", "to"):
                continue  # a relative clause or an infinitive: "any hook that fails", "set to fail"
            if any(w in SITE_SUBJECTS or w in READERS for w in before) or any(w in MODALS for w in before):
                continue
            if any(w in ("if", "when", "whether", "unless", "once") for w in before):
                continue  # a condition: "if any check fails"
            after = [w for w in low[index + 1 :] if w not in ADVERBS]
            if after and after[0] in QUANTIFIERS and len(after) > 1:
                return True  # "breaks any epoch-end code"
            if before and before[0] in QUANTIFIERS - {"whatever"} and len(before) > 1:
                return True  # "any tensor with a graph fails in NumPy" ("whatever Lightning raises" is an object)
            if before and before[-1] in ALWAYS:
                return True  # "an undetached cache always fails"
    return False


#: What a library guarantees, in any form ("bitwise equality is not something they promise", "no guarantee of order").
GUARANTEES = re.compile(r"\b(?:promis|guarant|warrant)\w*", re.I)


def _guarantee(part: str) -> bool:
    """Whether the sentence says what a library promises or guarantees: a word of :data:`GUARANTEES` in a sentence
    whose clause does not name the site or the reader as the one who promises ("This page guarantees ...", "your code
    must guarantee ...")."""
    for words in _clauses(part):
        low = [w.lower().strip(".,;:'\"`’”“") for w in words]
        for index, word in enumerate(low):
            if GUARANTEES.fullmatch(word) and not any(
                w in SITE_SUBJECTS or w in READERS or w in MODALS for w in low[:index]
            ):
                return True
    return False


#: A place in a list of callbacks or hooks ("first in the list", "last in the callbacks list").
LIST_PLACE = re.compile(r"\b(?:first|last|earlier|later|second)\s+in\s+(?:the|its|their)\s+(?:\w+\s+)?list\b", re.I)
#: A consequence drawn from it: "so", "so that", "and so", "which is why".
CONSEQUENCE = re.compile(r"(?:,|;)?\s\b(?:so|so that|hence|thus|which is why|and therefore)\b", re.I)


def _list_order(part: str) -> bool:
    """Whether a place in a list is given a consequence in the same sentence: "They come first in the list, so they see
    a batch before the naive callback fails on it" says that Lightning calls the callbacks in the list's order. A
    place alone ("The plain callback is last in the callbacks list") is the reader's code, and so is an instruction."""
    match = LIST_PLACE.search(part)
    if not match or _instruction(part.split()) or any(w.lower().strip(".,;:") in READERS for w in part.split()):
        return False  # an instruction, or the reader's own list ("Put your recorder first in the list, so ...")
    return bool(CONSEQUENCE.search(part[match.end() :]))


def _cause(part: str) -> bool:
    """Whether a sentence opened by a cause ("Because the metrics are added after the module was made, ``self.log`` is
    told ...") draws its main clause about a name of Lightning's or torch's (its hooks, :data:`CONCEPTS`, its API
    paths, the libraries): the cause is then a statement of why Lightning needs something. A main clause that is an
    instruction ("Because your module keeps a list, clear it ...") is the reader's."""
    match = re.match(r"\s*(?:Because|As|Since)\s+(?![12]\.)[^,]+,\s*(.+)", part)
    if not match:
        return False
    main = match[1].split()
    if not main or _instruction([main[0].capitalize(), *main[1:]]):
        return False
    main = " ".join(main)
    return any(group.search(main) for group in (SUBJECTS, HOOKS, CONCEPT_NAMES, API_PATHS, LIBRARY_NAMES))


def _setting_gloss(part: str) -> bool:
    """Whether a setting of Lightning's in parentheses (:data:`KEYWORDS`) closes a clause that says what Lightning is
    made to do ("the ``Trainer`` is told to leave it alone (``use_distributed_sampler=False``)"): a name of Lightning
    with an infinitive before the parenthesis, in the same clause, is what the setting does."""
    for match in re.finditer(r"\(([^()]*)\)", part):
        if not KEYWORDS.search(match[1]):
            continue
        clause = re.split(r"[,:;]|\s[—–]\s|\s--\s", part[: match.start()])[-1]
        name = SUBJECTS.search(clause)
        if name and re.search(r"\bto\s+[a-z]+", clause[name.end() :]) and not _instruction(clause.split()):
            return True
    return False


#: A tolerance of a comparison ("to float32 rounding", "a relative tolerance of 1e-6", "not bit for bit").
TOLERANCE = re.compile(
    r"\b(?:rounding|tolerance(?:\s+of\s+[\w.+-]*\w)?|last bits?|bit for bit|bitwise|approximately)", re.I
)
#: The verbs of a reason given for a tolerance: what the computations did ("the workers computed them in batches of
#: their own", "they add the same numbers in different orders").
REASON_VERBS = re.compile(
    VERBS.pattern[: -len(r")\b")]
    + "|"
    + "|".join([*BEHAVIOUR_FORMS, "add", "differ", "differs", "round", "rounds"])
    + r")\b"
)


def _tolerance_reason(part: str) -> bool:
    """Whether a tolerance is given a reason that says what torch or a library did: right after the tolerance's words,
    a colon, a parenthesis or "because" opens a clause with a behaviour verb ("to float32 rounding: the workers computed
    them in batches of their own", "closest to (a sample computed in another batch differs in its last bits)"). A
    tolerance alone ("compared with a relative tolerance of 1e-6, not bit for bit"), or followed by what the page
    decides ("to float32 rounding: the choice is about where the code belongs"), is the page's own."""
    for match in TOLERANCE.finditer(part):
        rest = part[match.end() :]
        opened = re.match(r"\s*(?::|\(|\s(?:because|since|as)\b)\s*([^();]+)", rest)
        if not opened:
            continue
        clause = opened[1]
        words = [w.lower().strip(".,'\"`’”“") for w in clause.split()]
        if any(w in SITE_SUBJECTS or w in READERS for w in words):
            continue
        if any(REASON_VERBS.fullmatch(w) for w in words):
            return True
    for match in re.finditer(r"\(([^()]+)\)", part):  # a parenthesis that is itself the reason
        inner = match[1]
        if TOLERANCE.search(inner) and not any(w.lower() in SITE_SUBJECTS | READERS for w in inner.split()):
            if any(REASON_VERBS.fullmatch(w.lower().strip(".,")) for w in inner.split()):
                return True
    return False


#: Words before "by" that make its noun an agent: a past participle ("synchronized by Lightning", "repeated by the
#: sampler"), of any verb, not only those of :data:`VERB_STEMS`.
PARTICIPLE = re.compile(r"[a-z]+(?:ed|en)|" + "|".join(IRREGULAR) + r"|made|done|set|told|seen|shown|known|put|run|cut")
#: What a participle's agent may be that makes the passive Lightning's, torch's or a library's doing.
AGENTS = [SUBJECTS, CONCEPT_NAMES, LIBRARY_NAMES, PROCESS_NAMES, CALLBACK_KINDS]


def _agent(part: str) -> bool:
    """Whether a past participle has a name of Lightning, a concept, a library or a process as its agent ("a
    torchmetrics metric, synchronized by Lightning, needs none", "one of them repeated by the sampler"), whatever the
    verb: the agent rule of :func:`_verb_near` reads only the verbs of :data:`VERBS`. "computed by hand", "written by
    the page" and "kept by your module" name no such agent."""
    for match in re.finditer(r"\b([A-Za-z]+)\s+by\s+((?:the|a|an|each|every)\s+)?", part):
        if not PARTICIPLE.fullmatch(match[1].lower()) or match[1].lower() in ("need", "speed", "feed", "seed", "bed"):
            continue
        rest = part[match.end() :]
        for pattern in AGENTS:
            found = pattern.match(rest) if pattern is not CONCEPT_NAMES else pattern.match((match[2] or "") + rest)
            if found:
                return True
    return False


def _trainer_arguments() -> list[str]:
    """The names of the arguments of Lightning's ``Trainer`` with ``_`` in them, read from the installed Lightning
    (the names of :data:`migration_guide.probes.TRAINER_DEFAULTS` without it)."""
    try:
        import inspect

        from lightning.pytorch import Trainer
    except ImportError:  # pragma: no cover - Lightning is a test requirement
        return sorted(probes.TRAINER_DEFAULTS, key=len, reverse=True)
    names = {name for name in inspect.signature(Trainer.__init__).parameters if "_" in name}
    return sorted(names | set(probes.TRAINER_DEFAULTS), key=len, reverse=True)


#: A ``Trainer`` argument named bare, not set (``fast_dev_run``, not ``fast_dev_run=True``).
SETTING_NAMES = re.compile(r"(?<![\w.=])(?:" + "|".join(map(re.escape, _trainer_arguments())) + r")(?![\w=(])")


def _bare_setting(part: str) -> bool:
    """Whether a ``Trainer`` argument named bare is the subject of a verb ("fast_dev_run sets every batch limit to 1",
    "fast_dev_run turns checkpointing off"): what a setting does is Lightning's doing, as with :data:`KEYWORDS`. An
    instruction ("Set fast_dev_run ..."), a name after a preposition ("With fast_dev_run, ...") or before a comma
    is not a subject."""
    return not _instruction(part.split()) and _immediate_verb(part, SETTING_NAMES, SUBJECT_VERBS)


SIXTH_ROUND = {
    "agent": _agent,
    "bare setting": _bare_setting,
    "tolerance reason": _tolerance_reason,
    "universal": _universal_failure,
    "guarantee": _guarantee,
    "list order": _list_order,
    "cause": _cause,
    "setting gloss": _setting_gloss,
}


# -- Seventh round: unproven explanations and promises an audit found past the earlier rules -------------------------
#: Lightning's and torch's mechanisms that code runs under or outside ("inside the step's autocast", "under mixed
#: precision", "outside inference mode"): where a hook, a step or moved code runs in them is what Lightning does.
MECHANISMS = re.compile(
    r"\b(?:under|inside|within|outside(?:\s+of)?)\s+(?:(?:the|a|an|its|their|[\w`.]+['’]s)\s+){0,2}"
    r"(?:torch\.)?(?:autocast|mixed[ -]precision|(?:bf)?16-mixed|inference[_ ]mode|no_grad|grad mode|"
    r"(?:optimizer['’]s\s+)?closure|optimizer closure)\b",
    re.I,
)
#: A verb that says code runs ("runs", "is called", "executes").
RUN_VERBS = re.compile(
    r"\b(?:runs?|ran|executes?|executed|(?:is|are|was|were|gets?|got)\s+(?:run|called|executed|invoked))\b", re.I
)
#: Words that open a consequence ("so under mixed precision", "hence ...").
CONSEQUENCE_WORDS = {"so", "hence", "thus", "therefore"}
#: What the site, the reader and the scenario matrix do: a clause about one of them is their own doing.
OWN_SUBJECTS = SITE_SUBJECTS | READERS | {"matrix", "harness", "reference", "page's", "example's", "our"}


def _execution_context(part: str) -> bool:
    """Whether a clause says that code runs under, inside or outside a mechanism of Lightning's or torch's
    (:data:`MECHANISMS`): the mechanism is owned by a name that is not the reader's ("inside the step's autocast",
    "outside Lightning's closure"), the clause draws it as a consequence ("so under mixed precision"), or the clause
    has a verb of running ("the batch-end hooks run outside the autocast"). An instruction, the page's own reference
    ("the same model in eval mode under ``torch.no_grad``") and a clause about the reader, the page or the matrix are
    not."""
    if _instruction(part.split()):
        return False
    for words in _clauses(part):
        clause = " ".join(words)
        for match in MECHANISMS.finditer(clause):
            before = [w.lower().strip(".,;:'\"`’”“") for w in clause[: match.start()].split()]
            if any(w in OWN_SUBJECTS for w in before):
                continue
            owner = re.search(r"([\w`.]+)['’]s\s", match[0])
            if owner and owner[1].lower().strip("`") not in OWN_SUBJECTS:
                return True  # "inside the step's autocast"
            if (before and before[0] in CONSEQUENCE_WORDS) or RUN_VERBS.search(clause):
                return True  # "so under mixed precision", "the hooks run outside the autocast"
    return False


#: Words that may stand between a participle and its agent ("made again every epoch by a hook").
AGENT_GAP = {"again", "anew", "every", "each", "epoch", "step", "batch", "time", "once", "twice", "later", "first",
             "then", "there", "always", "only", "also", "itself", "automatically", "silently"}  # fmt: skip
#: A hook named by its kind as an agent ("by a hook", "by the epoch-end hooks").
HOOK_AGENT = re.compile(r"(?:(?:a|an|the|each|every|its|their|one)\s+)?(?:[\w-]+\s+)?hooks?\b", re.I)


def _hook_agent(part: str) -> bool:
    """Whether a past participle has a hook as its agent, a few words of time or manner between them allowed ("loaders
    made again every epoch by a hook", "the cache emptied by ``on_train_epoch_end``"): what a hook is made to do is
    Lightning calling it. A hook of the reader's ("by a hook of your module", "by your hook") is not."""
    words = part.split()
    if _instruction(words):
        return False  # "Append the dictionary returned by validation_step to ...": the reader's code
    for index, word in enumerate(words):
        if word.lower() != "by" or index == 0:
            continue
        rest = " ".join(words[index + 1 :])
        agent = HOOKS.match(rest) or HOOK_AGENT.match(rest)
        if not agent or any(w.lower().strip(".,;:()") in READERS for w in words[index + 1 : index + 6]):
            continue
        at = index - 1
        while at > 0 and words[at].lower().strip(".,;:") in AGENT_GAP and index - at <= 3:
            at -= 1
        participle = words[at].lower().strip(".,;:()'\"`’”“")
        if PARTICIPLE.fullmatch(participle) and participle not in ("need", "speed", "feed", "seed", "bed"):
            return True
    return False


#: Data objects of torch's and Lightning's, named as a subject ("an iterable dataset", "the loader's batch sampler").
DATA_OBJECTS = re.compile(
    r"\b(?:(?:a|an|the|each|every|any)\s+)?(?:[\w-]+\s+)?(?:datasets?|(?:data)?loaders?|DataLoaders?|samplers?|"
    r"IterableDatasets?)(?:['’]s\s+(?:[\w-]+\s+)?(?:loader|sampler|batch sampler|sampler's indices))?"
    r"(?:\s+(?:of|over|for)\s+(?:(?:a|an|the)\s+)?[\w-]+(?:\s+[\w-]+)?)?\s+(?:has|have|had)\s+no\s+(?:[\w-]+\s+){1,3}?(?:to|that|which)\s+\w+",
    re.I,
)


def _absence(part: str) -> bool:
    """Whether a data object of torch's or Lightning's is said to lack a mechanism for a purpose ("an iterable dataset
    has no sampler to split it", "the loader has no batch sampler that names its samples"): what torch's loaders are
    made of is a claim. The reader's dataset, the page's and the matrix's are their own; a plain absence ("the matrix's
    dataset has no ``__len__``") names no mechanism."""
    for match in DATA_OBJECTS.finditer(part):
        before = [w.lower().strip(".,;:'\"`’”“") for w in part[: match.start()].split()[-2:]]
        own = [w.lower().strip("'’s`") for w in match[0].split()[:2]]
        if any(w in OWN_SUBJECTS for w in before + own) or any(w.startswith(("matrix", "page")) for w in own):
            continue
        return True
    return False


#: What a consequence may promise of a case: that it is no trouble, fine, safe, harmless, or does not matter.
PROMISED = re.compile(
    r"\b(?:(?:is|are|was|were|poses?|causes?|makes?|stays?)\s+(?:therefore\s+|then\s+|thus\s+)?"
    r"(?:no\s+(?:trouble|problem|issue|harm|difference|concern)|harmless|fine|safe|unaffected|cheap|not\s+a\s+problem)"
    r"|(?:does|do)\s+not\s+matter|doesn['’]t\s+matter|(?:is|are)\s+(?:therefore\s+)?(?:\w+\s+)?but\s+not\s+free)\b",
    re.I,
)


def _promise(part: str) -> bool:
    """Whether a sentence promises, as a consequence, that a case is no trouble ("They join batches with ``torch.cat``,
    so a smaller last batch is no trouble", "A list of one-element tensors is therefore cheap"): a consequence word
    (:data:`CONSEQUENCE_WORDS`) before a promise (:data:`PROMISED`) in the same sentence, which says what a library
    does in every such case. An instruction, and a promise about the reader, the page or the matrix, are not."""
    if _instruction(part.split()):
        return False
    for match in PROMISED.finditer(part):
        before = part[: match.start()].split()
        low = [w.lower().strip(".,;:'\"`’”“") for w in before]
        if not any(w in CONSEQUENCE_WORDS for w in low) and "therefore" not in match[0].lower():
            continue
        opener = max((i for i, w in enumerate(low) if w in CONSEQUENCE_WORDS), default=-1)
        if any(w in OWN_SUBJECTS for w in low[opener + 1 :]):
            continue  # "so your code is safe to rerun", "so the page is no trouble to rebuild"
        return True
    return False


#: torch's and Python's internals around a tensor's data: what sits around a storage is a claim about torch.
INTERNALS = re.compile(
    r"\b(?:(?:the\s+|torch['’]s\s+|a\s+|the\s+caching\s+)?allocator(?:['’]s)?|(?:whole\s+)?tensor\s+objects?|"
    r"Python\s+objects?|object\s+overhead|(?:tensor|storage)\s+(?:header|metadata)s?)\b",
    re.I,
)


def _internals(part: str) -> bool:
    """Whether a clause says what torch or Python keep around a tensor's data (:data:`INTERNALS`: "the tensor and
    Python objects around each storage, the allocator's rounding", "each cached element sits in a whole tensor
    object"): an internal of torch's, typed, not measured. A clause about what the page, the reader or the matrix
    count ("the page counts no Python object") is their own."""
    if _instruction(part.split()):
        return False
    for words in _clauses(part):
        clause = " ".join(words)
        for match in INTERNALS.finditer(clause):
            before = [w.lower().strip(".,;:'\"`’”“") for w in clause[: match.start()].split()]
            if not any(w in OWN_SUBJECTS for w in before):
                return True
    return False


#: "too small for more threads to help", "too few for the sampler to pad them": a reason given by degree.
TOO_FOR = re.compile(r"\btoo\s+(?:\w+\s+){1,2}?for\s+((?:[\w`.'’-]+\s+){1,4}?)to\s+\w+", re.I)
#: Words that make the thing a reason speaks of torch's or Lightning's: its workers and mechanisms.
TECHNICAL = re.compile(r"\b(?:threads?|tensors?|kernels?|the GPU|the CPU|the allocator|the sampler|the loop|"
                       r"the strategy|autograd|the graph)\b", re.I)  # fmt: skip


def _too_for(part: str) -> bool:
    """Whether a sentence explains by degree what torch or Lightning would do ("the toy model's tensors are too small
    for more threads to help", "the batches are too few for the sampler to pad them"): a ``too ... for ... to ...``
    whose sentence names a name of Lightning's or torch's (the groups of the earlier rounds, or a word of
    :data:`TECHNICAL`). The reader's and the page's own ("your dataset is too small for two processes to share") are
    theirs."""
    if _instruction(part.split()):
        return False
    for match in TOO_FOR.finditer(part):
        before = [w.lower().strip(".,;:'\"`’”“") for w in part[: match.start()].split()]
        if any(w in OWN_SUBJECTS for w in before):
            continue
        groups = (SUBJECTS, HOOKS, CONCEPT_NAMES, LIBRARY_NAMES, API_PATHS, PROCESS_NAMES, TECHNICAL)
        if any(group.search(part) for group in groups):
            return True
    return False


#: A place in a list by its neighbour ("a callback listed after this one", "listed before ``ModelCheckpoint``").
LISTED = re.compile(r"\blisted\s+(?:after|before|ahead\s+of|behind)\b", re.I)
#: What has or has not run by then ("has already run", "had not", "runs first").
HAS_RUN = re.compile(
    r"\b(?:has|have|had)\s+(?:already\s+|not\s+(?:yet\s+)?|n['’]t\s+(?:yet\s+)?)?(?:run|been\s+called|seen|not)\b"
    r"|\bruns?\s+(?:first|last|before|after)\b",
    re.I,
)


def _listed_order(part: str) -> bool:
    """Whether a place in the callbacks list given by a neighbour (:data:`LISTED`) is said to decide what has run by
    then ("when a callback listed after this one stops the run, the renamed code has already run for that batch"):
    the order Lightning calls callbacks in, as :func:`_list_order` reads it for "first in the list, so". A place alone
    ("the plain callback is listed after the recipe's") is the reader's list."""
    if _instruction(part.split()):
        return False
    return bool(LISTED.search(part) and HAS_RUN.search(part))


#: Words that are not verbs after a name ("so max_steps and ...", "so torch's ..."): the name is then no subject.
NOT_VERBS = PREPOSITIONS | DETERMINERS | {"and", "or", "but", "nor", "as", "is", "was", "are", "were", "has", "had"}


def _consequence_subject(part: str) -> bool:
    """Whether a consequence (:data:`CONSEQUENCE_WORDS`) has a name of Lightning's or torch's as its subject -- a
    ``Trainer`` argument named bare, a name of Lightning, a hook, a concept, a library or a path into the API -- and a
    verb after it, whatever the verb ("..., so ``max_steps`` never came", "so the loop waited"): an explanation of
    what Lightning or torch did, typed. A purpose ("so that every rank makes the same calls"), a process of the
    page's run ("so the main process reads the file": the process rule reads those) and a consequence about the
    reader's code or the page ("so your module keeps it") are not."""
    if _instruction(part.split()):
        return False
    names_ = (SETTING_NAMES, SUBJECTS, HOOKS, CONCEPT_NAMES, LIBRARY_NAMES, API_PATHS)
    for match in re.finditer(r"\b(?:so|hence|thus|therefore)\s+(?!that\b)", part, re.I):
        rest = re.sub(r"^(?:the|a|an|each|every)\s+(?=\S)", "", part[match.end() :], flags=re.I)
        found = next((m for group in names_ if (m := group.match(rest) or group.match(part[match.end() :]))), None)
        if found is None or rest[found.end() : found.end() + 2] in ("'s", "’s"):
            continue
        after = [w.strip(".,;:()'\"`’”“") for w in rest[found.end() :].split()]
        while after and after[0].lower() in ADVERBS:
            after = after[1:]
        if after and re.fullmatch(r"[a-z]+", after[0]) and after[0] not in NOT_VERBS:
            return True
    return False


#: A comparison of speed or cost stated as a fact ("the first fits of a process are slower", "``torch.cat`` is faster").
SPEED = re.compile(
    r"\b(?:is|are|was|were|runs?|ran|gets?|got|becomes?|stays?)\s+(?:\w+\s+)?"
    r"(?:slower|faster|quicker|cheaper|costlier|more\s+expensive|less\s+expensive)\b",
    re.I,
)


def _speed(part: str) -> bool:
    """Whether a clause states, as a fact, that something of torch's or Lightning's is slower, faster or cheaper ("the
    first fits of a process are slower", "a ``MeanMetric`` is cheaper than a list"): a measurement typed, where the
    page measures and prints its own. An instruction, a question inside the sentence ("whether one is slower"), a
    modal ("may be slower") and a clause about the page, the reader or the matrix are not."""
    if _instruction(part.split()):
        return False
    for words in _clauses(part):
        clause = " ".join(words)
        for match in SPEED.finditer(clause):
            before = [w.lower().strip(".,;:'\"`’”“") for w in clause[: match.start()].split()]
            if any(w in OWN_SUBJECTS | EMBEDDED | MODALS | {"may", "might", "can", "could", "if"} for w in before):
                continue
            return True
    return False


SEVENTH_ROUND = {
    "execution context": _execution_context,
    "hook agent": _hook_agent,
    "absence": _absence,
    "promise": _promise,
    "internals": _internals,
    "too for": _too_for,
    "listed order": _listed_order,
    "consequence": _consequence_subject,
    "speed": _speed,
}


# -- Eighth round: a label's clause, a handed argument's condition, the sampler's order, manual optimization ---------
#: A label before a colon ("Note:", "In short:", "Heads up:"): one to three words, the first capitalized.
LABEL = re.compile(r"^\s*[A-Z][\w’'-]*(?:\s+[a-z][\w’'-]*){0,2}\s*:\s+")
#: Lightning's names as a contributor types them in lower case at the start of a clause ("lightning calls ...").
LOWER_SUBJECTS = re.compile(r"^(?:pytorch[ -]lightning|lightning)(?![\w.])", re.I)
#: What the site, the reader, the page's own code and the checker are: a clause about one of them is their own.
OWN_WORDS = OWN_SUBJECTS | {"recipe", "recipe's", "helper", "marker", "fix", "rewrite", "finding", "this", "these"}
#: A behaviour verb's finite form: a third-person or past form of :data:`CONCEPT_VERBS` or :data:`SUBJECT_VERBS`.
FINITE = re.compile(r"[a-z]+(?:[^s]s|ed)|" + "|".join(IRREGULAR + HOOK_FORMS))


def _finite_verb(words: list[str], start: int = 1, open_: bool = False) -> int | None:
    """The index of the first finite behaviour verb of ``words`` from ``start`` on: a passive of a behaviour verb
    ("is divided", "are not copied") or a third-person or past form ("receives", "kept"); with ``open_``, of any verb
    ("leaves", "is stepped"). ``None`` when none comes before a word that ends the noun phrase (a comma, a relative
    pronoun, a modal)."""
    for index in range(start, len(words)):
        word = words[index].lower().strip(".,;:()'\"`’”“")
        if word in MODALS | {"may", "might", "can", "could", "that", "which", "who", "if", "when", "whether", "what"}:
            return None
        previous = words[index - 1].lower() if index else ""
        if word in NOUNS_TOO and (previous.endswith(("'s", "’s", "s'", "s’")) or previous in NOUN_BEFORE):
            continue  # a noun: "each hook's calls", "the batch-end hooks' calls"
        if word in PASSIVE | {"is", "are", "was", "were"}:
            rest = [w.lower().strip(".,;:()'\"`’”“") for w in words[index + 1 : index + 4]]
            rest = [w for w in rest if w not in ADVERBS | {"not"}]
            if rest and (VERBS.fullmatch(rest[0]) or (open_ and PARTICIPLE.fullmatch(rest[0]))):
                return index
        if FINITE.fullmatch(word) and (open_ or CONCEPT_VERBS.fullmatch(word) or SUBJECT_VERBS.fullmatch(word)):
            return index
        if words[index].endswith((",", ";", ":")):
            return None
    return None


def _label_clause(part: str) -> bool:
    """Whether a lowercase clause after a colon states a behaviour (a): read as a sentence of its own, with Lightning's
    name as a reader would capitalize it ("Note: lightning calls the hook once per epoch" is "Lightning calls the hook
    once per epoch"), it is flagged by another rule; or, after a label ("Note:", "Important:", "In short:"), it has a
    subject and a finite behaviour verb ("Important: the loss is divided by the accumulation count", "Tip: the
    callback receives the outputs of each step"). A clause about the reader, the page, the recipe's own code or the
    checker ("Note: your list keeps every loss", "Note: the page runs two epochs"), an instruction ("Tip: clear the
    list ...") and a clause of a term and its definition are not."""
    labelled = LABEL.match(part)
    if labelled and re.match(r"\s*\w+(?:Error|Warning|Exception)\s*:", part):
        labelled = None  # an error's words, as the reader's console printed them ("RuntimeError: stack expects ...")
    for at, clause in enumerate(re.split(r"(?<=:)\s+", part)[1:]):
        if not re.match(r"[a-z`\"“(]", clause) or (at == 0 and labelled is None and LABEL.match(part)):
            continue
        clause = clause.split(";")[0]
        words = [w.strip('`"“”') for w in re.sub(r"\([^()]*\)", " ", clause).split()]
        low = [w.lower().strip(".,;:'\"`’”“()") for w in words]
        if not words or any(w in OWN_WORDS or w in READERS for w in low) or TOPIC_WORD.match(low[0]):
            continue  # the reader's, the page's or the checker's; a topic ("Hook order: when validation runs")
        if low[0] in VERB_STEMS or low[0] in READER_VERBS or low[0] in ("define", "add", "see", "use", "set", "put"):
            continue  # an instruction: "Tip: clear the list when each epoch starts"
        sentence = clause[:1].upper() + clause[1:]
        sentence = LOWER_SUBJECTS.sub(lambda match: "Lightning", sentence)
        if reasons(sentence):
            return True
        if not labelled or at or not clause.rstrip().endswith((".", "!")) or FINITE.fullmatch(low[0]):
            continue  # a title ("The proof: the model applied by hand"), a clause without a subject
        verb = _finite_verb(words)
        if verb is None:
            continue
        code = re.search(r"[_(]", " ".join(words[:verb]))  # the reader's code, named: "on_train_batch_end appends"
        if not (code and low[verb] in {f for stem in READER_VERBS for f in _inflections(stem)}):
            return True
    return False


#: A handed argument or a called hook with its condition, in the passive (b): "``dataloader_idx`` is passed only when
#: ...", "the hook is called only if ...", "it is not given with one loader".
HANDED_WHEN = re.compile(
    r"\b(?:is|are|was|were|gets?|got)\s+(?:(?:only|just|solely|never|not|always|then)\s+)?"
    r"(?:passed|given|handed|supplied|provided|called|invoked|fired|triggered|sent)\s+(?:over\s+|in\s+|on\s+)?"
    r"(?:(?:only|just|solely|then|too|also|with\s+[\w`\[\]\"'.]+)\s+){0,2}"
    r"(?:when|whenever|if|unless|once|while|with|without|under|during|for|on|in)\b",
    re.I,
)


def _handed_when(part: str) -> bool:
    """Whether a sentence says in the passive when something is handed or called ("``dataloader_idx`` is passed only
    when there are several loaders", "The index is given only if ...", "It is passed only with several loaders"):
    what Lightning passes and calls, and when, whatever the subject. An instruction, and a subject of the reader's,
    the page's or the checker's ("your hook is called only when you call it", "the marker is given only with --fix"),
    are not."""
    if _instruction(part.split()):
        return False
    for words in _clauses(part):
        clause = " ".join(words)
        for match in HANDED_WHEN.finditer(clause):
            before = [w.lower().strip(".,;:'\"`’”“()") for w in clause[: match.start()].split()]
            if any(w in ("when", "whenever", "wherever", "where", "if", "unless", "once") for w in before):
                continue  # a condition: "the default stands in wherever the hook is called without it"
            if before and not any(w in OWN_WORDS or w in READERS for w in before):
                return True
    return False


#: A sampler of torch's or Lightning's as a subject (c): "the sampler", "a ``DistributedSampler``", "each rank's
#: sampler", "samplers", and ``shuffle=...`` that sets one.
SAMPLERS = re.compile(
    r"(?<![\w.])(?:(?:the|a|an|each|every|its|their|one|[\w`]+['’]s)\s+)?(?:(?:distributed|sequential|random|batch|"
    r"default|training|validation|loader['’]s)\s+)?(?:samplers?|DistributedSampler|SequentialSampler|RandomSampler|"
    r"BatchSampler)(?![\w'’])|(?<![\w.])shuffle=\w+",
    re.I,
)
#: An order of samples, indices or batches said of the data ("in the dataset's order", "interleaved", "every second
#: index", "keeps the order").
ORDER_PHRASE = re.compile(
    r"\b(?:in\s+(?:the\s+)?(?:dataset['’]s\s+|same\s+|their\s+|its\s+|index\s+|sequential\s+|random\s+|"
    r"(?:a\s+)?(?:new|random|different|shuffled)\s+)order|interleav\w*|round[- ]robin|every\s+(?:second|other|third|"
    r"\w+th)\s+(?:index|indices|sample|samples|row|rows)|(?:keeps?|kept|preserves?|preserved|loses?|lost|changes?|"
    r"changed|breaks?|broke|shuffles?|shuffled)\s+(?:the\s+)?(?:[\w`]+['’]s\s+)?order)\b",
    re.I,
)
#: What comes in an order: the data a sampler hands out.
ORDERED = re.compile(r"\b(?:samples?|indices|index|batches|batch|rows?|ranks?|shards?|data|dataset)\b", re.I)


def _sampler_order(part: str) -> bool:
    """Whether a sampler is the subject of a finite verb ("each rank's sampler takes every second sample",
    "``shuffle=False`` keeps the order of the dataset", "samplers keep the order across epochs"), or the data a sampler
    hands out is said to come in an order ("with ``shuffle=False`` the samples come in the dataset's order", "the
    samples arrive interleaved between the ranks"): the order torch's and Lightning's samplers give. An instruction,
    and the reader's, the page's or the recipe's own sampler or order ("your sampler keeps ...", "the page gathers the
    vectors in the dataset's order", "sort the rows to restore the dataset's order"), are not."""
    if _instruction(part.split()) or re.search(r"\bown\b", part, re.I):
        return False  # an instruction; the page's or the reader's own loader ("the module builds its own loader")
    for words in _clauses(part):
        clause = " ".join(words)
        low = [w.lower().strip(".,;:'\"`’”“()") for w in words]
        if any(w in OWN_WORDS or w in READERS or w in MODALS for w in low):
            continue
        for match in SAMPLERS.finditer(clause):
            before = clause[: match.start()].split()
            if before and (before[-1].lower() in PREPOSITIONS | EMBEDDED or VERBS.fullmatch(before[-1].lower())):
                if not match[0].lower().startswith("shuffle="):
                    continue  # an object: "made with a sampler", "replaces the sampler"
            after = clause[match.end() :].split()
            while after and after[0].lower().strip(",") in ADVERBS | {"and", "also"}:
                after = after[1:]
            if after and _finite_verb(["\x01", *after]) == 1:
                return True
            if (
                after
                and re.fullmatch(r"[a-z]+", after[0])
                and (after[0] in ("keep", "give", "shuffle", "take", "hand", "split", "repeat", "pad"))
            ):
                return True  # a plural subject: "samplers keep the order"
        for match in ORDER_PHRASE.finditer(clause):
            before = clause[: match.start()]
            if ORDERED.search(before) and _moved(before + match[0]) and not OWN_ORDER.search(before):
                return True
    return False


#: A finite verb, or a verb of motion, before an order: the data "come" or "are" in it.
MOTION = set(
    "is are was were stay stays stayed come comes came arrive arrives arrived go goes went reach reaches reached end "
    "ends ended".split()
)


def _moved(text: str) -> bool:
    """Whether ``text`` holds a behaviour verb (:data:`CONCEPT_VERBS`) or a verb of being or motion (:data:`MOTION`)."""
    return any(CONCEPT_VERBS.fullmatch(w) or w in MOTION for w in re.findall(r"[a-z]+", text))


#: What the page's code does to restore an order ("sort the rows", "gathers them back").
OWN_ORDER = re.compile(r"\b(?:sort|sorted|restore|restores|restored|gather|gathers|gathered|puts?|back)\b", re.I)
#: Manual optimization, named (c).
MANUAL = re.compile(r"\b(?:manual\s+optimi[sz]ation|automatic_optimization\s*=\s*False)\b", re.I)
#: What a sentence about manual optimization may say Lightning does something to: ``outputs`` (with a key), the loss,
#: the step's output, the optimizer step, the closure, the scheduler, ``backward``.
MANUAL_NAMES = re.compile(
    r"(?<![\w.\[-])(?:outputs(?:\[[\"'][\w-]+[\"']\])?|(?:the|a|an|each|its)\s+(?:step['’]s\s+)?(?:loss|losses|output|"
    r"outputs|closure|scheduler|schedulers|optimizer\s+step)|backward|the\s+trainer)"
    r"(?![\w'’])",
    re.I,
)


def _manual_optimization(part: str) -> bool:
    """Whether a sentence that names manual optimization says what Lightning does there: a name of Lightning
    (:data:`SUBJECTS`), a hook, ``outputs`` or the step's loss (:data:`MANUAL_NAMES`) is the subject of a finite verb
    ("Under manual optimization, ``outputs`` holds the whole buffer", "the step's loss reaches the hook detached", "the
    loss in outputs is not copied"). What the reader's step does ("Under manual optimization, your step calls
    ``manual_backward``"), an instruction after the opening phrase ("Under manual optimization, append each loss ..."),
    and the page's or the recipe's own code are not."""
    if not MANUAL.search(part):
        return False
    clauses = [" ".join(words) for words in _clauses(part)]
    opener = r"^\s*(?:under|with|in|for|during)\s+(?:(?:a|the)\s+)?(?:" + MANUAL.pattern + r")[\s,]*"
    reader_forms = {f for stem in READER_VERBS for f in _inflections(stem)}
    for index, clause in enumerate(clauses):
        if not MANUAL.search(clause):
            continue
        rest = MANUAL.sub("it", re.sub(opener, "", clause, flags=re.I)).strip()
        if not rest and index + 1 < len(clauses):
            rest = clauses[index + 1]  # "Under manual optimization, outputs holds ..."
        low = [w.lower().strip(".,;:'\"`’”“()") for w in rest.split()]
        if not low or any(w in OWN_WORDS or w in READERS or w in MODALS for w in low):
            continue
        if _instruction(rest.split()) or low[0] in VERB_STEMS:
            continue  # "Under manual optimization, append each loss in training_step"
        for group in (SUBJECTS, HOOKS, MANUAL_NAMES):
            for match in group.finditer(rest):
                before = rest[: match.start()].split()
                if before and (before[-1].lower() in PREPOSITIONS | EMBEDDED or VERBS.fullmatch(before[-1].lower())):
                    continue
                after = rest[match.end() :].split()
                # the noun phrase may go on ("the loss in outputs", "the step's loss of a batch")
                while after and after[0].lower() in ("in", "of", "from") and len(after) > 2:
                    after = after[2:]
                if group is HOOKS and after and after[0].lower().strip(".,") in reader_forms:
                    continue  # the reader's step: "training_step returns"
                if _finite_verb(["\x01", *after], open_=True) == 1 or (
                    after and after[0].lower() in ("keep", "hold", "reach", "get", "stay", "come", "see")
                ):
                    return True
                if (
                    after[:1]
                    and after[0] in ("is", "are", "was", "were")
                    and after[1:2]
                    and after[1] in ("a", "an", "the")
                ):
                    return True  # "an output is the dict training_step returned"
    return False


#: ``outputs``, or a key of it, as the subject of any finite verb (c): "``outputs["loss"]`` holds the whole buffer".
OUTPUTS = re.compile(r"(?<![\w.\[\"'-])outputs(?:\[[\"'][\w-]+[\"']\])?(?![\w\[=(.-])")


def _outputs_subject(part: str) -> bool:
    """Whether ``outputs`` or a key of it is the subject of a finite verb, whatever the verb ("``outputs`` holds the
    loss of each step", "``outputs["loss"]`` keeps the whole buffer", "``outputs`` is the dict the step returned"): what
    Lightning hands a hook. An instruction, an object ("the callback reads ``outputs["loss"]``") and a condition on it
    ("when ``outputs["loss"]`` is None") are not."""
    if _instruction(part.split()):
        return False
    for match in OUTPUTS.finditer(part):
        before = [w.lower().strip('(,`"“') for w in part[: match.start()].split()]
        if before and (
            before[-1] in MODIFIER_BEFORE | EMBEDDED | {"when", "if", "where", "whether", "unless", "while"}
            or VERBS.fullmatch(before[-1])
        ):
            continue  # an object or a condition: "the callback reads outputs", "when outputs is None"
        after = [w.strip(',;()`"“”') for w in part[match.end() :].split()]
        while after and after[0].lower() in ADVERBS:
            after = after[1:]
        if not after or after[0].lower() in ("is", "was") and after[1:2] in (["None"], ["None."], ["empty"]):
            continue
        if before and (before[-1] in ("old", "empty", "new") or part.split()[len(before) - 1][:1].isupper()):
            continue  # a name: "the old outputs hooks", a page's title ("Empty outputs shows ...")
        if after[0].lower().strip(".,;:") in PLURAL_NOUNS:
            continue  # a compound: "the outputs hooks"
        if _finite_verb(["\x01", *after], open_=True) == 1:
            return True
        if after[0] in ("is", "are", "was", "were") and after[1:2] and after[1].lower() in ("a", "an", "the", "one"):
            return True  # "outputs is the dict the step returned"
    return False


EIGHTH_ROUND = {
    "label clause": _label_clause,
    "handed when": _handed_when,
    "sampler order": _sampler_order,
    "manual optimization": _manual_optimization,
    "outputs subject": _outputs_subject,
}

#: An exception's name, as a sentence of the site prints it (its literal's backticks gone or kept).
ERROR_NAME = r"`*(?:[A-Z]\w*(?:Error|Exception)|StopIteration)\b"
#: A run's outcome stated as a fact: code that fails, raises or stops with an exception or in a named function
#: ("the callback that reads it fails in torch.cat", "it raises a KeyError"), or an error as what something is
#: ("Both are KeyError: 'loss'").
OUTCOME = re.compile(
    r"\b(?:fails|failed|raises|raised|stops|stopped|crashes|crashed|dies|died)\s+(?:\S+\s+){0,3}?"
    r"(?:(?:with|in|at)\s+`*[a-z_]+\.[a-z_]+|(?:(?:a|an|the)\s+)?" + ERROR_NAME + ")"
    r"|\b(?:is|are|was|were)\s+(?:(?:a|an)\s+)?" + ERROR_NAME
)
#: Words that make the outcome a possibility, a condition or the reader's to avoid, not a fact the run shows.
OUTCOME_MODALS = {"would", "could", "may", "might", "can", "must", "should", "if", "unless", "when", "whenever"}


def _outcome(part: str) -> bool:
    """Whether the clause states how a run ended -- the code failed, raised or stopped, with an exception or in a
    named function, or an error is what something was -- as a fact, outside a claim: what Lightning or torch did to
    it. Pointing at the run ("the error below", "printed above"), a modal or a condition, an instruction, and the
    checker's own errors (``lightning_migrate``'s ``RewriteError``) are not."""
    words = part.split()
    if not OUTCOME.search(part) or _instruction(words):
        return False
    lowered = {w.lower().strip(",.;:()`") for w in words}
    if lowered & OUTCOME_MODALS or lowered & {"below", "above", "printed", "prints"}:
        return False
    return "lightning_migrate" not in part and "lightning-migrate" not in part


TENTH_ROUND = {"outcome": _outcome}


# -- Eleventh round: a subject named in more ways, a finite verb off the lists ---------------------------------------
#: More names of what Lightning, torch, torchmetrics and DDP are, as the subject of a clause: Lightning under other
#: names, its mechanisms named as nouns ("the progress bar", "gradient clipping"), a hook named through its class
#: (``Callback.on_train_epoch_end``) or by its kind without hyphens, torch's autograd and tensors, torchmetrics'
#: classes and methods, and the devices and replicas of a distributed run.
ENTITY_WORDS = [
    "Lightning", "PL", "PyTorch Lightning", "the framework", "Fabric", "the Trainer", "the trainer", "Trainer",
    "the progress bar", "progress bar", "the logger", "the loop", "the optimizer", "the scheduler",
    "the LR scheduler", "gradients", "the gradients", "gradient clipping", "checkpointing", "early stopping",
    "logging", "mixed precision", "AMP", "GradScaler", "the scaler", "backward", "loss.backward()", ".backward()",
    ".item()", "requires_grad", "grad_fn", "no_grad", "autograd", "the graph", "a view", "views",
    "in-place operations", "a tensor", "tensors", "a float32 scalar tensor", "a scalar tensor", "torch", "PyTorch",
    "a torchmetrics Metric", "metric.compute()",
    "compute()", "metric states", "torchmetrics", "DistributedDataParallel", "DDP", "every GPU", "each GPU",
    "each device", "every device", "each replica", "every replica", "the batch size", "the sampler",
    "the old outputs list", "the old hook", "the old hooks", "the old signature", "the validation run",
    "the sanity check", "sanity checking", "the validation loop", "the training loop",
    # twelfth round: precision modes, the trainer's counters, Lightning's packages, a hook named as "the hook"
    "16-mixed", "bf16", "bf16-mixed", "bf16 training", "autocast", "global_step", "current_epoch", "callback_metrics",
    "logged_metrics", "is_global_zero", "sanity_checking", "pytorch_lightning", "the pytorch_lightning package",
    "lightning.pytorch", "the hook", "the hooks", "each hook", "every hook", "checkpoint callbacks",
    "the checkpoint callback", "rank zero", "global rank 0",
    # thirteenth round: Lightning's utilities named as a subject
    "CombinedLoader", "rank_zero_only", "all_gather", "the prediction writer", "a prediction writer",
    # fourteenth round: Lightning's mechanisms named by what they do, a bare tensor
    "gradient accumulation", "manual optimization", "automatic optimization", "tensor", "the tensor",
]  # fmt: skip
ENTITIES = re.compile(
    "|".join(
        [
            "(?i:" + _alternatives(sorted(ENTITY_WORDS, key=len, reverse=True)).pattern + ")",
            r"(?<![\w.])(?:MetricCollection|Metric|MeanMetric|SumMetric|MaxMetric|MinMetric|CatMetric)\b",  # their case
            SUBJECTS.pattern,
            HOOKS.pattern,
            CONCEPT_NAMES.pattern,
            # a hook through its class ("Callback.on_train_epoch_end")
            r"(?<![\w.])(?:pl\.)?(?:LightningModule|Callback|Trainer|trainer)\.\w+(?:\(\))?",
            r"\b(?:epoch|batch) (?:end|start) hooks?\b",  # a hook kind without its hyphens
            r"\bLightning[A-Z]\w+",  # Lightning's classes ("LightningLite", "the LightningModule hook")
            # a method of torch, torchmetrics or Lightning called on anything ("detach()", "metric.reset()")
            r"(?<![\w])(?:\w+\.)*(?:detach|clone|item|backward|compute|update|reset|forward|eval|zero_grad|"
            r"all_gather|to|cpu|tolist)\(\)",
            r"\b(?:" + "|".join(map(re.escape, probes.TRAINER_DEFAULTS)) + r")\b",  # a Trainer argument's name
            LIBRARY_NAMES.pattern,
            API_PATHS.pattern,  # "torch.no_grad() is active", "self.trainer.strategy.reduce sums"
            r"(?<![\w.])[a-z_]+=(?:\"[^\"]*\"|'[^']*'|[\w.-]+)",  # a setting opening a clause ('precision="16-mixed"')
        ]
    )
)
#: Words that make a clause's subject the reader's, the page's or the checker's: what they do is not Lightning's.
OWN_SUBJECT = {
    "you", "your", "yours", "we", "our", "this", "these", "page", "page's", "page’s", "checker", "checker's",
    "lightning-migrate", "recipe", "recipe's", "recipe’s", "rewrite", "rewritten", "fix", "check", "example",
    "examples", "gallery", "matrix", "table", "box", "guide", "notebook", "readers", "users", "section", "cell",
    "documentation", "docs", "changelog", "notes", "entry", "entries", "record", "records", "recorded", "here",
}  # fmt: skip
#: Phrases that open a clause on the reader's behalf and leave a fact after them ("Note that autograd frees ...").
LEAD_INS = re.compile(
    r"^(?:note|notice|remember|recall|mind|beware|be aware|keep in mind|bear in mind|know|expect|observe)"
    r"(?:\s+that)?[:,]?\s+",
    re.I,
)
#: Words that open an introductory phrase, which a comma ends before the clause's subject ("Under DDP, ...").
INTRO_OPENERS = {
    "under", "with", "from", "starting", "as", "in", "on", "after", "before", "when", "whenever", "if", "unless",
    "once", "right", "by", "during", "at", "for", "since", "until", "while", "out", "without", "then",
}  # fmt: skip
#: Forms that open a verb phrase whatever the verb: a modal, ``be``, ``have``, ``get`` and ``do`` as auxiliaries.
AUXILIARIES = {
    "will", "would", "can", "cannot", "could", "may", "might", "won't", "can't", "is", "are", "was", "were", "gets",
    "get", "got", "has", "have", "had", "does", "did", "doesn't", "don't", "didn't", "isn't", "aren't", "wasn't",
    "keeps", "stays", "remains", "becomes",
}  # fmt: skip
#: Past forms of verbs the lists hold only in their base form.
IRREGULAR_PAST = set(
    "took came went made got held kept ran sat grew gave threw fell left began brought broke stood saw blew hit put "
    "set cut spread dropped stopped".split()
)
#: Base forms a plural subject takes that :data:`VERB_STEMS` does not hold ("Checkpoint callbacks always go last").
BASE_VERBS = set("go come stay need have sit end start happen arrive differ share see reach stop".split())
#: Verbs whose subject a hook name may be as the reader's own code ("``training_step`` appends ...").
READER_FORMS = {form for stem in READER_VERBS for form in _inflections(stem)}


def _finite(words: list[str], index: int) -> bool:
    """Whether ``words[index]`` is the finite verb of a clause whose subject ends right before it: an auxiliary, a
    behaviour verb's third-person or past form, or any third-person or ``-ed`` form right after the subject."""
    word = words[index].strip(".,;:()`'\"“”").lower()
    if not word or not word.isalpha() and "'" not in word and "’" not in word:
        return False
    raw = words[index].strip('.,;:()`"“”')
    if raw.endswith(("'s", "’s", "s'", "s’")):
        return False  # a possessive ("the last validation run's vectors")
    if index + 1 < len(words) and words[index + 1].startswith("("):
        return False  # a noun and its list ("the Trainer calls (fit, validate, ...)")
    if word in AUXILIARIES or word in IRREGULAR_PAST or word in PRO_VERBS:
        return True
    if word in PLURAL_NOUNS - NOUNS_TOO or word in NOUNS_TOO and index and _noun_after(words[:index]):
        return False  # "Lightning users", "a run", "the calls"
    if ENTITIES.fullmatch(words[index].strip(".,;:()`'\"“”")) or LIBRARY_NAMES.fullmatch(word):
        return False  # a name ("torchmetrics"), not a verb
    if VERBS.fullmatch(word) and not word.endswith("ing") and word not in VERB_STEMS:
        return True
    previous = words[index - 1].strip(",.()`'\"“”") if index else ""
    if (
        (word in VERB_STEMS or word in BASE_VERBS)
        and previous.endswith("s")
        and not previous.endswith(("ss", "'s", "’s"))
    ):
        return True  # a plural subject's verb ("gradients accumulate", "the epoch-end hooks take")
    if word.endswith("ed"):  # a past form, unless a participle with its agent ("weighted by batch size")
        following = words[index + 1].lower() if index + 1 < len(words) else ""
        return bool(VERBS.fullmatch(word)) and following != "by"
    return word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")) and len(word) > 3


def _clauses_of(part: str) -> list[list[str]]:
    """The words of each clause of ``part`` from its subject on: a clause ends at a semicolon, a colon or a dash; a
    lead-in (:data:`LEAD_INS`: "Note that") is left out, and an introductory phrase (:data:`INTRO_OPENERS`) up to its
    comma, or for a preposition with no comma up to the determiner that opens the subject ("Under DDP the batch size
    ..."). A condition without a comma ("If you return None") has no subject of its own."""
    found = []
    for clause in re.split(r"[;:]\s|\s(?:[—–]|--)\s|\x00|,?\s(?:which means|which is why|because|so that|so)\s", part):
        words = LEAD_INS.sub("", clause.strip()).split()
        if not words or words[0].lower() not in INTRO_OPENERS:
            found.append(words)
            continue
        comma = next((i for i, w in enumerate(words[:12]) if w.endswith(",")), None)
        determiner = next((i for i, w in enumerate(words[1:5], 1) if w.lower() in DETERMINERS), None)
        opener_is_preposition = words[0].lower() in PREPOSITIONS
        if opener_is_preposition and determiner is not None and (comma is None or determiner < comma):
            if not any(_finite(words, i) for i in range(1, determiner)):
                found.append(words[determiner:])  # "Under DDP the batch size is per process, not global"
                continue
        if comma is not None:
            found.append(words[comma + 1 :])  # "With two GPUs, every GPU receives ..."
    return found


#: Words that may stand before a name that opens a clause's subject ("the old", "a running"), and between the name
#: and its verb ("The trainer object exposes", "torch itself frees").
SUBJECT_LEAD = DETERMINERS | {"old", "older", "new", "same", "plain", "default", "running", "own", "whole", "single",
                              "only"}  # fmt: skip
SUBJECT_TAIL = ADVERBS | {"object", "instance", "class", "itself", "alone", "too", "again", "usually", "often"}
#: Nouns a name may take after it as a compound ("the progress bar values", "the LightningModule hook").
SUBJECT_COMPOUND = (PLURAL_NOUNS - NOUNS_TOO) | {
    "hook",
    "value",
    "argument",
    "method",
    "package",
    "training",
    "callback",
}


#: A clause whose subject is an action ("Setting ``max_epochs=-1`` makes ...", "Holding on to the loss keeps ..."):
#: an ``-ing`` word opening it, a name of Lightning or torch, a setting or a tensor inside it, then a finite verb.
GERUND_OBJECTS = re.compile(r"\b(?:tensors?|loss|losses|outputs|graph|ckpt_path|checkpoints?)\b|\w=\S")


def _gerund_subject(words: list[str]) -> bool:
    if not words or not re.fullmatch(r"[A-Z][a-z]+ing", words[0]) or words[0].lower() in ("during", "according"):
        return False
    for index in range(2, min(len(words), 9)):  # the word after the -ing word is its object ("Storing detached")
        if _finite(words, index) and not words[index].lower().endswith(("ing", "ed")):
            phrase = " ".join(words[:index])
            return bool(ENTITIES.search(phrase) or GERUND_OBJECTS.search(phrase) or KEYWORDS.search(phrase))
    return False


def _entity_subject(part: str) -> bool:
    """Whether a clause opens with a name of Lightning, torch, torchmetrics or DDP (:data:`ENTITIES`: the
    ``Trainer``, autograd, a torchmetrics class, "every GPU") as its subject -- only :data:`SUBJECT_LEAD` words before
    it, at most one :data:`SUBJECT_TAIL` word (or a parenthesis between commas) after it -- followed by a finite verb
    (:func:`_finite`): "The Trainer zeroes the gradients", "backward frees the graph", "MetricCollection syncs across
    ranks", "Note that autograd frees ...", "Expect the trainer to call ...". A possessive hands the subject to its
    noun ("Lightning's progress bar refreshes": the progress bar is a name too). A hook name is left to the hook
    rule, and an instruction, the reader's, the page's and the checker's own subjects (:data:`OWN_SUBJECT`) are left
    out."""
    expected = re.match(r"(?i)\s*expect\s+(.{1,40}?)\s+to\s+[a-z]+", part)
    if expected and ENTITIES.search(expected[1]) and not {w.lower() for w in expected[1].split()} & OWN_SUBJECT:
        return True  # "Expect the trainer to call on_fit_end exactly once"
    for words in _clauses_of(part):
        if not words or _instruction(words):
            continue
        if {w.lower().strip(".,;:()") for w in words} & {"above", "below", "printed", "prints"}:
            continue  # the page's own run ("Every cached tensor has a graph, as the output above counts")
        if _gerund_subject(words):
            return True  # "Resuming with ckpt_path restores the epoch", "Storing detached tensors still keeps ..."
        text = " ".join(words)
        for match in ENTITIES.finditer(text):
            before = [w for w in text[: match.start()].split() if w.strip("\"'“”‘’`(")]
            lead = [w for w in before if not w.endswith(("'s", "’s")) and not (w.istitle() and w.endswith("ing"))]
            if len(before) > 3 or any(w.lower() not in SUBJECT_LEAD and not w.endswith("ed") for w in lead):
                break  # only the clause's first name can be its subject ("Calling .item()", "Lightning's ...")
            if {w.lower() for w in before} & OWN_SUBJECT or HOOKS.fullmatch(match[0]):
                break
            generic_hook = match[0].lower().split()[-1] in ("hook", "hooks")
            rest = text[match.end() :]
            if rest.startswith(("'s", "’s")):
                continue  # the possessive's noun is the subject: the next name, if it is one
            rest = rest.lstrip('"”’`)')  # a closing quote or parenthesis ("'ddp_spawn' pickles ...")
            if rest.startswith(","):  # "The Trainer, after the last batch of every epoch, resets ..."
                close = rest.find(",", 1)
                tail = rest[close + 1 :].split() if close > 0 else []
                if tail and close < 80 and _finite([match[0].split()[-1], *tail], 1):
                    return True
                break
            after = [match[0].split()[-1], *rest.split()]  # the name's last word: a plural takes the base form
            at = 1
            while at < min(len(after), 4) and (
                after[at].lower() in SUBJECT_TAIL | SUBJECT_COMPOUND or re.fullmatch(r"[A-Z][a-z]+[A-Z]?\w*", after[at])
            ):
                at += 1  # "torchmetrics Accuracy now requires", "the progress bar values are"
            setting = "=" in match[0]  # a setting is the reader's: only what it does counts ("wraps", not "is")
            if setting and after[at : at + 1] and after[at].lower() in AUXILIARIES:
                break
            if at < len(after) and _finite(after, at) and after[at].lower() not in OWN_SUBJECT:
                if not (generic_hook and (at > 1 or after[at].lower().strip(".,;:") in READER_FORMS)):
                    return True  # ("the hook logs the mean": the reader's hook doing what the reader's code does)
            break
    return False


#: A reader who meets Lightning's behaviour ("You will see ...", "You get a ``TypeError``") or a callback handed
#: something ("the callback gets the loss", "arrives in the callback"): what is handed is Lightning's to hand.
EXPERIENCED = re.compile(
    r"\byou(?:['’]ll| will)?\s+(?:see|get|hit|notice|find|receive|observe|run into)\b"
    r"|\b(?:callbacks?|modules?|hooks?|steps?)\s+(?:\w+\s+)?(?:gets|got|receives|received|sees|saw)\s+(?:the|a|an|"
    r"its|every|each|no|only)\b"
    r"|\barriv(?:es|ed|e)\s+(?:in|at)\b",
    re.I,
)


def _experienced(part: str) -> bool:
    """Whether the clause says what the reader will meet or what a callback or module is handed
    (:data:`EXPERIENCED`), with a name of Lightning, torch or an exception in it; pointing at the page's own run
    ("below", "above") or an instruction is not."""
    words = part.split()
    if not EXPERIENCED.search(part) or _instruction(words):
        return False
    lowered = {w.lower().strip(",.;:()`") for w in words}
    if lowered & {"below", "above", "printed", "here", "can", "should", "must"}:
        return False
    return bool(ENTITIES.search(part) or re.search(ERROR_NAME, part) or re.search(r"\b(?:loss|batch|outputs)\b", part))


#: An error met with other verbs than :data:`OUTCOME`'s ("errors out", "ends with a ``ValueError``", "triggers a
#: ``RuntimeError``", "blows up").
OUTCOME_MORE = re.compile(
    r"\b(?:errors?\s+out|errored\s+out|blows?\s+up|blew\s+up|ends?\s+with|ended\s+with|triggers?|triggered|throws?|"
    r"threw|thrown)\b(?:\s+(?:a|an|the))?(?:\s+" + ERROR_NAME + r"|\s+(?:at|in|before|during|as)\b)",
)


def _outcome_more(part: str) -> bool:
    """Whether the clause states an error with a verb :data:`OUTCOME` does not hold (:data:`OUTCOME_MORE`), read as
    :func:`_outcome` reads its own."""
    words = part.split()
    if not OUTCOME_MORE.search(part) or _instruction(words):
        return False
    lowered = {w.lower().strip(",.;:()`") for w in words}
    return not (lowered & OUTCOME_MODALS or lowered & {"below", "above", "printed", "prints"})


#: A release named in other ways: ``v2.0``, "Version 2.0", "PL 1.6", "From 1.5 on", "As of 2.0", or a release opening
#: its clause ("2.0 dropped ...").
RELEASE_MORE = re.compile(
    r"(?<![\w.])v[12]\.\d+(?:\.\d+)?\b|\b(?:[Vv]ersion|PL|[Ff]rom|[Ww]ith|[Aa]s of)\s+v?[12]\.(?:\d{1,2}|x)\b"
    r"|\b(?:[Ss]ince|[Ii]n|[Bb]efore|[Aa]fter|[Ff]rom)\s+(?:torch|torchmetrics|PyTorch|Lightning)?\s*v?\d+\.\d+\b"
    r"|^\s*[12]\.(?:\d{1,2}|x)(?:\.\d+)?\s+[a-z]+(?:ed|s)\b"
)
#: What a release has or lacks ("There's no ``outputs`` argument on 2.x", "Nothing of it is left in 2.0").
ABSENCE = re.compile(r"\bthere(?:['’]s| is| are| was| were)\s+no\b|\b(?:is|are|was|were)\s+left\b|\bnothing\b", re.I)


def _release_more(part: str) -> bool:
    """Whether the clause names a release (:data:`RELEASE`, :data:`RELEASE_MORE`) with a finite verb or what it has
    or lacks (:data:`ABSENCE`), and is not the reader's (an instruction, the reader's own upgrade or the page's own
    runs: "Upgrade to 2.0 ...", "If you are still on 1.9", "were run on 2.1")."""
    if not (RELEASE_MORE.search(part) or RELEASE.search(part)):
        return False
    words = part.split()
    lowered = {w.lower().strip(",.;:()`'’") for w in words}
    if _instruction(words) or lowered & (OWN_SUBJECT | {"upgrade", "upgrading", "install", "pin", "run"}):
        return False
    if words and words[0].lower() in TOPIC_OPENERS | EMBEDDED:
        return False  # a topic ("What Lightning 2.x does with it is shown on ...")

    def verb(i: int) -> bool:  # a finite verb outside a relative clause ("Code that still asks ...")
        word = words[i].strip(".,;:").lower()
        if (
            words[i - 1].lower() in ("that", "which", "who", "to")
            or i > 1
            and words[i - 2].lower() in ("that", "which")
        ):
            return False
        if word in PLURAL_NOUNS or word in NOUNS_TOO or word.endswith(("'s", "’s")):
            return False
        return word in AUXILIARIES or word in IRREGULAR_PAST or bool(VERBS.fullmatch(word)) or word.endswith("ed")

    return ABSENCE.search(part) is not None or any(verb(i) for i in range(1, len(words)))


#: A size, a share of memory or a speed, said of what something costs or does ("Each cached loss costs 4 bytes",
#: "halves activation memory", "uses about three times the memory").
QUANTITY = re.compile(
    r"\b(?:costs?|occup(?:ies|y)|uses|needs|takes|grows|halves|doubles|saves|adds)\b\s+(?:\S+\s+){0,4}?"
    r"(?:\d[\d,.]*\s*(?:bytes?|B|KB|MB|GB|KiB|MiB|GiB)\b|memory\b|bytes\b|times\b|half\b|twice\b)"
    r"|\b(?:grows|grew)\s+by\b|\bhalves\b|\bdoubles\b",
    re.I,
)


def _quantity(part: str) -> bool:
    """Whether the clause states a size, a share of memory or a speed as a fact (:data:`QUANTITY`), not the page's own
    measurement ("here", "this page", "below", "measured") nor an instruction."""
    words = part.split()
    if not QUANTITY.search(part) or _instruction(words):
        return False
    lowered = {w.lower().strip(",.;:()`") for w in words}
    return not lowered & (OWN_SUBJECT | {"here", "below", "above", "measured", "measures", "printed"})


#: A caption or a table cell with no subject: a behaviour verb's third-person or past form opening it ("Called once
#: per epoch, after validation", "Receives the batch outputs", "Runs before the optimizer step").
CAPTION = re.compile(
    r"^\s*Raises\s+" + ERROR_NAME + r"|^\s*Defaults?\s+to\b"
    r"|^\s*(?:Called|Calls|Receives|Received|Runs|Ran|Fires|Fired|Gets|Passed|Passes|Ignored|Skipped|Removed|"
    r"Deprecated|Raises|Raised|Happens|Triggered|Invoked)\s+(?:once|twice|before|after|at|when|with|by|in|on|the|a|"
    r"an|every|each|no|only|during|between|for)\b"
)
#: A default said in other words ("Out of the box, ``max_epochs`` is 1000", "the default for", "enabled unless you
#: turn it off").
DEFAULT_MORE = re.compile(
    r"\bout of the box\b|\bdefault (?:for|of)\b|\b(?:is|are)\s+(?:enabled|disabled|on|off)\s+unless\b"
    r"|\bunless you (?:turn|change|pass|set|disable|enable)\b|\b\w+\s+defaults?\s+to\b|^\s*Default:\s*\S"
    r"|\b[a-z]+_[a-z_]+\b.*\bby default\b|\bby default\b.*\b[a-z]+_[a-z_]+\b",
    re.I,
)


def _setting_passive(part: str) -> bool:
    """Whether a clause with a setting of Lightning's (:data:`KEYWORDS`: ``sync_dist=True``) says in the passive what is
    done to a value ("With ``sync_dist=True`` the logged value is reduced across all processes")."""
    words = part.split()
    if not KEYWORDS.search(part) or _instruction(words):
        return False
    if words and words[0].lower() in CONDITION_OPENERS | {"unless"} and any(w.endswith(",") for w in words):
        words = words[next(i for i, w in enumerate(words) if w.endswith(",")) + 1 :]  # the main clause after "If ...,"
    if {w.lower() for w in words} & (READERS | OWN_SUBJECT):
        return False
    return re.search(r"\b(?:is|are|was|were|gets?|got)\s+(?:\w+ly\s+)?\w+ed\b", part) is not None


#: A passive whose agent is Lightning, torch or DDP, whatever the verb ("the model is put back into train mode by the
#: trainer").
AGENT_PASSIVE = re.compile(
    r"\b(?:is|are|was|were|gets?|got|been)\s+\w+(?:\s+\w+){0,4}?\s+by\s+(?:the\s+)?(?:trainer|Trainer|Lightning|"
    r"torch|PyTorch|DDP|the strategy|autograd)\b"
)


ELEVENTH_ROUND = {
    "agent": lambda part: AGENT_PASSIVE.search(part) is not None and not _instruction(part.split()),
    "setting": _setting_passive,
    "entity subject": _entity_subject,
    "experienced": _experienced,
    "outcome": _outcome_more,
    "release": _release_more,
    "quantity": _quantity,
    "caption": lambda part: (
        CAPTION.search(part) is not None and not {w.lower().strip(".,;:") for w in part.split()} & OWN_SUBJECT
    ),
    "default": lambda part: (
        DEFAULT_MORE.search(part) is not None
        and not _instruction(part.split())
        and not re.search(r"\b(?:your|yours|this|page|recipe)\b(?:\s+\S+){0,2}\s+defaults?\b", part, re.I)
        and not re.search(r"\b(?:checker|lightning-migrate)\b|\s--[a-z]", part)  # the checker's own defaults
    ),
}


@dataclass(frozen=True)
class Finding:
    page: str  # the built page, relative to the HTML directory
    source: str  # the source file, relative to the project ("?" when not found)
    line: int
    sentence: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.sentence.replace(chr(0), '[claim]')}  ({self.page})"


def source_of(page: str, root: Path) -> Path | None:
    """The source file of a built page: a gallery script, a page of ``docs/``, a checker rule's module."""
    stem = page.removesuffix(".html")
    if stem.startswith("examples/"):
        candidate = root / "gallery" / (stem.removeprefix("examples/") + ".py")
        return candidate if candidate.is_file() else None
    if stem.startswith("checker/rules/"):
        code = stem.rsplit("/", 1)[-1].lower()
        found = sorted((root / "src" / "lightning_migrate" / "checker" / "rules").glob(f"{code}_*.py"))
        return found[0] if found else None
    for suffix in (".rst", ".md"):
        candidate = root / "docs" / (stem + suffix)
        if candidate.is_file():
            return candidate
    return None


ROLE_WITH_TITLE = re.compile(r":[\w:]+:`([^`<]*?)\s*<[^`>]*>`")
MARKUP = re.compile(r":[\w:]+:`|[`*]|\\")


def line_of(sentence: str, source: Path | None) -> int:
    """The line of ``source`` holding the sentence's first words, read as plain words (rST roles, backticks and
    line breaks aside); 0 when they are not found there."""
    if source is None:
        return 0
    text = source.read_text(encoding="utf-8")
    plain = MARKUP.sub("", ROLE_WITH_TITLE.sub(r"\1", text))
    offsets = [i for i, line in enumerate(plain.splitlines(keepends=True)) for _ in line]
    words = re.findall(r"[^\W_]+", sentence)  # "callback’s" (Sphinx's quote) is "callback's" in the source
    for count in (6, 4, 3):
        if len(words) < count:
            continue
        match = re.search(r"[\W_]+".join(re.escape(word) for word in words[:count]), plain)
        if match:
            return offsets[match.start()] + 1 if offsets else 0
    return 0


#: How a page's source sets a class by hand: reST's ``rst-class``, ``:class:`` and ``container`` (MyST's
#: ``{rst-class}``, ``:class:``, ``{container}`` and ``{div}``), and raw HTML.
CLASS_MARKUP = re.compile(
    r"(?:rst-class::?\}?|:class:|container::?\}?|div::?\}?)\s*([\w -]+)|class=[\"']([^\"']+)[\"']"
)
#: The sources a contributor writes: pages, gallery scripts, the checker's rule texts and the templates.
SOURCES = (
    "docs/**/*.rst",
    "docs/**/*.md",
    "docs/_templates/**/*.html",
    "gallery/**/*.py",
    "gallery/**/*.txt",
    "src/lightning_migrate/checker/rules/*.py",
    "data/scenarios.toml",
)


def opt_outs(root: Path = ROOT) -> list[Finding]:
    """Every place a source sets, by hand, a class that the guard leaves unread (:data:`NOT_PROSE`): such markup
    would switch the guard off, so it is a finding itself."""
    found = []
    for pattern in SOURCES:
        for path in sorted(root.glob(pattern)):
            if "_build" in path.parts or "_ext" in path.parts:
                continue
            if path.relative_to(root).parts[:2] == ("docs", "examples"):
                continue  # sphinx-gallery's generated pages (its output blocks' class); their gallery/ scripts are read
            if path.relative_to(root).as_posix() == "docs/contributing.md":
                continue  # the contributors' page names the classes in describing the guard (ALLOWED's first entry)
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for match in CLASS_MARKUP.finditer(line):
                    classes = set((match[1] or match[2] or "").split())
                    hidden = sorted(classes & NOT_PROSE.keys())
                    if hidden:
                        relative = path.relative_to(root).as_posix()
                        sentence = f"sets the class {hidden[0]!r} by hand: text under it would go unread"
                        found.append(Finding("(source)", relative, number, sentence))
    return found


#: Typed text of the data files that the renderers put inside what the guard leaves unread (a recipe's box and its
#: dropdowns, the scenario matrix: :data:`NOT_PROSE`), by file and key: read at its source, outside its claims, as
#: the page's prose is.
DATA_TEXTS = {"data/scenarios.toml": ("reason",)}


def data_sentences(root: Path = ROOT) -> list[Finding]:
    """Every flagged sentence of the typed texts of :data:`DATA_TEXTS` (a trap's or an outside value's ``reason``),
    each reported once, at the first line that holds it."""
    found: list[Finding] = []
    seen: set[str] = set()
    for relative, keys in DATA_TEXTS.items():
        path = root / relative
        if not path.is_file():
            continue
        pattern = re.compile(r"\s*(?:" + "|".join(keys) + r')\s*=\s*"((?:[^"\\]|\\.)*)"')
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = pattern.match(line)
            if not match:
                continue
            text = unmarked(match[1].replace('\\"', '"'))
            context = ""  # the reason's earlier sentences: what its pronouns may stand for
            for sentence in sentences(text, heading=False):
                flags = flagged(sentence, context)
                context += " " + sentence
                if sentence not in seen and flags:
                    seen.add(sentence)
                    found.append(Finding("(data)", relative, number, sentence))
    return found


#: Typed text of Python modules that a reader reads where the guard does not read the pages: the registry's
#: ``replacement`` sentences, rendered in the reference table (``old-hooks-table``, left unread as a record:
#: :data:`NOT_PROSE`) and printed in the checker's console output; by file and keyword argument of the calls that
#: hold them. Read at their source, as :data:`DATA_TEXTS` are.
SOURCE_TEXTS = {"src/lightning_migrate/registry.py": ("replacement",)}


def source_sentences(root: Path = ROOT) -> list[Finding]:
    """Every flagged sentence of the typed texts of :data:`SOURCE_TEXTS` (a string, or strings written side by side,
    given as one of the named keyword arguments), each reported once, at the line where its string starts."""
    found: list[Finding] = []
    seen: set[str] = set()
    for relative, keywords in SOURCE_TEXTS.items():
        path = root / relative
        if not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), relative)):
            if not (isinstance(node, ast.keyword) and node.arg in keywords):
                continue
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                continue
            context = ""  # the text's earlier sentences: what its pronouns may stand for
            for sentence in sentences(unmarked(node.value.value), heading=False):
                flags = flagged(sentence, context)
                context += " " + sentence
                if sentence not in seen and flags:
                    seen.add(sentence)
                    found.append(Finding("(source)", relative, node.value.lineno, sentence))
    return found


#: The checker's console texts, which a reader reads in the checker's output and in the marker comments ``--fix``
#: writes into their code, and which no page shows: by file, the names of the functions whose returned strings are such
#: a text (``_why_not_cached``: why no caching rewrite) -- besides, in every file, the strings assigned to ``message``,
#: ``why`` or ``made`` and the reason given to ``manual_fix`` or ``Finding`` (a module constant given by its name
#: too). Read at their source, as :data:`SOURCE_TEXTS` are, an f-string's fields as :func:`field_text` renders them.
CONSOLE_TEXTS = {
    **{path.relative_to(ROOT).as_posix(): () for path in sorted(ROOT.glob("src/lightning_migrate/checker/**/*.py"))},
    "src/lightning_migrate/checker/rules/lm002_epoch_end_parameters.py": ("_why_not_cached",),
    # why a caching or stage-hook rewrite is not made, and why a fix is held back: the marker's reason
    "src/lightning_migrate/checker/rules/_caching.py": ("caching_fix", "_step_end_changes_outputs", "_step_refusal"),
    "src/lightning_migrate/checker/rules/lm006_never_called.py": ("stage_hooks_fix",),
    "src/lightning_migrate/checker/core.py": ("_async_hook", "_callers", "_mixin", "_unresolved_base"),
}
#: The variables a console text is built in.
CONSOLE_NAMES = {"message", "why", "made", "what"}
#: The registry's changelog fact, "removed in Lightning {pattern.removed_in}": the release is the registry's record of
#: Lightning's changelog (claims with ``changelog`` evidence check it), read as a record, as the reference table
#: renders it; a release field in any other words ("Lightning before {pattern.removed_in} passed ...") is read as one.
CHANGELOG_FRAME = re.compile(r"\bremoved in Lightning $")
#: The calls whose second argument is a console text.
CONSOLE_CALLS = {"manual_fix", "Finding"}


def field_text(expression: str) -> str:
    """What an f-string's field prints, as the guard reads it: a release for a release's field (``removed_in``), a
    hook's name for a hook's, the old argument's name (``outputs``) for ``old_name``, the class for ``MODULE`` and
    ``CALLBACK``, and ``value`` for any other: a reader reads the sentence with the values the checker fills in."""
    known = (
        ("removed_in", "2.0"), ("deprecated_in", "1.5"), ("old_signature", "on_train_epoch_end(self, outputs)"),
        ("old_name", "outputs"), ("extra", "outputs"), ("read", "outputs"),
        ("hook", "on_train_epoch_end"), ("HOOK", "on_train_epoch_end"),
        ("MODULE", "LightningModule"), ("CALLBACK", "Callback"),
    )  # fmt: skip
    return next((value for name, value in known if name in expression), "value")


def _string(node: ast.expr, constants: dict[str, ast.expr]) -> str | None:
    """The text of a string expression: a literal, an f-string (its fields by :func:`field_text`), a concatenation, or
    a module constant named; ``None`` for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        text = ""
        for value in node.values:
            if isinstance(value, ast.Constant):
                text += str(value.value)
            elif CHANGELOG_FRAME.search(text) and "removed_in" in ast.unparse(value):
                text += " \x00 "  # the registry's changelog fact, rendered from its record (a claim's kind)
            else:
                text += field_text(ast.unparse(value))
        return text
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left, constants), _string(node.right, constants)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Name) and node.id in constants:
        return _string(constants[node.id], constants)
    return None


def console_texts(tree: ast.Module, functions: tuple[str, ...]) -> list[tuple[int, str]]:
    """The console texts of a module (:data:`CONSOLE_TEXTS`), each with the line its string starts on."""
    constants = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id.isupper()
    }
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in functions:
            found += [inner.value for inner in ast.walk(node) if isinstance(inner, ast.Return) and inner.value]
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(target, ast.Name) and target.id in CONSOLE_NAMES for target in targets):
                found.append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONSOLE_CALLS:
            found += node.args[1:2]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Fix":
            found += [keyword.value for keyword in node.keywords if keyword.arg == "description"]
    texts = []
    for expression in found:
        options = (expression.body, expression.orelse) if isinstance(expression, ast.IfExp) else (expression,)
        for option in options:
            text = _string(option, constants)
            if text and " " in text.strip():
                named = isinstance(option, ast.Name) and option.id in constants  # at the constant's own line
                texts.append((constants[option.id].lineno if named else option.lineno, text))
    return sorted(texts)


def console_sentences(root: Path = ROOT) -> list[Finding]:
    """Every flagged sentence of the checker's console texts (:data:`CONSOLE_TEXTS`), each reported once, at the line
    where its string starts."""
    found: list[Finding] = []
    seen: set[str] = set()
    for relative, functions in CONSOLE_TEXTS.items():
        path = root / relative
        if not path.is_file():
            continue
        for line, text in console_texts(ast.parse(path.read_text(encoding="utf-8"), relative), functions):
            context = ""
            for sentence in sentences(unmarked(text), heading=False):
                flags = flagged(sentence, context)
                context += " " + sentence
                if sentence not in seen and flags:
                    seen.add(sentence)
                    found.append(Finding("(console)", relative, line, sentence))
    return found


def fix_comment_sentences(pairs: dict[str, tuple[str, str]]) -> tuple[int, list[Finding]]:
    """The comments ``--fix`` writes into a user's code, read as prose: ``pairs`` maps a file's name to its text
    before and after the fix; each run of comment lines the fix added is read. Returns how many comments were read
    and every flagged sentence among them, at its line of the fixed text."""
    import difflib

    read, found = 0, []
    for name, (before, after) in pairs.items():
        lines = after.splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(None, before.splitlines(keepends=True), lines, autojunk=False)
        for tag, _, _, start, end in matcher.get_opcodes():
            if tag not in ("insert", "replace"):
                continue
            for comment in comments("".join(lines[start:end])):
                read += 1
                context = ""
                for sentence in sentences(comment, heading=False):
                    if flagged(sentence, context):
                        found.append(Finding("(fixed code)", name, start + 1, sentence))
                    context += " " + sentence
    return read, found


def typed_sentences(html_dir: Path, root: Path = ROOT, used: set[tuple[str, str]] | None = None) -> list[Finding]:
    """Every flagged sentence of every page of ``html_dir`` that :data:`ALLOWED` does not list -- its prose, table
    rows, admonitions, the text templates put around it, the docstrings of the code it shows -- and every markup of
    the sources that would hide text from the guard (:func:`opt_outs`). A sentence a template repeats on every page
    is reported once."""
    findings, seen = [], set()
    readers = {}
    for path in sorted(html_dir.rglob("*.html")):
        page = path.relative_to(html_dir).as_posix()
        if page.startswith(("_", "genindex", "search", "404", "py-modindex")):
            continue
        reader = readers[page] = ProseReader()
        reader.feed(path.read_text(encoding="utf-8"))
        reader.close()
    titles = {page: title for page, reader in readers.items() if (title := reader.title())}
    # every heading of the site: a table of contents or a link that repeats one is that heading
    headings = {_plain(reader.blocks[index]) for reader in readers.values() for index in reader.headings}
    for page, reader in readers.items():
        source = source_of(page, root)
        # another page's title, where a link or a card names it, is a name: it is read on its own page
        others = sorted({title for other, title in titles.items() if other != page}, key=len, reverse=True)
        blocks = [(block, i in reader.headings or _plain(block) in headings) for i, block in enumerate(reader.blocks)]
        section = ""  # the heading a block stands under: what its pronouns may stand for
        for index, (block, heading) in enumerate(blocks + [(text, None) for text in reader.docstrings]):
            context = "" if heading is None or index in reader.headings else section
            if index in reader.headings:
                section = _plain(block)  # without its link (a pilcrow the guard leaves unread)
            elif heading is not None:
                section += " " + block
            for sentence in sentences(block, heading):
                named = sentence
                for title in others:
                    named = named.replace(title, " \x00 ")
                flags = flagged(named, context)
                context += " " + named
                if not flags:
                    continue
                allowed = [(p, fragment) for (p, fragment) in ALLOWED if p in (page, "*") and fragment in sentence]
                if allowed:
                    if used is not None:
                        used.update(allowed)
                    continue
                relative = source.relative_to(root).as_posix() if source else page
                finding = Finding(page, relative, line_of(sentence, source), sentence)
                if (finding.line == 0 and sentence in seen) or finding in findings:
                    continue
                seen.add(sentence)
                findings.append(finding)
    return findings + data_sentences(root) + source_sentences(root) + console_sentences(root) + opt_outs(root)


# -- Tests -----------------------------------------------------------------------------------------------------------
#: Behaviour sentences as contributors write them: each must be flagged.
TYPED = [
    "Lightning calls ``on_train_epoch_end`` once per epoch, after the callbacks.",
    "Lightning silently drops the outputs of every step.",  # a verb outside the earlier list
    "The loop calls ``on_train_epoch_end`` after validation.",  # the verb before the hook
    "After validation, Lightning invokes the hook with no arguments.",
    "``on_train_batch_end`` receives the loss divided by the number of accumulated batches.",
    "``training_epoch_end`` is refused with an error before the first batch.",
    "The Trainer resets every metric at the end of each validation run.",
    "``ModelCheckpoint`` saves a checkpoint after the module's hook.",
    "Under DDP, Lightning raises when a step returns None.",
    "With one process the ``self.all_gather`` call adds no dimension, and Lightning keeps it that way.",
    "Lightning 2.x no longer passes ``outputs`` to ``on_train_epoch_end``.",
    "``on_validation_epoch_end`` fires after the sanity check too.",
    "The sanity check runs 2 batches by default before num_sanity_val_steps is read.",
    "``trainer.predict`` returns None with return_predictions off, Lightning warns nothing.",
    "The Trainer frees the list at the end of the same epoch.",
    "``EarlyStopping`` stops training when the monitored value stalls.",
    "Lightning detaches the loss and hands it on.",
    "A step may return None to skip a batch, and Lightning skips the optimizer step.",
    "``on_test_epoch_end`` gets called after the last test batch.",
    "Lightning will throw a TypeError at the end of the first epoch.",
    "The Trainer moves the batch to the device before ``training_step`` runs.",
    "Lightning accumulates the gradients over three batches.",
    "``on_predict_epoch_end`` was given the predictions on 1.9.5.",
    "Lightning averages the value across ranks with sync_dist.",
    # written for this guard's second round: no name of Lightning as the subject, a passive, a release, a change
    "Since 2.0, the hook no longer receives outputs.",
    "In Lightning 2.x the outputs argument is gone from on_train_epoch_end.",
    "The trainer doesn't pass outputs any more.",
    "Outputs are no longer passed to ``on_train_epoch_end``.",
    "It's the Trainer that detaches the loss before the callback sees it.",
    "``on_train_batch_end`` is handed a detached copy of the loss.",
    "A ``ModelCheckpoint`` monitors after the module's epoch-end hook.",
    "Validation happens before ``on_train_epoch_end``.",
    "``validation_epoch_end`` is rejected at setup.",
    "The sanity check runs before training starts.",
    "During the sanity check, ``on_validation_epoch_end`` is invoked too.",
    "Lightning's loop will not call the renamed hook.",
    "With DDP each process sees only its own shard.",
    "``self.log`` with ``sync_dist=True`` averages over ranks.",
    "``trainer.predict`` gives back None when return_predictions is False.",
    "The metric is reset by Lightning at the end of each epoch.",
    "The old list was freed after ``training_epoch_end``.",
    "``on_train_epoch_end`` is now called with no arguments.",
    "Lightning no longer caches the step outputs.",
    "No outputs are kept by the Trainer between steps.",
    "The hook is not invoked anymore.",
    "Returning None from ``training_step`` skips the batch.",
    "Each rank's ``training_epoch_end`` saw only its own batches on 1.9.5.",
    "``EarlyStopping`` checks the monitored value after the module's hook.",
    "Gradient accumulation divides the loss that ``on_train_batch_end`` sees.",
    "``fit`` refuses a module with ``training_epoch_end``.",
    "Lightning 1.x kept every batch's output in memory.",
    "In 1.4.9 the callback received an empty list.",
    "BoringModel's loss keeps a 512-byte buffer.",
    "``.detach()`` shares storage with the original tensor.",
    "A slice keeps the whole storage alive.",
    "``torch.inference_mode`` is on during ``trainer.validate``.",
    "Autograd is disabled in validation.",
    "The validation loop is run twice when val_check_interval is 0.5.",
    "The prediction writer is given the batch indices.",
    "``MeanMetric`` weights each batch equally.",
    "``all_gather`` adds a leading dimension per rank.",
    # third round: a sentence opened by When, Where or Which (a condition is a statement; only a question ends with
    # "?"), the libraries under Lightning and its strategies as subjects, the processes of a distributed run, an
    # order of events, a change named with its release
    "When a step returns None, Lightning skips the optimizer step.",
    "Where a step returns None, the Trainer skips the optimizer step and frees nothing.",
    "When one worker fails, the other is stopped.",
    "When a worker process dies, torch and gloo write their messages to standard error.",
    "Which is why Lightning frees the list after each epoch.",
    "How often it happens: Lightning calls the hook once per epoch.",
    "Whenever validation runs, the callback's hook runs first.",
    "What Lightning 1.x kept: every batch's outputs, until the hook had run.",
    "Why does this matter? Lightning keeps the list until the epoch ends.",
    "DDP splits the data between the ranks.",
    "torchmetrics resets the metric after each run.",
    "PyTorch frees the graph once backward has run.",
    "A callback's epoch-end hook comes before the module's.",
    "The epoch-end hook of a callback goes first, then the module's.",
    "The outputs argument disappeared in 1.5.",
    "The argument was renamed in 2.0.",
    "Validation comes between the last training batch and the end of the epoch.",
    "torch keeps the whole storage of a slice alive.",
    "The DDP strategy pads the last batch with repeated samples.",
    "With ddp_fork, each worker sees its own copy of the module.",
    "Rank 0 writes the checkpoint; the other ranks wait.",
    "Each rank sees a different shard of the data.",
    "The distributed sampler pads the dataset so every rank gets the same number of batches.",
    "Autograd keeps the graph alive as long as the loss is referenced.",
    "The loop stops after max_epochs.",
    "Python raises a TypeError for the missing argument.",
    "The optimizer step is skipped when the loss is None.",
    "Gloo times out after thirty minutes.",
    "torch.compile recompiles the step when the shapes change.",
    "Metrics from torchmetrics sync across processes at compute time.",
    "DeepSpeed shards the optimizer state.",
    "In 2.0 the hook was removed.",
    "The hook vanished in 2.0.",
    "Before 1.5, the argument was still there.",
    "If the step returns None, nothing is logged by Lightning.",
    "Once the epoch ends, the callback's cache is emptied by the trainer.",
    "When validation is disabled, the sanity check is skipped as well.",
    "Where the loss is NaN, Lightning stops the fit.",
    "torch frees the saved tensors after backward.",
    "torchmetrics syncs the state across processes before compute.",
    "DDP averages the gradients across the ranks.",
    "The launcher starts one process per device.",
    "Each worker gets its own copy of the dataset.",
    "Rank 0 prints the progress bar; the other ranks stay quiet.",
    "The batch-end hook receives the detached loss.",
    "A module's epoch-end hook runs after the callbacks'.",
    "The sanity check comes before the first training epoch.",
    "The outputs argument was removed in 1.5.",
    "In 2.0 the step-end hooks vanished.",
    "Python raises TypeError when the hook is called with too few arguments.",
    "When the step returns a dict, the Trainer reads its loss key.",
    "The fit loop stops when max_steps is reached.",
    "Which means the Trainer caches nothing between steps.",
    "Once training ends, the Trainer calls teardown on every callback.",
    "The distributed sampler repeats samples to even out the shards.",
    "PyTorch keeps a reference to the graph through grad_fn.",
    # the breaker's probe: a default named by what it does, a verb of survival
    "Nothing of the step's output survives until the end of the epoch.",
    "The default sanity check is two batches.",
    # fourth round, from a reading of the built site: a verb after a name that no list holds, a verb that stands
    # for another, Lightning's callbacks by their kind, paths into Lightning's and torch's API, Lightning's settings
    # and the arguments it hands a hook as subjects, what a hook is left, a verb before a colon
    "A step that returns nothing leaves the callback no loss, and the monitoring callbacks refuse an epoch without it.",
    "A step that returns nothing leaves a callback no outputs to read.",
    "Every step returning nothing under manual optimization leaves outputs empty.",
    "The project calls the misspelt hook itself; Lightning still never does.",
    "The rewrite keeps every output until the epoch ends, as the old outputs list did.",
    "The unweighted metric is not the dataset mean that self.log gives: the two disagree.",
    "self.trainer.strategy.reduce adds both up across the ranks.",
    "trainer.sanity_checking tells the two apart.",
    "torch.stack needs tensors of one shape.",
    "loss.detach() is a view of the loss and holds its storage.",
    "The module adds its metrics when validation starts (self.trainer.val_dataloaders is one loader or a list).",
    "Every rank computes the same mean; sync_dist=True, as Lightning recommends, has identical values to average.",
    "Some frameworks make each predict loader again, after Lightning prepared it.",
    "Every rank divides the same totals, and sync_dist=True averages identical values.",
    "A common variant logs on rank 0 only. sync_dist=True then starts a collective call that rank 1 never joins.",
    "By the time a monitoring callback runs, the module has cleared its cache.",
    "To monitor the epoch's value, log it: a monitoring callback is given the name of a logged value.",
    "Under automatic optimization outputs is built from what training_step returned.",
    "The hook takes self only, and no list of the epoch's outputs is kept for it.",
    "The backward pass frees the saved tensors of the branch that led to the loss.",
    "ModelCheckpoint and EarlyStopping monitor a value the module logs in its own hook.",
]
#: Ordinary sentences of a page that say nothing of Lightning's behaviour: none may be flagged.
ORDINARY = [
    "Install the requirements with pip before you start.",
    "This page shows the old code beside the new one.",
    "Copy the block below into your own module.",
    "See the reference table for the replacement of each hook.",
    "The table below lists each removed hook and what replaces it.",
    "Define ``on_train_epoch_end`` without the ``outputs`` argument.",
    "Read the checker's page for the command line and its options.",
    "In your ``on_train_batch_end``, append the loss to a list.",
    "What ``on_train_batch_end`` receives",
    "Why did the outputs argument go?",
    "The guide has three parts: the fixes, the reference and the explanations.",
    "A recipe page starts with the fix and ends with its proof.",
    "Lightning 2.0 and later",
    "For the Trainer's arguments, see its documentation.",
    "Create a trainer and call fit.",
    "Use the Trainer to run the fit.",
    "This page shows how to migrate.",
    "Copy the recipe below.",
    "Run the checker on your repository.",
    "The next section explains why.",
    "See the compatibility table.",
    "Your callback reads the module's cache.",
    "The code below trains a small model.",
    "Old code, new code.",
    "Replace training_epoch_end with on_train_epoch_end.",
    "Cache the loss your training_step returned, then clear the list.",
    "Append the loss to the module's list in training_step.",
    "The module below keeps its own list.",
    "Read the cache in the hook that takes no outputs.",
    # third round: questions, conditions addressed to the reader, libraries as objects of an instruction, a
    # possessive, an order of the page's own parts
    "Why does Lightning skip the optimizer step?",
    "What happens when a step returns None?",
    "When should you use the callback-side recipe?",
    "Which replacement should I use?",
    "How do I migrate a callback?",
    "Where do I put the cache?",
    "When you migrate, start with the checker.",
    "Where your module keeps a list, clear it in on_train_epoch_end.",
    "Which recipe you pick depends on who reads the values.",
    "How you cache is up to you: a list, a metric or a tensor.",
    "Install torch and Lightning with pip.",
    "Pin torch to the release in requirements.txt.",
    "Use DDP when you train on several GPUs.",
    "Split your data before you build the loaders.",
    "Read the torchmetrics documentation for the metric's options.",
    "Run the page with two processes to see each rank's cache.",
    "The next section compares the two recipes.",
    "Copy the callback into your project.",
    "Each rank's cache is printed below.",
    "The example below trains for one epoch.",
    "When in doubt, open the evidence.",
    "This page is about the callback hooks.",
    "Your module goes first, then the callback.",
    "The fix comes before the explanation.",
    "The table comes first, then the examples.",
    "Delete the outputs argument from your hook.",
    "When you add a second loader, give the step a dataloader_idx argument.",
    "Where the recipe does not apply, the table says why.",
    "What to copy: the callback below.",
    "How to read this page",
    "Which of the two recipes fits your code?",
    "Import torch and the demo module.",
    "Install torchmetrics if you use its metrics.",
    "Use the DDP strategy with two devices to run this page.",
    "Each rank's result is shown below.",
    "Start with the checker, then read the fix page.",
    "The callback below collects the losses.",
    "Your epoch-end hook reads the cache.",
    "The figure compares the two approaches.",
    "This section comes after the fix.",
    "Read on for why the old hooks went.",
    "Compare the printed values with the reference.",
    "The recipe works in one process and under DDP.",
    "Keep the cache on the module.",
    "Clear the list in your epoch-end hook.",
    "See the next page for the distributed case.",
    # fourth round: the look-alikes of the fourth round's phrasings on the site's own pages
    "Empty outputs shows what each batch-end hook receives.",
    "The same class holds in many more Trainer configurations.",
    "What goes wrong once you cache step outputs yourself – hook order, uneven batches, autograd graphs, sanity "
    "checks, memory – each shown by running it, with the fix.",
    "A callback that reads outputs skips what has no loss.",
    "It logs no value for a ModelCheckpoint or an EarlyStopping to monitor.",
    "Read trainer.sanity_checking to tell the two apart.",
    "Join the per-sample tensors with torch.cat along the batch dimension.",
    "To monitor the epoch's value, log it and pass its name to the callback's monitor=.",
    "The page reads them from trainer.callback_metrics in the process that called trainer.fit.",
    "Every process makes both calls, even with nothing cached.",
    "A fresh BoringModel in eval mode under torch.no_grad computes each batch's loss.",
    "Fit the model; return the exception Lightning raised (None if none) and the trainer.",
    "What the old hooks received: see the table below.",
    "The recipe adds both up across the ranks with self.trainer.strategy.reduce.",
    "A monitoring callback that reads the module's cache",
    "The skipped batch gave the callback a loss of its own.",
]
#: Headings that ask or name a topic (read as headings: a page's ``<h2>``, a dropdown's title): none may be flagged.
HEADINGS = [
    "What on_train_batch_end receives",
    "When Lightning notices a removed epoch-end hook",
    "Why outputs went away",
    "How retained memory scales",
    "Who runs when",
    "Where each recipe works",
    "Which replacement: the callback",
    "What Lightning 2.6.6 does with each old shape:",
    "What each hook receives",
    "When the old hooks fail",
    "Why the list went away",
]


#: Fifth round, from an audit of the built site: sentences each new rule must flag, by the rule (``reasons``), as
#: ``(context, sentence)``: the context is what comes before the sentence under its heading (the heading, the
#: block's earlier sentences; ``\x00`` a claim), which is what a pronoun may stand for.
TYPED_IN_CONTEXT = {
    "pronoun": [
        ("What trainer.validate and trainer.test return", "The list they return has one dictionary per dataloader."),
        ("Since then \x00 , and \x00 :", "code that still defines them trains, and they never run."),
        ("The old hooks on_epoch_start and on_epoch_end", "They are never called, and nothing warns."),
        ("Where trainer.fit starts", "It moves the module to the device before the first batch."),
        (
            "The hooks training_step and on_train_batch_end",
            "Their outputs are detached before the callback reads them.",
        ),
        ("ModelCheckpoint", "It monitors the value after the module's hook has run."),
        ("", "\x00 , so it sees the full list."),
        ("What on_train_epoch_end receives", "It gets no outputs, and it fires after validation."),
    ],
    "fragment": [
        ("", "The same setting with ``validation_epoch_end`` defined: refused all the same."),
        ("", "A module that still defines ``on_epoch_end``: never called, and no warning either."),
        ("", "``training_epoch_end`` on the installed release -- rejected before the first batch."),
        ("", "The callback's ``on_train_epoch_end``; skipped during the sanity check."),
        ("The sanity check", "A validation_step that logs: invoked twice before training starts."),
    ],
    "resumption": [
        ("", "A checkpoint saved when an epoch ends resumes at the start of the next one."),
        ("", "The resumed epoch ran 4 steps, numbered 4 to 7."),
        ("", "A mid-epoch checkpoint restores the loop's progress."),
        ("", "The resumed run skips the batches the first run completed."),
        ("", "The checkpoint is written when the epoch ends."),
        ("", "A restarted fit reloads the optimizer state from last.ckpt."),
    ],
    "release": [
        ("", "The three old shapes on the newest release above that still calls them."),
        ("", "Every later release refuses the hook."),
        ("", "The installed release raises a TypeError."),
        ("", "Older releases passed the outputs."),
        ("", "The hook was removed by the next release."),
        ("", "The last release which still ran them warned once."),
    ],
}
#: Sentences of the same shapes about the reader's code, the site or a release's name: none may be flagged.
ORDINARY_IN_CONTEXT = [
    ("Your callback", "It logs no value for a ModelCheckpoint or an EarlyStopping to monitor."),
    ("The recipe first: a prediction writer, subclass of BasePredictionWriter;", "it gathers every prediction."),
    ("The module keeps a list of losses in training_step.", "It clears the list in on_train_epoch_end."),
    ("", "A rewrite the checker cannot prove is unsafe: it is applied only when asked for."),
    ("", "The reset costs nothing, where the module without it stopped at the first validation run."),
    ("", "To run it yourself, download it below and install what it runs on."),
    ("The ModelCheckpoint subclass, a counter-example,", "notes how many cached losses it finds."),
    ("", "holds: every value matched; differs: the largest relative error; raises: the exception, as raised."),
    ("", "Define ``on_train_epoch_end``: append in ``training_step``, then clear the list."),
    ("", "The module below: a cache in training_step and a reset in on_train_epoch_end."),
    ("", "Resume the run from the checkpoint with ckpt_path."),
    ("", "A callback that validates the best checkpoint can stop a run that completed before."),
    ("", "Guarded also holds with training resumed from a mid-epoch checkpoint or restarted from last.ckpt."),
    ("", "Save a checkpoint after batch 3 of the second epoch."),
    ("", "Pin the release in requirements.txt."),
    ("", "The release notes list the change."),
    ("", "Names the installed release binds are read from the records."),
    ("", "Each release's records are kept beside the others."),
    ("", "The three old shapes, on the newest release above where the table shows them run."),
]


def test_the_fifth_rounds_rules_flag_their_shapes_in_context_and_pass_ordinary_ones():
    """Each rule of the fifth round -- a pronoun standing for a name of Lightning, a clause with no subject after a
    colon, a checkpoint or a resumed run as a subject, a release named by words as a subject -- flags every phrasing
    of its class, by that rule; the look-alikes about the reader's code are not flagged."""
    missed = [
        (rule, sentence)
        for rule, cases in TYPED_IN_CONTEXT.items()
        for context, sentence in cases
        if not any(rule in reasons(part, context) for part in sentences(sentence, heading=False))
    ]
    wrong = [
        (sentence, reasons(part, context))
        for context, sentence in ORDINARY_IN_CONTEXT
        for part in sentences(sentence, heading=False)
        if flagged(part, context)
    ]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


#: Sixth round, from an audit of the built site: sentences each rule must flag, by the rule (``reasons``).
TYPED_SIXTH = {
    "universal": [
        "Besides the memory, an undetached cache breaks any epoch-end code that leaves torch.",
        "Any tensor that still has a graph fails in NumPy.",
        "Every such collective call raises in the other worker.",
        "An undetached cache always fails in scikit-learn.",
        "A fractional limit refuses every loader with one batch.",
    ],
    "guarantee": [
        "The metric and the logger accumulate sums in their own order, and bitwise equality is not something they "
        "promise.",
        "torch guarantees that a view shares the storage of its base.",
        "There is no guarantee that the callbacks run in the order of the list.",
        "The sampler promises each rank the same number of samples.",
    ],
    "list order": [
        "They come first in the list, so they see a batch before the naive callback fails on it.",
        "The recorder is first in the callbacks list, so that it notes each batch before the others.",
        "Put first in the list, the checkpoint callback saves before EarlyStopping stops; hence the order.",
        "The writer is last in its list, so it reads what the others wrote.",
    ],
    "cause": [
        "Because the metrics are added after the module was made, self.log is told which attribute each one is.",
        "Because the loop reuses the list, on_train_epoch_end reads it cleared.",
        "Since the sampler pads the shards, torch.cat of the gathered rows counts a sample twice.",
        "As the module moves to the device first, the Trainer hands the batch over as it is.",
    ],
    "agent": [
        "It keeps the first len(dataset) values; a torchmetrics metric, synchronized by Lightning, needs none.",
        "Each rank logs its own mean, one of the samples repeated by the sampler.",
        "The last batch, padded by the DDP strategy, holds a repeated sample.",
        "The hook's outputs, emptied by the Trainer, hold nothing at epoch end.",
    ],
    "bare setting": [
        "fast_dev_run sets every batch limit to 1 itself.",
        "fast_dev_run validates once, after its one training batch.",
        "fast_dev_run turns checkpointing off: there is no last.ckpt to restart from.",
        "With a fraction, limit_val_batches counts the batches of each rank.",
    ],
    "tolerance reason": [
        "Equal to the model applied by hand (to float32 rounding: the workers computed them in batches of their own).",
        "Each row is matched to the closest vector (a sample computed in another batch differs in its last bits).",
        "They agree to float32 rounding (they add the same numbers in different orders).",
        "Compared with a relative tolerance of 1e-6: the metric and the logger accumulate sums in their own order.",
    ],
    "setting gloss": [
        "The Trainer is told to leave it alone (use_distributed_sampler=False).",
        "Lightning is asked to keep every prediction (return_predictions=True).",
        "The module builds its own loader, and the Trainer is made to use it as it is (use_distributed_sampler=False).",
        "Lightning is left to average the values (sync_dist=True).",
    ],
}
#: Sentences of the same shapes about the reader's code, the page or its checks: none may be flagged.
ORDINARY_SIXTH = [
    "Besides the memory: epoch-end code that hands the undetached cache to NumPy stops with the error below.",
    "A callback that forgets .clear() or overwrites instead of appending fails these checks.",
    "Forgetting .clear() breaks the recipe's checks in many Trainer configurations.",
    "Fix any hook that fails.",
    "If any check fails, the site is not published.",
    "Your code fails every check below.",
    "Neither raises anything: the only symptom is a wrong number.",
    "whatever Lightning raises: the checks below say which",
    "The page guarantees nothing it has not run.",
    "Your code must guarantee the same calls on every rank.",
    "This guide promises each value is computed by hand.",
    "The callbacks list puts them first; the lines printed below include the batch the naive callback fails on.",
    "The plain callback is last in the callbacks list.",
    "Put your recorder first in the list, so that it sees every batch.",
    "Because your module keeps its own list, clear it in on_train_epoch_end.",
    "Because the page runs two processes, its output comes from rank 0.",
    "The module passes metric_attribute to self.log: the name of the attribute that holds each metric it added.",
    "Both epoch values equal the reference (compared with a relative tolerance of 1e-6, not bit for bit).",
    "The page passes use_distributed_sampler=False to the Trainer.",
    "Two epochs of training, to compare the means (max_epochs=2).",
    "In both configurations the two columns agree to float32 rounding: the choice is about where the code belongs.",
    "holds: every value matched (relative tolerance 1e-5); differs: the largest relative error.",
    "Equal to the model applied by hand (compared to float32 rounding, not bit for bit).",
    "They agree to float32 rounding, as the check below asserts.",
    "The loss of each sample, computed by hand, is the reference.",
    "A value written by the page's callback, kept by your module until it is cleared.",
    "Each batch is shown by running it, with the fix.",
    "Not combined: fast_dev_run and batch limits are two ways of shortening a run, each run on its own.",
    "With fast_dev_run, the page trains one batch.",
    "Set fast_dev_run to train one batch.",
    "The matrix runs fast_dev_run=True with the default schedule only.",
]


def test_the_sixth_rounds_rules_flag_their_shapes_and_pass_ordinary_ones():
    """Each rule of the sixth round -- a failure said of every case, a library's promise, a consequence of a place in
    a list, a cause whose main clause names Lightning or torch, a setting glossed by what Lightning is made to do, a
    tolerance given a reason that says what the computation did, a participle whose agent is Lightning's, a
    ``Trainer`` argument named bare as a subject --
    flags every phrasing of its class, by that rule; the look-alikes about the reader's code and the page are not
    flagged, by any rule."""
    missed = [
        (rule, sentence)
        for rule, cases in TYPED_SIXTH.items()
        for sentence in cases
        if not any(rule in reasons(part) for part in sentences(sentence, heading=False))
    ]
    wrong = [
        (sentence, reasons(part))
        for sentence in ORDINARY_SIXTH
        for part in sentences(sentence, heading=False)
        if flagged(part)
    ]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


#: Seventh round, from an audit of the rule texts, the scenario reasons and the pages they touch: sentences each rule
#: must flag, by the rule (``reasons``).
TYPED_SEVENTH = {
    "execution context": [
        "The moved code now runs inside your step, so under mixed precision inside the step's autocast.",
        "The renamed hook runs outside the autocast, where the step's code does not.",
        "A callback's batch-end code executes under mixed precision as well.",
        "The loss at epoch end is computed outside the step's autocast, in float32.",
        "The step is called inside Lightning's closure, once per optimizer step.",
    ],
    "hook agent": [
        "A count that changes needs loaders made again every epoch by a hook (a LightningDataModule's).",
        "The cache is emptied by on_train_epoch_end before the callbacks read it.",
        "Each batch's outputs, collected by the batch-end hooks, reach the epoch end detached.",
        "The list is freed once by the epoch-end hook.",
    ],
    "absence": [
        "An iterable dataset has no sampler to split it between the ranks.",
        "An iterable dataset's loader has no batch sampler that names its samples.",
        "The loader has no batch sampler to replay.",
        "A DataLoader over a generator has no sampler that Lightning could replace.",
    ],
    "promise": [
        "They join batches with torch.cat, so a smaller last batch is no trouble.",
        "The sampler pads the shards, so an odd dataset size does not matter.",
        "A list of one-element tensors is therefore cheap next to the old contract but not free.",
        "The metric keeps two sums, hence a long epoch is harmless.",
        "The loop reloads the loaders each epoch, so a changing count poses no problem.",
    ],
    "internals": [
        "RSS includes what the byte count leaves out (the tensor and Python objects around each storage, the "
        "allocator's rounding).",
        "The second view adds what surrounds the data: each cached element sits in a whole tensor object.",
        "Python object overhead is not included -- the RSS view below shows it.",
        "The caching allocator keeps the freed blocks for the next batch.",
    ],
    "too for": [
        "The toy model's tensors are too small for more threads to help.",
        "The batches are too few for the sampler to pad them.",
        "An epoch of two batches is too short for the loop to validate twice.",
        "The shapes change too often for torch.compile to reuse a graph.",
    ],
    "listed order": [
        "When a callback listed after this one stops the run, the renamed code has already run for that batch.",
        "A callback listed before ModelCheckpoint has already seen the logged value.",
        "Listed after EarlyStopping, the recorder's hook has not run when the fit stops.",
        "The writer listed ahead of the checkpoint callback runs first at each epoch end.",
    ],
    "consequence": [
        "A rank whose share has 2 batches never reached its accumulation step, so max_steps never came.",
        "The loaders were made once, so the Trainer kept their count.",
        "The sanity check ran first, hence on_validation_epoch_end saw two batches.",
        "The values differed between the ranks, so torch.distributed.all_reduce waited.",
    ],
    "speed": [
        "Warm-up, not timed: the first fits of a process are slower.",
        "torch.cat is faster than stacking the rows one by one.",
        "A MeanMetric is cheaper than a list of every loss.",
        "Under DDP the epoch-end reduction runs much slower.",
    ],
}
#: Sentences of the same shapes about the reader's code, the page or the matrix: none may be flagged.
ORDINARY_SEVENTH = [
    "The moved code is now part of your step: it runs wherever your step's code runs.",
    "The reference: the same model in eval mode under torch.no_grad, batch by batch.",
    "The long epochs call the same methods directly, under torch.no_grad() and without optimizer steps.",
    "A fresh BoringModel in eval mode under torch.no_grad computes each batch's loss.",
    "The page runs its reference under torch.no_grad, the matrix under bf16-mixed as well.",
    "Run the step under torch.autocast to compare the two.",
    "Under bf16-mixed the loss this code computes at epoch end differs from the float32 reference.",
    "Not combined: the matrix changes the count only in its LightningDataModule's val_dataloader, by the epoch.",
    "A value logged by a hook of your module is read at epoch end.",
    "Each batch is shown by running it, with the fix.",
    "Your module fills its cache in training_step and reads it in on_train_epoch_end.",
    "A value written by your epoch-end hook goes into the CSV file.",
    "Not combined: the matrix runs its iterable dataset under DDP only with the own-split values.",
    "The matrix's iterable dataset has no __len__.",
    "Your dataset has no sampler to split it: split it yourself.",
    "The callback has no loss to log.",
    "The second loader's 6 rows come in batches of 4 and 2, and its tensor is equal to its reference all the same.",
    "Clear the list when each run starts, so a run that stopped half-way is no trouble.",
    "The page checks every value, so your code is safe to rerun.",
    "The byte count adds up the storages of the cached tensors, each counted once.",
    "The example's second view is the process RSS, the memory of the whole process.",
    "The page counts no Python object overhead: only storages.",
    "Your dataset is too small for two processes to share evenly.",
    "The table is too wide for this page to show whole: scroll it sideways.",
    "The plain callback is listed after the recipe's callback in the Trainer's callbacks.",
    "The values listed after each recipe are those of its runs.",
    "The matrix injects its crash from a callback listed after this one, at the end of a batch.",
    "Every rank then divides the same totals, so what it logs with sync_dist=True is the same on every rank.",
    "The module logs one value for every loader on every rank, so that every rank makes the same collective calls.",
    "Worker processes cannot print to this page, so the main process reads the file afterwards.",
    "The module empties its list when each run starts, so a run that stopped half-way leaves nothing behind.",
    "Found by exploration: this fit did not end, and the matrix does not run it.",
    "The page prints how much slower each approach ran than the baseline.",
    "Whether one approach is slower depends on the machine: see the ratios below.",
    "Your loop may be slower on a GPU.",
]


def test_the_seventh_rounds_rules_flag_their_shapes_and_pass_ordinary_ones():
    """Each rule of the seventh round -- code said to run under a mechanism of Lightning's or torch's, a hook as the
    agent of a participle, a data object of torch's said to lack a mechanism for a purpose, a case promised to be no
    trouble as a consequence, torch's internals around a storage, a reason given by degree ("too small for threads to
    help"), a place in the callbacks list said to decide what has run, a consequence whose subject is a name of
    Lightning's or torch's, a speed or cost stated as a fact -- flags every phrasing of its class, by that rule; the
    look-alikes about the reader's code, the page and the matrix are not flagged, by any rule."""
    missed = [
        (rule, sentence)
        for rule, cases in TYPED_SEVENTH.items()
        for sentence in cases
        if not any(rule in reasons(part) for part in sentences(sentence, heading=False))
    ]
    wrong = [
        (sentence, reasons(part))
        for sentence in ORDINARY_SEVENTH
        for part in sentences(sentence, heading=False)
        if flagged(part)
    ]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


#: Eighth round, from issue #27's list of phrasings the guard missed: sentences each rule must flag, by the rule.
TYPED_EIGHTH = {
    "label clause": [
        "Note: lightning calls the hook once per epoch.",
        "Note: lightning never passes outputs to the hook.",
        "Note: pytorch lightning frees the list at epoch end.",
        "Important: the loss is divided by the accumulation count.",
        "Tip: the callback receives the outputs of each step.",
        "Remember: the step's loss is detached before the hook sees it.",
        "In short: the callback sees the loss after it was divided.",
        "Careful: the list is cleared when each epoch starts.",
        "Beware: the metric resets itself after each epoch.",
        "Heads up: the old list kept every batch's graph.",
        "Warning: lightning skips the optimizer step when the loss is None.",
    ],
    "handed when": [
        "``dataloader_idx`` is passed only when the module defines several validation dataloaders.",
        "`dataloader_idx` is passed only when there are several loaders.",
        "It is passed only when there are several loaders.",
        "The index is given only if the module has several dataloaders.",
        "dataloader_idx is not passed with a single loader.",
        "The hook is called only when validation runs.",
        "The argument is only handed over for evaluation loaders.",
        "The batch hook is invoked only during training.",
        "The epoch-end hook is then called with no arguments.",
    ],
    "sampler order": [
        "Each rank's sampler takes every second sample.",
        "With shuffle=False the samples come in the dataset's order.",
        "shuffle=False keeps the order of the dataset.",
        "The samples arrive interleaved between the ranks.",
        "Samplers keep the order across epochs.",
        "The batches reach each rank in index order.",
        "The validation sampler hands out the indices in order.",
        "The rows end up in a different order on each rank.",
    ],
    "manual optimization": [
        "Under manual optimization the loss in outputs is not copied.",
        "Under manual optimization, the step's loss reaches the hook detached.",
        "Under manual optimization Lightning leaves the loss whole.",
        "With automatic_optimization = False, the scheduler is not stepped.",
        "Under manual optimization an output is the dict training_step returned.",
        "In manual optimization the closure runs inside the step.",
    ],
    "outputs subject": [
        "outputs holds the loss of each step.",
        "Under manual optimization, outputs holds the whole buffer.",
        'outputs["loss"] holds the whole buffer under manual optimization.',
        'In manual optimization, outputs["loss"] is the step\'s own tensor.',
        "outputs is never passed.",
        '``outputs["loss"]`` keeps the whole buffer.',
        "outputs reaches the callback detached.",
    ],
}
#: Look-alikes of the same shapes -- titles, topics, the reader's or the page's code, instructions, conditions, error
#: words, page titles -- several of them sentences of the site: none may be flagged.
ORDINARY_EIGHTH = [
    "Note: your list keeps every loss until you clear it.",
    "Note: the page runs two epochs of four batches.",
    "Tip: clear the list when each epoch starts.",
    "Note: define the hook without outputs.",
    "Hook order: when validation runs inside a training epoch",
    "Big per-step outputs: what a cache holds until it is cleared",
    "The reference: what the old outputs list held",
    "The proof: each hook's calls, batch by batch",
    "The proof: the model applied by hand",
    "The proof: the trained weights, in eval mode, under torch.no_grad",
    "Above: how often each old hook ran in that fit, and how many warnings named one.",
    "The baseline: keeps nothing (and computes nothing).",
    "Callback-side caching: on_train_batch_end appends one scalar per step.",
    "Line styles: equal curves (the scalar caches, and in the loss-only model the old contract) stay visible.",
    "RuntimeError: stack expects each tensor to be equal size at the end of validation.",
    "Give dataloader_idx a default, dataloader_idx=0, in the validation batch hooks.",
    "Pass dataloader_idx only when you have several loaders.",
    "Your hook is called only when you call it.",
    "The marker is given only with --fix.",
    "A parameter with a default is not a finding: wherever the hook is called without it, the default stands in.",
    "Here the module builds its own validation loader in val_dataloader – rank r takes every second sample from r on, "
    "11 samples on rank 0 and 10 on rank 1 – and the page passes use_distributed_sampler=False to the Trainer.",
    "The writer puts the rows back in the dataset's order, and rank 0 saves them.",
    "Sort the rows by index to restore the dataset's order.",
    "Gather the per-sample values in the dataset's order before reducing them.",
    "Your sampler keeps the order you gave it.",
    "The page gathers the vectors in the dataset's order.",
    "Under manual optimization, your step calls manual_backward itself.",
    "Under manual optimization, append each loss in your own training_step.",
    "This page trains under manual optimization, with two optimizers.",
    "With manual optimization, step your optimizers yourself.",
    "As on Callback-side caching, the callback skips a batch whose outputs is empty (manual optimization returning "
    "nothing).",
    "When outputs is None, skip the batch.",
    'The callback reads outputs["loss"] of each batch.',
    'Append outputs["loss"] to the list.',
    "The old outputs hooks on Lightning 2.x",
    "Empty outputs shows what each batch-end hook receives.",
    "The empty-outputs pitfall's fix (callback).",
]


def test_the_eighth_rounds_rules_flag_their_shapes_and_pass_ordinary_ones():
    """Each rule of the eighth round -- a lowercase clause after a label's colon that states a behaviour, a handed
    argument or a called hook with its condition in the passive, the order a sampler gives, what Lightning does under
    manual optimization, ``outputs`` (or a key of it) as the subject of a verb -- flags every phrasing of its class, by
    that rule; the look-alikes (titles and topics after a colon, error words, the reader's, the page's and the checker's
    code, instructions, conditions, page titles) are not flagged, by any rule."""
    missed = [
        (rule, sentence)
        for rule, cases in TYPED_EIGHTH.items()
        for sentence in cases
        if not any(rule in reasons(part) for part in sentences(unmarked(sentence), heading=False))
    ]
    wrong = [
        (sentence, reasons(part))
        for sentence in ORDINARY_EIGHTH
        for part in sentences(sentence, heading=False)
        if flagged(part)
    ]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


#: A Trainer entry point opening its clause as the subject of a behaviour verb (``run``).
TYPED_RUN = [
    "Before training, fit runs a sanity check, a short validation loop.",
    "predict returns one list per dataloader.",
    "Then validate calls the validation hooks.",
]
ORDINARY_RUN = [
    "The run stops after batch 5 of epoch 1, and fit is called again, from the start.",
    "The module also empties its list when each predict run starts.",
    "All three, from one predict run.",
    "the Trainer calls (fit, validate, test, predict), what the steps return",
    "Call fit, then validate.",
]


def test_a_trainer_entry_point_opening_its_clause_is_the_subject_of_its_verb():
    missed = [s for s in TYPED_RUN if not any("run" in reasons(p) for p in sentences(s, heading=False))]
    wrong = [(s, reasons(p)) for s in ORDINARY_RUN for p in sentences(s, heading=False) if "run" in reasons(p)]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


#: The ninth round: a stage as the subject of an order ("Validation runs before training"), where the stage word
#: used to read as the modifier of a noun ("the validation runs").
TYPED_NINTH = [
    "Validation runs before the first training batch.",
    "validation runs after every training epoch, so the cache is full",
    "Testing runs after fit.",
    "Training runs first, then validation.",
    "With a sanity check, validation runs twice before training.",
]
ORDINARY_NINTH = [
    "The validation runs before training are short.",
    "The one validation run after training logs the mean.",
    "Run validation before training to check the data.",
    "Your validation runs first.",
    "The training run before the change took 3 s.",
    "The lines above tell how many training steps ran before the error.",
]


def test_a_stage_opening_its_clause_is_the_subject_of_an_order():
    """A stage word before "runs" / "run" makes a noun only inside a noun phrase ("the validation runs"); opening its
    clause, it is the subject of an order of events (``order``)."""
    missed = [s for s in TYPED_NINTH if not any("order" in reasons(p) for p in sentences(s, heading=False))]
    wrong = [(s, reasons(p)) for s in ORDINARY_NINTH for p in sentences(s, heading=False) if flagged(p)]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


CONSOLE_FIXTURE = """\
MODULE = "LightningModule"
NEVER_SO = "Lightning never calls the hook with it"


class Rule:
    def check(self, ctx, func, pattern):
        message = f"`{func.name}` takes `{', '.join(extra)}` beyond `self`, without a default"
        yield Finding(self.code, message, (), fix=manual_fix(self.code, NEVER_SO))
        message = f"`{func.name}` was removed in Lightning {pattern.removed_in}: rename it"
        yield Finding(self.code, "give it a default", ())

    def _why_not_cached(self, pattern):
        if pattern.stage == "train":
            return f"Lightning before {pattern.removed_in} passed `{old_name}` only to a parameter of that name"
        return f"no {MODULE} of this project defines `{pattern.hook}`"

    def other(self):
        return "Lightning calls it once per epoch"
"""


def test_the_guard_reads_the_checkers_console_texts(tmp_path):
    """The checker's console texts -- a finding's message, a marker's reason (a module constant too), the reasons
    ``_why_not_cached`` returns -- reach a reader in the checker's output and in the code ``--fix`` marks, and no page
    shows them: read at their source, an f-string's fields filled as a reader would read them, each flagged sentence
    found at its line; the registry's changelog fact ("removed in Lightning {pattern.removed_in}") is read as a
    record, and another function's strings are not console texts."""
    relative = "src/lightning_migrate/checker/rules/lm002_epoch_end_parameters.py"
    (tmp_path / relative).parent.mkdir(parents=True)
    (tmp_path / relative).write_text(CONSOLE_FIXTURE, encoding="utf-8")
    found = console_sentences(tmp_path)
    assert [(f.source, f.line, f.sentence) for f in found] == [
        (relative, 2, "Lightning never calls the hook with it"),
        (relative, 14, "Lightning before 2.0 passed outputs only to a parameter of that name"),
    ], found
    assert console_sentences(ROOT) == [], console_sentences(ROOT)


def test_the_guard_reads_the_comments_the_fixes_write():
    """The comments a rewrite writes into the user's code (``# ... as in the old outputs``) reach a reader in their own
    file: every shape of ``data/rewrites`` is fixed as ``--fix --unsafe-fixes`` would, and the comments it adds are
    read as prose; one a fix could write about a release's behaviour is flagged."""
    from lightning_migrate.checker import rewrite_source

    pairs = {}
    for path in sorted((ROOT / "data" / "rewrites").glob("*.py")):
        before = path.read_text(encoding="utf-8")
        pairs[path.name] = (before, rewrite_source(before, path.name))
    read, found = fix_comment_sentences(pairs)
    assert read >= 20, read  # every caching shape writes some
    assert found == [], "\n".join(map(str, found))
    old = "def hook(outputs):\n    pass\n"
    injected = "def hook(outputs):\n    if outputs:  # Lightning 1.x left out a step that returned None\n        pass\n"
    assert [(f.line, f.sentence) for f in fix_comment_sentences({"x.py": (old, injected)})[1]] == [
        (2, "Lightning 1.x left out a step that returned None")
    ]


def test_the_guard_flags_many_phrasings_and_passes_ordinary_sentences():
    def typed(text: str) -> bool:
        return any(flagged(sentence) for sentence in sentences(text))

    missed = [text for text in TYPED if not typed(text)]
    wrong = [text for text in ORDINARY if typed(text)]
    headings = [text for text in HEADINGS if any(flagged(part) for part in sentences(text, heading=True))]
    assert missed == [] and wrong == [] and headings == [], f"missed: {missed}; flagged: {wrong}; {headings}"


def test_a_question_word_opens_a_topic_only_in_a_heading_a_lead_in_or_a_question():
    """A heading or a lead-in opened by What, When, Which, How, Why, Where or Who names a topic, and a question asks
    one; a sentence so opened that states something is read, and so is a condition followed by its main clause,
    wherever it stands."""
    assert sentences("What on_train_batch_end receives", heading=True) == []
    assert sentences("When Lightning notices a removed epoch-end hook", heading=True) == []
    assert sentences("What Lightning 2.6.6 does with each old shape:", heading=False) == []
    assert sentences("Why does Lightning skip the optimizer step?", heading=False) == []
    statement = "When a step returns None, Lightning skips the optimizer step."
    assert sentences(statement, heading=False) == [statement]
    assert sentences(statement.rstrip("."), heading=True) == [statement.rstrip(".")]  # a condition, even as a title
    assert sentences("What Lightning 1.x kept: every batch's outputs.", heading=False) != []
    assert sentences("When one worker fails, the other is stopped", heading=None) != []


FIXTURE_PAGES = {
    "verb.rst": "Verb\n====\n\nLightning silently drops the outputs of every step.\n",
    "before.rst": "Before\n======\n\nThe loop calls ``on_train_epoch_end`` after validation.\n",
    "table.rst": (
        "Table\n=====\n\n.. list-table::\n   :header-rows: 1\n\n   * - Hook\n     - Today\n"
        "   * - ``on_train_epoch_end``\n     - receives no outputs\n"
    ),
    "note.rst": "Note\n====\n\n.. note::\n\n   Lightning frees the list after each epoch.\n",
    "admonition.md": (
        "# Admonition\n\n```{admonition} Beware\nLightning divides the loss by the accumulation count.\n```\n\n"
        "```{note}\nThe Trainer resets the metric after each run.\n```\n"
    ),
    "opt_out.rst": (
        "Opt out\n=======\n\n.. rst-class:: from-records\n\n   Lightning keeps the list until the next epoch.\n"
    ),
    "container.rst": "Container\n=========\n\n.. container:: claim\n\n   The hook no longer receives outputs.\n",
    "condition.rst": (
        "Condition\n=========\n\nWhen one worker fails, the other is stopped.\n\n"
        "* DDP splits the data between the ranks.\n* A callback's epoch-end hook comes before the module's.\n"
    ),
    "ordinary.rst": "Ordinary\n========\n\n"
    + "\n\n".join(ORDINARY[:8])
    + "\n\nWhat the old hooks received\n---------------------------\n\nWhy does it matter?\n",
}
GALLERY_DOCSTRING = '''"""
Docstring
=========

A page whose code documents a hook.
"""


# %%
# The callback below.
class Recorder:
    def on_train_epoch_end(self, trainer, pl_module):
        """Lightning calls this hook once per epoch, with no outputs."""
        # by then the validation loop has run, and the sanity check runs before training starts
        return None
'''


def test_the_guard_reads_the_typed_reasons_of_the_data_files(tmp_path):
    """A reason of ``data/scenarios.toml`` is rendered inside a recipe's box, which the guard leaves unread as a
    record: its typed words are read at the source, each sentence outside its claims, and found at their line."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "scenarios.toml").write_text(
        "[[recipe.r.declared]]\n"
        'reason = "a step that returns nothing leaves the callback no loss, and the monitoring callbacks refuse an '
        'epoch without their value; cache each loss in training_step"\n'
        'see = "examples/x"\n\n[[recipe.r.outside]]\n'
        'reason = ":claim:`Empty-outputs-for-none-and-manual`, so the callback has no loss to log. Cache each loss."\n'
        'title = "Lightning calls the hook once per epoch"\n',
        encoding="utf-8",
    )
    found = data_sentences(tmp_path)
    assert [(f.source, f.line) for f in found] == [("data/scenarios.toml", 2)], found
    assert data_sentences(ROOT) == [], data_sentences(ROOT)


#: Behaviour sentences as a docstring, a comment, a data file's reason or the registry's text types them, with their
#: reST markup: each is flagged once the markup is read as a page renders it (:func:`unmarked`), as it is without.
TYPED_MARKUP = [
    "The mean of each epoch's per-batch losses, as the old ``outputs`` list held them.",
    "the old ``outputs`` list held the loss",
    "``Trainer`` calls :meth:`on_train_epoch_end` after the callbacks.",
    ":class:`~lightning.pytorch.Trainer` resets every metric at the end of each validation run.",
    "The old hook ran for training batches only: :func:`on_train_batch_start` replaces it.",
    "`Lightning` silently drops the outputs of every step.",
    ":py:meth:`on_validation_epoch_end <lightning.pytorch.core.hooks.ModelHooks.on_validation_epoch_end>` fires after "
    "the sanity check too.",
    "Under DDP, ``Lightning`` raises when a step returns ``None``.",
]
#: Look-alikes: the reader's code and instructions, with the same markup; none is flagged.
ORDINARY_MARKUP = [
    "Append ``loss.detach()`` in ``training_step``; reduce and clear it in ``on_train_epoch_end(self)``.",
    "Give ``dataloader_idx`` a default of ``0``.",
    "See :doc:`Module-side caching </examples/core/module_side_caching>` for the recipe.",
    "Use the result of ``trainer.predict``, or append in ``predict_step`` and read it at epoch end.",
    "For each batch, notes ``requires_grad`` of each value of ``outputs``, by key.",
    "The mean of each epoch's per-batch losses, each computed by hand with ``loss_by_hand``.",
    "Rename to :meth:`on_train_batch_start` and accept ``batch, batch_idx``.",
    ":claim:`Accumulation-divides-outputs-loss`: multiply it back by ``trainer.accumulate_grad_batches``.",
]


def test_the_guard_reads_markup_as_a_page_renders_it():
    """A docstring, a comment, a reason or a replacement keeps its reST markup where the guard reads it: double and
    single backticks and roles (with or without a title) are read as their words, a claim as a claim's placeholder,
    so a behaviour sentence is flagged with its markup as without, in every place the guard reads source text; the
    look-alikes are not."""
    assert unmarked("the old ``outputs`` list") == "the old outputs list"
    assert unmarked(":doc:`Module-side caching </examples/core/module_side_caching>`") == "Module-side caching"
    assert unmarked(":meth:`~a.b.on_train_epoch_end`, :func:`a.f`, `x`") == "on_train_epoch_end, a.f, x"
    assert unmarked(":claim:`old-list-one-entry-per-batch`.") == " \x00 ."

    def typed(text: str) -> bool:
        return any(flagged(part) for part in sentences(unmarked(text), heading=False))

    missed = [text for text in TYPED_MARKUP if not typed(text)]
    wrong = [text for text in ORDINARY_MARKUP if typed(text)]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"
    code = "".join(
        f'def f{i}():\n    """{text}"""\n\n\n# {text}\nx = 1\n' for i, text in enumerate(TYPED_MARKUP + ORDINARY_MARKUP)
    )
    read = docstrings(code)
    assert "``" not in "".join(read) and ":meth:" not in "".join(read), read
    found = {text for text in read if any(flagged(part) for part in sentences(text, heading=None))}
    assert len(found) == len(TYPED_MARKUP), found  # each typed one, as a docstring and as a comment alike


REGISTRY_FIXTURE = """\
PATTERNS = (
    OldPattern(
        id="callback-on-batch-start",
        replacement=(
            "Rename to ``on_train_batch_start`` and accept ``batch, batch_idx``. "
            "The old hook ran for training batches only."
        ),
        example="examples/x",
    ),
    OldPattern(id="a", replacement="Give ``dataloader_idx`` a default of ``0``.", example="examples/y"),
    OldPattern(id="b", replacement="``Lightning`` no longer passes ``outputs`` to ``on_train_epoch_end``."),
    OldPattern(id="c", replacement="Use the result of ``trainer.predict``.", body="Lightning calls the hook."),
)
"""


def test_the_guard_reads_the_typed_texts_of_the_registry(tmp_path):
    """The registry's ``replacement`` sentences are rendered in the reference table, which the guard leaves unread as
    a record, and printed by the checker: their typed words are read at the source, markup read as rendered, and
    found at the line their string starts on; an instruction, and another keyword's string, are not."""
    (tmp_path / "src" / "lightning_migrate").mkdir(parents=True)
    (tmp_path / "src" / "lightning_migrate" / "registry.py").write_text(REGISTRY_FIXTURE, encoding="utf-8")
    found = source_sentences(tmp_path)
    assert [(f.source, f.line, f.sentence) for f in found] == [
        ("src/lightning_migrate/registry.py", 5, "The old hook ran for training batches only."),
        ("src/lightning_migrate/registry.py", 11, "Lightning no longer passes outputs to on_train_epoch_end."),
    ], found
    assert source_sentences(ROOT) == [], source_sentences(ROOT)


def test_the_guard_reads_every_place_text_reaches_a_reader(tmp_path):
    """A project with one page per way a contributor types a behaviour sentence -- a verb outside the old list, a
    verb before the hook, a table row, an rST note, MyST admonitions, a docstring in gallery code, a template,
    text under ``.. rst-class:: from-records`` -- and an ordinary page. Each typed page has a finding with its
    file; the ordinary page and the claim have none."""
    from test_claims import build, claims_project

    project = claims_project(tmp_path)
    conf = project / "conf.py"
    conf.write_text(
        conf.read_text(encoding="utf-8").replace(
            '"build_mechanics.run_records"', '"build_mechanics.run_records", "myst_parser"'
        )
        + 'templates_path = ["_templates"]\n',
        encoding="utf-8",
    )
    (project / "_templates").mkdir()
    (project / "_templates" / "layout.html").write_text(
        '{% extends "!layout.html" %}{% block footer %}{{ super() }}<div class="footer-note">The Trainer runs '
        "validation twice per epoch.</div>{% endblock %}\n",
        encoding="utf-8",
    )
    for name, text in FIXTURE_PAGES.items():
        (project / "docs" / name).write_text(text, encoding="utf-8")
    (project / "gallery" / "docstring.py").write_text(GALLERY_DOCSTRING, encoding="utf-8")
    index = project / "docs" / "index.rst"
    pages = "".join(f"   {Path(name).stem}\n" for name in FIXTURE_PAGES)
    index.write_text(index.read_text(encoding="utf-8") + pages, encoding="utf-8")
    build(project)

    findings = typed_sentences(project / "_build" / "html", root=project)
    by_source = {}
    for finding in findings:
        by_source.setdefault(finding.source, []).append(finding)
    expected = {f"docs/{name}" for name in FIXTURE_PAGES if name != "ordinary.rst"} | {"gallery/docstring.py"}
    assert expected <= set(by_source), (sorted(by_source), findings)
    assert "docs/ordinary.rst" not in by_source, by_source["docs/ordinary.rst"]
    assert [f.line for f in by_source["docs/note.rst"]] == [6], by_source["docs/note.rst"]
    assert any(f.sentence.startswith("sets the class 'from-records' by hand") for f in by_source["docs/opt_out.rst"])
    assert any("Lightning calls this hook once per epoch" in f.sentence for f in by_source["gallery/docstring.py"])
    assert any("the sanity check runs before training" in f.sentence for f in by_source["gallery/docstring.py"])
    assert any(f.sentence.startswith("sets the class 'claim' by hand") for f in by_source["docs/container.rst"])
    assert [f.line for f in by_source["docs/condition.rst"]] == [4, 6, 7], by_source["docs/condition.rst"]
    assert any("The Trainer runs validation twice" in f.sentence for f in findings), findings  # the template
    assert not any("1 + 1" in f.sentence for f in findings)  # the claim


def test_no_sentence_on_the_site_speaks_of_lightning_outside_a_claim(site):
    used: set[tuple[str, str]] = set()
    findings = typed_sentences(site.outdir, used=used)
    assert findings == [], f"{len(findings)} typed sentences:\n" + "\n".join(map(str, findings))
    stale = [key for key in ALLOWED if key[1] and key not in used]  # an allowance no flagged sentence needs goes
    assert stale == [], f"allowed by name but flagged nowhere: {stale}"


#: The tenth round: a run's outcome typed as a fact (an exception, a function it failed in).
TYPED_TENTH = [
    "Both are ``KeyError: 'loss'``, raised at the first batch whose ``outputs`` is empty.",
    "The callback that reads it fails in ``torch.cat``.",
    "The second fit raises a ``RuntimeError`` at the first batch.",
    "the old hook failed with TypeError after a whole epoch",
    "What it received was a ValueError.",
]
ORDINARY_TENTH = [
    "The callback that reads it runs below; its error is printed.",
    "A module whose step returns a bare tensor would fail with a ``KeyError``.",
    "If the list is empty, the page's code raises a RuntimeError.",
    "Catch the ``TypeError`` and print it.",
    "The two errors printed above, and the outputs each callback received before it.",
    "lightning_migrate.checker.rewrite_source raises RewriteError naming file:line.",
    "A run that stopped half-way leaves nothing behind.",
]


def test_the_tenth_rounds_rule_flags_a_typed_outcome_and_passes_ordinary_ones():
    missed = [s for s in TYPED_TENTH if not any("outcome" in reasons(p) for p in sentences(unmarked(s), heading=False))]
    wrong = [(s, reasons(p)) for s in ORDINARY_TENTH for p in sentences(unmarked(s), heading=False) if flagged(p)]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


# -- The eleventh round's phrasings: how a contributor writes a behaviour sentence the earlier rounds missed -------
#: Sentences the eleventh round flags (:data:`ELEVENTH_ROUND`, with the earlier rounds' fixes): a name of Lightning,
#: torch, torchmetrics or DDP under another form or with a verb off the lists, a lead-in ("Note that"), a reader who
#: meets a behaviour, an error met with another verb, a release written another way, a size, a caption, a default.
TYPED_ELEVENTH = [
    "Lightning will zero the gradients before each optimizer step.",
    "The Trainer wipes the progress-bar metrics when an epoch closes.",
    "Older Lightning took an outputs argument here.",
    "The Trainer, after the last validation batch of every single epoch, resets all metrics.",
    "Lightning's progress bar refreshes every 20 batches.",
    "PL skips the backward pass when the step returns None.",
    "The framework calls your hook once per epoch, after validation.",
    "Fabric launches one process per device.",
    "Right after validation ends, the loop dispatches on_train_epoch_end.",
    "Callback.on_train_epoch_end fires after the module's on_train_epoch_end.",
    "LightningModule.training_epoch_end was removed.",
    "The training-epoch-end hook fires once per epoch.",
    "The epoch end hook sees no outputs.",
    "You will see on_train_epoch_end fire twice during the sanity check.",
    "Gradients get zeroed before every optimizer step.",
    "The scheduler is stepped once per epoch unless told otherwise.",
    "You will see the loss arrive in the callback already detached.",
    "The callback gets the loss after it has been divided.",
    "Your callback gets the batch already on the GPU.",
    "The step's loss arrives in the callback without its graph.",
    "Every callback gets the batch before the module does.",
    "There's no outputs argument on 2.x.",
    "There is no epoch-level list in 2.x.",
    "On 2.x the trainer keeps no per-step results for you.",
    "Nothing of the old contract is left in 2.0.",
    "Note that autograd frees the graph after backward.",
    "Keep in mind that gradients accumulate across calls to backward.",
    "Expect the trainer to call on_fit_end exactly once.",
    "Remember that the sampler pads the last shard.",
    "Each cached loss costs 4 bytes.",
    "A float32 scalar tensor occupies 4 bytes of storage plus a few hundred bytes of overhead.",
    "The old outputs list grows by one dict per batch.",
    "Caching losses with their graphs uses about three times the memory.",
    "A running MeanMetric needs far less memory than a list.",
    "Mixed precision halves activation memory.",
    "The default progress bar updates every step.",
    "backward frees the graph.",
    "loss.backward() releases the intermediate buffers.",
    "Calling .item() synchronises the GPU with the CPU.",
    "requires_grad spreads to every tensor computed from a leaf.",
    "In-place operations on a leaf that requires grad throw a RuntimeError.",
    "A view shares memory with its base tensor.",
    "Tensors created under no_grad have no grad_fn.",
    "MetricCollection syncs across ranks.",
    "A torchmetrics Metric keeps its state on the module's device.",
    "metric.compute() caches its result until the next update.",
    "SumMetric accumulates in float64 by default.",
    "Metric states are summed over processes before compute.",
    "Under DDP, gradients are all-reduced during backward.",
    "Every GPU holds a full replica of the model.",
    "With two GPUs, every GPU receives half the samples.",
    "Each device ends up with a different shard of the data.",
    "DistributedDataParallel registers hooks that all-reduce gradients during backward.",
    "Under DDP the batch size is per process, not global.",
    "From 1.5 on, the callback hook takes no outputs argument.",
    "Starting with v2.0, the epoch-end hooks take no outputs.",
    "2.0 dropped support for the outputs argument.",
    "Version 2.0 removed it.",
    "PL 1.6 deprecated the old signature.",
    "In v1.9 the callback got every output.",
    "As of 2.0 validation_epoch_end is gone.",
    "Lightning 2 stopped passing outputs to the callbacks.",
    "Defining training_epoch_end now errors out at fit time.",
    "You'll hit a NotImplementedError as soon as the hook runs.",
    "The combination ends with a ValueError at setup.",
    "An integer loss triggers a RuntimeError in backward.",
    "A module with training_epoch_end blows up before the first batch.",
    "You get a MisconfigurationException if the hook is still defined.",
    "If you return None, the optimizer is skipped.",
    "If no loss is returned, backward does not run.",
    "When accumulate_grad_batches is 4, the optimizer steps every fourth batch.",
    "Unless you pass sync_dist, every rank logs its own value.",
    "Called once per epoch, after validation.",
    "Receives the batch outputs.",
    "Runs before the optimizer step.",
    "Out of the box, max_epochs is 1000.",
    "The trainer's default for max_epochs is 1000.",
    "Checkpointing is enabled unless you turn it off.",
    "Gradient clipping happens before the optimizer step.",
    "Early stopping kicks in after three epochs without improvement.",
    "Logging happens every 50 steps unless you change it.",
]
#: Sentences a page must be allowed to say: the reader's code, the page, the checker, the reader's own upgrade.
ORDINARY_ELEVENTH = [
    "Append the loss in training_step.",
    "Your callback reads the module's list.",
    "Move the cache to the CPU before you store it.",
    "In on_train_epoch_end, compute the mean and log it.",
    "Call self.log in on_validation_epoch_end to record the mean.",
    "Next, pass the callback to the Trainer.",
    "The next page covers DDP.",
    "This section walks through the callback-side recipe.",
    "The recipe below keeps one float per batch.",
    "Your on_train_epoch_end clears the list after reading it.",
    "If you use DDP, gather the losses before you average them.",
    "With torchmetrics, update the metric in training_step and compute it at epoch end.",
    "Under FSDP, wrap the model yourself.",
    "To run on two GPUs, set devices=2 and strategy='ddp'.",
    "The checker reports every file that still defines training_epoch_end.",
    "The checker removes the outputs argument from on_train_epoch_end.",
    "Run the checker; it rewrites each training_epoch_end it finds.",
    "Delete training_step_end and move its body into training_step.",
    "Rename your validation_epoch_end to on_validation_epoch_end.",
    "This guide was written for readers who upgrade from 1.9.",
    "Readers on 1.9 can skip to the checker.",
    "If you are still on 1.9, pin the version and run the checker first.",
    "Upgrade to 2.0 after the checker reports no findings.",
    "Each example on this page runs in under a minute.",
    "Scroll down for the full table.",
    "Open the dropdown to see the recorded output.",
    "Store the predictions on the CPU to save GPU memory.",
    "You can also keep a running sum instead of a list.",
    "When you have several loaders, add a dataloader_idx argument to your hooks.",
    "The previous page explained why the hook changed.",
    "Pick the module-side recipe if only the module reads the values.",
    "Lightning users upgrading from 1.x should start here.",
    "Lightning's documentation describes each hook.",
    "For a DDP run, launch the script with torchrun.",
    "Our torchmetrics example keeps two metrics.",
    "The gallery examples call trainer.fit once each.",
    "Your training_step returns the loss; your callback reads it.",
    "Once you have migrated, delete the old hook.",
    "Before you upgrade to 2.0, run the checker on your code.",
    "The recipe's callback skips a batch whose loss is missing.",
    "Torch users new to Lightning should read the overview first.",
    "Save the figure next to your notebook.",
]


# -- The twelfth round's phrasings: a second helper's, written without reading the lists above ----------------------
#: Sentences the twelfth round flags: an action as the subject ("Setting ``max_epochs=-1`` makes ..."), a fact after
#: "which means", "because" or "so", a setting with a passive, a default said of any name, a release with any verb,
#: Lightning's classes and packages, torch's methods, a precision mode, the trainer's counters.
TYPED_TWELFTH = [
    "on_train_epoch_end now runs after the checkpoint callback.",
    "In 2.0, validation_epoch_end was removed outright.",
    "The outputs argument is gone from on_train_epoch_end since Lightning 2.0.",
    "Trainer raises a NotImplementedError if your module still overrides training_epoch_end.",
    "By default, self.log in training_step logs on every step and not per epoch.",
    "Inside validation_step, self.log defaults to on_epoch=True.",
    "With sync_dist=True the logged value is reduced across all processes before it is stored.",
    "sync_dist averages by default, it doesn't sum.",
    "Lightning calls on_validation_epoch_end before on_train_epoch_end when validation runs at the end of an epoch.",
    "The sanity check runs two validation batches before training starts.",
    "num_sanity_val_steps defaults to 2.",
    "Calling trainer.test() without a checkpoint path used the last weights in 1.x but now warns.",
    "predict_step returns are collected into a list per dataloader.",
    'With precision="16-mixed", the forward pass runs under torch.autocast.',
    "GradScaler skips the optimizer step whenever it finds inf gradients.",
    "bf16 training doesn't need a grad scaler at all.",
    'The precision flag "16" was renamed to "16-mixed" in 2.0.',
    "accumulate_grad_batches=4 means the optimizer steps once every four batches.",
    "With gradient accumulation, global_step counts optimizer steps, not batches.",
    "Lightning divides the loss by accumulate_grad_batches for you.",
    "Checkpoints saved by ModelCheckpoint include the optimizer state and the loop progress.",
    "Resuming with ckpt_path restores the epoch and global step too.",
    "resume_from_checkpoint was dropped from the Trainer in 2.0.",
    "ModelCheckpoint saves on_train_epoch_end by default unless you monitor a validation metric.",
    "save_last=True writes last.ckpt every time a checkpoint is saved.",
    "Callbacks run in the order you pass them, except ModelCheckpoint which is moved to the end.",
    "Checkpoint callbacks always go last in the callback list.",
    "EarlyStopping checks its monitored metric at the end of validation.",
    "The DistributedSampler is injected automatically when you train with DDP.",
    "use_distributed_sampler replaced replace_sampler_ddp in 2.0.",
    "Each rank gets a different shard of the dataset, so the per-rank epoch is shorter.",
    "DDP averages the gradients across ranks during backward.",
    "Gradients are all-reduced in buckets while backward is still running.",
    "Only rank zero writes the checkpoint file.",
    "The logger is a no-op on every rank except zero.",
    "self.all_gather returns a tensor with an extra leading dimension for world size.",
    "loss.backward() frees the graph unless you pass retain_graph=True.",
    "Autograd keeps every intermediate activation alive until backward is called.",
    "Holding on to the loss tensor keeps the whole graph in memory, which means memory grows every batch.",
    ".item() synchronises with the GPU.",
    "A float32 tensor with a million elements takes about 4 MB.",
    "torch.no_grad() does not change the behaviour of dropout.",
    "model.eval() is called for you before the validation loop starts.",
    "Lightning puts the model back into train mode after validation.",
    "Validation runs under torch.no_grad, so you don't need to wrap anything.",
    "Actually, in 2.x validation and test run under torch.inference_mode.",
    "torchmetrics Accuracy now requires the task argument.",
    "metric.compute() syncs states across processes before computing.",
    "A torchmetrics metric keeps running state, so memory stays constant regardless of the number of batches.",
    "Logging a Metric object lets Lightning call compute and reset for you.",
    "metric.reset() is called automatically at the end of the epoch when you log the metric object.",
    "The trainer calls on_train_batch_end once per batch, even when accumulating.",
    "optimizer_step is called only on accumulation boundaries.",
    "on_before_optimizer_step receives the optimizer as its only argument now.",
    "The optimizer_idx argument was removed from training_step.",
    "Multiple optimizers need manual optimization since 2.0.",
    "training_step receives batch and batch_idx.",
    "on_train_batch_end gets the outputs of training_step.",
    "In 1.9 this emitted a deprecation warning; in 2.0 it's an error.",
    'The error reads "Support for training_epoch_end has been removed in v2.0.0".',
    "You'll get a RuntimeError saying the hook is no longer supported.",
    "Setting max_epochs=-1 makes the Trainer train forever.",
    "max_epochs defaults to 1000 if neither max_epochs nor max_steps is set.",
    "The default for max_epochs changed to None, which Lightning then treats as 1000.",
    "log_every_n_steps is 50 by default.",
    "val_check_interval=0.25 runs validation four times per epoch.",
    "check_val_every_n_epoch defaults to 1.",
    "Test results are returned as a list of dicts, one per dataloader.",
    "trainer.validate returns the same structure as trainer.test.",
    "The predict loop doesn't call any logging hooks.",
    "You can't call self.log from predict_step; it raises a MisconfigurationException.",
    "Calling self.log in on_train_epoch_end logs only on epoch, whatever you pass.",
    "on_step=True inside an epoch-end hook raises an error.",
    "Lightning logs under the key name with _step and _epoch suffixes when both flags are True.",
    "Progress bar values are taken from the last logged step.",
    "The Trainer moves batches to the device before training_step is called.",
    "transfer_batch_to_device runs before on_after_batch_transfer.",
    "Lightning seeds each worker differently when workers=True is passed to seed_everything.",
    'The strategy defaults to "auto", which picks DDP when you have several GPUs.',
    '"ddp_spawn" pickles the module, which is why lambdas in it break.',
    "On interactive environments Lightning falls back to ddp_notebook.",
    "GPU memory isn't freed when a tensor goes out of scope; the caching allocator keeps it.",
    "torch.cuda.empty_cache releases cached blocks back to the driver but not tensors still referenced.",
    "Appending outputs to a list in every step grows CPU memory linearly with the dataset.",
    "Storing detached tensors still keeps them on GPU.",
    "detach() shares storage with the original tensor.",
    "The whole epoch of outputs was kept in memory by Lightning before 2.0.",
    "That's why the hook was removed: the outputs list could grow to gigabytes.",
    "Lightning used to accumulate every step's output to pass to training_epoch_end.",
    "Epoch-end hooks: no longer receive outputs.",
    "Removed in 2.0.",
    "Runs after validation, before checkpointing.",
    "Hooks are called in this order: on_train_epoch_start, training_step, on_train_epoch_end.",
    "The order of epoch-end hooks changed in 2.0",
    "on_validation_epoch_end is called on every rank",
    "Note that the LightningModule hook runs before the callback hook of the same name.",
    "Callback.on_train_epoch_end is called before LightningModule.on_train_epoch_end.",
    "Well, strictly speaking the module hook fires after the callbacks' hooks.",
    "We moved to on_validation_epoch_end because validation_epoch_end no longer exists.",
    "Keep it short, because the trainer only keeps the last value anyway.",
    "Note the double call, which means the hook runs twice under sanity checking.",
    "It's slower because autocast casts the weights to half precision on every forward.",
    "Mixed precision roughly halves activation memory.",
    "A bfloat16 number uses 2 bytes.",
    "torch.compile works with Lightning 2.0 out of the box.",
    "LightningLite was renamed to Fabric.",
    "The pytorch_lightning package is still published alongside lightning.",
    "Importing from lightning.pytorch and pytorch_lightning gives you two different Trainer classes.",
    "Gradient clipping happens after unscaling under AMP.",
    "on_after_backward is called before gradients are unscaled.",
    "The trainer's current_epoch starts at 0.",
    "Lightning warns once per run when the dataloader has fewer workers than CPUs.",
]
#: What the same helper wrote as sentences a page must be allowed to say.
ORDINARY_TWELFTH = [
    "Log the mean with self.log in on_validation_epoch_end.",
    "Your callback keeps one float per batch.",
    "The checker rewrites validation_epoch_end into on_validation_epoch_end.",
    "This page trains for two epochs on the CPU.",
    "Move the body of training_epoch_end into on_train_epoch_end.",
    "Store each step's loss in self.losses inside training_step.",
    "Clear the list at the end of on_train_epoch_end.",
    "Our recipe accumulates predictions in a list on the module.",
    "In this example the model logs its validation loss with sync_dist=True.",
    'Pass precision="16-mixed" to the Trainer if you want to follow along on a GPU.',
    "Set accumulate_grad_batches=4 in the snippet below.",
    "Next, we save a checkpoint and resume from it.",
    "Run lightning-migrate check on your project to find the removed hooks.",
    "lightning-migrate reports each file and line where training_epoch_end is defined.",
    "The checker exits with status 1 when it finds something to fix.",
    "lightning-migrate only reads your files; it never modifies them unless you pass --fix.",
    "See the next section for the predict loop.",
    "Go back to the overview if you skipped the setup.",
    "The table below lists the hooks you need to rename.",
    "This guide covers the move from Lightning 1.9 to 2.0.",
    "In the rest of this page, we call the module LitClassifier.",
    "Replace outputs with your own attribute, say self.validation_step_outputs.",
    "Our callback writes the metrics to a CSV file after every epoch.",
    "The example dataset has 1,000 rows, so the run takes under a minute.",
    "Use torchmetrics if you'd rather not keep the outputs yourself.",
    "Call metric.update in validation_step and log the metric object.",
    "Wrap the computation in torch.no_grad() in your own helper.",
    "If you use DDP, add sync_dist=True to the self.log call.",
    "Pick a monitor key that your validation_step actually logs.",
    "Your on_train_epoch_end now reads from self.training_step_outputs.",
    "Our module stacks the collected tensors with torch.stack before averaging them.",
    "Then free the list with self.training_step_outputs.clear().",
    "The snippet above detaches the loss before appending it.",
    "Compare your output with the one shown here.",
    "Try it: change max_epochs to 3 and run the script again.",
    "Before migrating, pin your current version in requirements.txt.",
    "Upgrade with pip install -U lightning.",
    "Replace every import of pytorch_lightning with lightning.pytorch.",
    "Our test suite runs this example on two CPU processes.",
    "Keep the callback order as in the snippet.",
    "Add the EarlyStopping callback after your own callback in the list.",
    "Your predict_step should return the predictions for one batch.",
    "Return the loss from training_step, as before.",
    "Use self.trainer.global_rank if you only want to print on one process.",
    "Guard the print with if self.trainer.is_global_zero.",
    "The next example uses gradient accumulation with four batches.",
    "Here the recipe keeps only the running sum and the count.",
    "This keeps the example short; a real project would use torchmetrics.",
    "The checker also flags the optimizer_idx argument in your training_step.",
    "Run lightning-migrate with --format json to get machine-readable output.",
    "Step 3: rename the hooks.",
    "Validation loop",
    "If anything on this page is unclear, open an issue.",
    "We recommend reading the hooks chapter first.",
    "Your custom callback should subclass Callback and override on_validation_epoch_end.",
    "In our recipe, the epoch-end hook computes the mean of the stored losses and logs it.",
    "Write the result to disk in on_test_epoch_end if you need it later.",
    "Note that our example uses bf16 only to keep the figures small.",
    "Feel free to skip this section if you never used multiple optimizers.",
]


# -- The thirteenth round's phrasings: a third helper's page-like sentences, written without reading the lists -----
#: Sentences the thirteenth round flags: the methods of Lightning's callback classes (``write_on_epoch_end``), its
#: utilities (``CombinedLoader``), a setting opening a clause with what it does, a passive after a condition.
TYPED_THIRTEENTH = [
    (
        "In 1.x, training_epoch_end was handed the full list of every dictionary your training_step returned "
        "during the epoch."
    ),
    "The replacement hook, on_train_epoch_end, takes no outputs argument at all; only the module itself is passed in.",
    (
        "Because test_epoch_end disappeared in the 2.0 release, a module that still defines it fails at fit "
        "time with a NotImplementedError."
    ),
    (
        "Defining training_epoch_end on a LightningModule under Lightning 2.x makes the Trainer refuse to "
        "start, with an error that points at the migration PR."
    ),
    (
        "The outputs list that used to arrive at the epoch-end hook held one entry per batch, in the order "
        "the batches were processed."
    ),
    "With several validation dataloaders the old validation_epoch_end got a list of lists, one inner list per loader.",
    (
        "on_validation_epoch_end fires after the last validation batch of every loader has been processed, "
        "not once per loader."
    ),
    (
        "Note: on_train_epoch_end on the module runs after the callbacks' on_train_epoch_end, so anything a "
        "callback logs there is already recorded."
    ),
    (
        "Warning: the trainer raises a NotImplementedError, not a deprecation warning, when it finds "
        "training_epoch_end on a 2.x module."
    ),
    (
        "The batch-end hook for training is given the outputs of training_step, the batch, and the batch "
        "index, in that order."
    ),
    (
        "What on_train_batch_end gets as outputs is whatever training_step returned, normalised to a dict if "
        "you returned a bare loss tensor."
    ),
    (
        "If training_step returns a dictionary, on_train_batch_end receives that same dictionary with the "
        "loss already detached."
    ),
    "In on_validation_batch_end the outputs argument carries the object returned by validation_step, unchanged.",
    (
        "For a model with more than one validation dataloader, on_validation_batch_end is called with a "
        "dataloader_idx argument as well."
    ),
    "The dataloader_idx parameter of on_validation_batch_end defaults to 0 when only one loader is attached.",
    "When training_step returns None, the batch is skipped and on_train_batch_end still runs with outputs set to None.",
    (
        "Under automatic optimization, the loss seen in on_train_batch_end has been divided by "
        "accumulate_grad_batches, though the value you log is not."
    ),
    "During fit, the callback's on_train_batch_end runs before the LightningModule's own on_train_batch_end.",
    (
        "The trainer calls on_train_start once, after the sanity check finishes and before the first training"
        " epoch begins."
    ),
    (
        "Validation runs inside the training epoch, so on_validation_epoch_end happens before "
        "on_train_epoch_end for that epoch."
    ),
    "On every epoch, on_train_epoch_start is invoked before the first batch is fetched from the dataloader.",
    (
        "Callbacks are called in the order they appear in the callbacks list, except that checkpoint "
        "callbacks are moved to the end."
    ),
    (
        "ModelCheckpoint is always run last among the callbacks so that it sees the metrics the other "
        "callbacks have logged."
    ),
    "- setup is called on every process, whereas prepare_data is only run on local rank zero by default.",
    "- on_before_backward is triggered right before loss.backward() is performed by the automatic optimization loop.",
    "- on_after_backward runs once gradients exist, but before the optimizer step and before they are zeroed.",
    "- on_before_optimizer_step only fires on the batch where the accumulated gradients are actually applied.",
    (
        "The sanity check executes two validation batches before training starts, because "
        "num_sanity_val_steps defaults to 2."
    ),
    "Metrics logged during the sanity check are discarded, and ModelCheckpoint does not save anything from it.",
    (
        "While the sanity check is running, trainer.sanity_checking is True and the progress bar shows a "
        'separate "Sanity Checking" bar.'
    ),
    "Setting num_sanity_val_steps=-1 makes the trainer run the entire validation set before the first training step.",
    (
        "Your on_validation_epoch_end hook is also executed at the end of the sanity check, so it sees a "
        "partial epoch of two batches."
    ),
    (
        "With accumulate_grad_batches=4, the optimizer steps once every four batches and gradients are summed"
        " over those batches."
    ),
    (
        "Lightning divides the loss by the number of accumulation steps before calling backward, so the "
        "effective gradient is a mean."
    ),
    "In manual optimization, no scaling of the loss happens for you, and accumulate_grad_batches is ignored.",
    "Gradient clipping is applied after the gradients have been unscaled when mixed precision is in use.",
    'precision="16-mixed" wraps the forward pass in torch.autocast and scales the loss with a GradScaler.',
    (
        'The precision string "16" was renamed to "16-mixed" in 2.0, though the short form is still accepted '
        "with a warning."
    ),
    'Note: by default the Trainer trains in 32-bit precision ("32-true").',
    "GradScaler skips the optimizer step when it finds inf or NaN in the gradients, and lowers the scale factor.",
    (
        "A checkpoint written by ModelCheckpoint contains the model state_dict, the optimizer and scheduler "
        "states, the epoch, the global step and the callback states."
    ),
    (
        "When you resume from a checkpoint saved in the middle of an epoch, the fit loop restarts that epoch "
        "at the batch after the one that was saved."
    ),
    'ckpt_path="last" tells the trainer to pick up the most recent last.ckpt written by a ModelCheckpoint callback.',
    "Passing resume_from_checkpoint to the Trainer constructor was deprecated in 1.5 and removed in 2.0.",
    (
        "The on_save_checkpoint hook receives the checkpoint dictionary and may add keys to it before it is "
        "written to disk."
    ),
    "on_load_checkpoint is called with the checkpoint dictionary before the model's state_dict is restored.",
    "self.log in training_step defaults to on_step=True and on_epoch=False.",
    "In validation_step and test_step, self.log defaults to on_step=False and on_epoch=True.",
    "With on_epoch=True, the logged values are averaged over the epoch, weighted by batch size.",
    "If you pass sync_dist=True, the value is reduced across processes with a mean before it is logged.",
    "self.log raises a MisconfigurationException if you pass a value that is not a number, a tensor, or a Metric.",
    "Logging a torchmetrics Metric object lets Lightning call compute() and reset() for you at the end of the epoch.",
    "prog_bar=True adds the metric to the progress bar but does not change what is sent to the logger.",
    "Calling self.log inside on_train_batch_end is allowed, but logging from on_train_end raises an error.",
    "Unless you set add_dataloader_idx=False, each metric logged from a second loader is stored under a separate name.",
    (
        "A module whose validation_step lacks dataloader_idx fails with a RuntimeError once two validation "
        "loaders are attached."
    ),
    "trainer.predict returns a list of the values returned by predict_step, one per batch.",
    "return_predictions defaults to True except when using a strategy that spawns processes, where it is forced off.",
    "When return_predictions=False, trainer.predict returns None and the predictions are not kept in memory.",
    "predict_step falls back to calling forward when you do not override it.",
    "In prediction mode, gradients are disabled and the model is switched to eval mode before the first batch.",
    'BasePredictionWriter calls write_on_batch_end after every predict batch when write_interval is "batch".',
    'With write_interval="epoch", write_on_epoch_end receives all predictions and all batch indices from the epoch.',
    (
        "The write_on_epoch_end method of BasePredictionWriter is only given the predictions if "
        "return_predictions is left enabled."
    ),
    "Under DDP, every rank's prediction writer writes its own shard; no gathering happens before write_on_epoch_end.",
    (
        "The batch_indices passed to write_on_epoch_end refer to positions in the dataset as seen by the "
        "distributed sampler."
    ),
    "ModelCheckpoint monitors the metric named by monitor, and with monitor=None it just keeps the latest checkpoint.",
    (
        "If the monitored key was never logged, ModelCheckpoint raises a MisconfigurationException at the end"
        " of the epoch."
    ),
    (
        "EarlyStopping checks its metric at the end of each validation epoch by default, not at the end of "
        "the training epoch."
    ),
    (
        "The patience of EarlyStopping counts validation checks, not training epochs, so with "
        "val_check_interval=0.5 it runs out twice as fast."
    ),
    'EarlyStopping\'s mode defaults to "min", which is wrong for accuracy-like metrics.',
    "save_top_k defaults to 1, so only the best checkpoint is kept on disk.",
    (
        "When check_on_train_epoch_end is left unset, EarlyStopping decides where to run based on whether "
        "there is a validation loop."
    ),
    "EarlyStopping raises a RuntimeError when the monitored metric is missing and strict is True.",
    "A ModelCheckpoint with every_n_epochs=0 never saves at epoch end.",
    "In DDP each process runs its own copy of the model and gradients are averaged with an all-reduce during backward.",
    "Lightning inserts a DistributedSampler for you, so each rank sees a disjoint slice of the dataset.",
    "The DistributedSampler pads the dataset by repeating samples so that every rank gets the same number of batches.",
    "self.all_gather returns a tensor with a new leading dimension of size world_size.",
    "Only the process with global rank 0 writes checkpoints; the other ranks wait at a barrier.",
    "Each rank runs the sanity check independently, but logging is restricted to rank zero.",
    (
        "With use_distributed_sampler=False, Lightning leaves your sampler alone and every rank iterates over"
        " the whole dataset."
    ),
    "The replace_sampler_ddp argument was renamed to use_distributed_sampler in 2.0.",
    "DDP broadcasts the model parameters from rank zero when the model is wrapped, so all ranks start identical.",
    "A torchmetrics Metric accumulates its state across update calls and only computes the final value in compute().",
    (
        "Calling compute() on a metric that has not been updated emits a warning and returns a value from the"
        " default state."
    ),
    "torchmetrics synchronises metric states across processes before compute(), so the result is global.",
    "When a Metric is logged with self.log, it is reset automatically after the epoch-level value is computed.",
    "MeanMetric weights each update by the number of elements, unlike a plain mean of batch means.",
    "torchmetrics.Accuracy requires the task argument since version 0.11, and omitting it raises a TypeError.",
    (
        "A Metric stored in a plain Python list is not moved to the right device, because it is not "
        "registered as a submodule."
    ),
    "Keeping a loss tensor that still requires grad keeps the entire autograd graph of that step alive.",
    (
        "Appending un-detached outputs to a list makes memory grow linearly with the number of batches, since"
        " every graph is retained."
    ),
    (
        "Autograd frees a step's saved intermediate tensors as soon as backward completes unless "
        "retain_graph=True is passed."
    ),
    "Calling .item() copies the scalar to the host and forces a CUDA synchronisation.",
    "The tensor returned by .detach() has requires_grad set to False and no grad_fn.",
    "Storing the outputs of validation_step does not hold a graph, because validation runs under torch.no_grad.",
    "Calling backward twice through the same graph raises a RuntimeError about freed buffers.",
    "torch.no_grad prevents the creation of a graph, while inference_mode also skips version counter tracking.",
    "Lightning runs validation under torch.inference_mode by default since 2.0.",
    "The per-step outputs held for training_epoch_end were one of the biggest sources of memory growth in 1.x.",
    "In 1.3, the result object API was deprecated in favour of self.log.",
    "The 2.0 release removed training_epoch_end, validation_epoch_end and test_epoch_end from the LightningModule.",
    "Release 1.5 deprecated the on_epoch_start and on_epoch_end hooks, which were removed in 2.0.",
    "Lightning 2.0 dropped support for passing gpus= to the Trainer; you must use accelerator and devices.",
    'Between 1.9 and 2.0, the default value of the strategy argument changed from None to "auto".',
    "Up to 1.9, the Trainer still accepted the epoch-end hooks and only warned about them.",
    "In 1.x the trainer called validation_epoch_end on every rank with that rank's local outputs only.",
    "In the 2.0 release, the LightningModule.on_epoch_end hook no longer exists.",
    "| training_epoch_end | removed in 2.0 | raises NotImplementedError |",
    "| on_train_batch_end | receives outputs, batch, batch_idx | called after each training batch |",
    "Note: the dataloader_idx argument is only passed when the module has more than one dataloader for that stage.",
    "Note: Lightning moves each batch to the device before on_train_batch_start is called.",
    (
        "Warning: in 2.0 a LightningModule that still overrides test_epoch_end cannot be tested at all; "
        "trainer.test raises immediately."
    ),
    "Warning: outputs returned from training_step are detached by the time they reach on_train_batch_end.",
    "Warning: DDP pads the last batch, so metrics computed on rank-local outputs may include duplicates.",
    "The LearningRateMonitor callback logs the learning rate of each optimizer param group at every interval you set.",
    (
        "Because ModelCheckpoint hooks on_validation_end, a checkpoint is saved even when the training epoch "
        "is not finished."
    ),
    "If on_train_batch_start returns -1, the remaining batches of the current epoch are skipped.",
]
#: What the same helper wrote as sentences a page must be allowed to say: instructions naming a callback class, and
#: the reader's own code.
ORDINARY_THIRTEENTH = [
    "Append the dictionary returned by validation_step to self.validation_step_outputs in validation_step.",
    "Pass sync_dist=True to self.log when you want the epoch-level value to reflect every rank.",
    "If you resume from a mid-epoch checkpoint, clear the list in on_train_epoch_start.",
    "Your callback sums the losses and logs their mean.",
    "This example trains BoringModel for three epochs.",
    "lightning-migrate reports LM001 for every validation_epoch_end it finds.",
    "Move the body of your training_epoch_end into on_train_epoch_end and read the outputs from the list you kept.",
    "In on_validation_epoch_end, stack the stored predictions, compute your metric, and then free the list.",
    "Remember to call self.validation_step_outputs.clear() at the end of the hook so the next epoch starts empty.",
    "Detach the loss before you append it, so that your list holds plain values rather than graphs.",
    "Rename test_epoch_end to on_test_epoch_end and drop its outputs parameter.",
    "Add a dataloader_idx parameter to your validation_step if you return two validation loaders.",
    "Keep one list per dataloader in your module, indexed by dataloader_idx.",
    "Set accumulate_grad_batches=4 on the Trainer if your GPU cannot fit the larger batch.",
    'Choose precision="bf16-mixed" on Ampere GPUs and newer.',
    "Run lightning-migrate on your package before you upgrade.",
    "The checker prints the file, the line and the rule code for each finding.",
    "lightning-migrate exits with status 1 when it finds at least one LM001 or LM002.",
    "Use --fix to let lightning-migrate rewrite the hook names in place.",
    "lightning-migrate does not execute your code; it only parses the source files.",
    "This page walks through the migration of a classification model from 1.9 to 2.0.",
    "The next section covers multiple dataloaders.",
    "See the checkpoint section below for resuming mid-epoch.",
    "The table below lists each removed hook next to its replacement.",
    "In the snippet above, the model keeps its outputs in self.training_step_outputs.",
    "Our example module logs val_loss and val_acc from validation_step.",
    "Write a small callback that collects predictions in on_predict_batch_end and saves them when prediction ends.",
    "Subclass BasePredictionWriter and implement write_on_batch_end if your predictions do not fit in memory.",
    "Set return_predictions=False when you write predictions to disk with your writer.",
    'Give ModelCheckpoint the same key that you pass to self.log, for example monitor="val_loss".',
    'Set mode="max" on EarlyStopping when you monitor an accuracy.',
    "Call self.all_gather on the stacked predictions before computing the metric on rank zero.",
    "Wrap the print in an if self.trainer.is_global_zero check so it appears once.",
    "Create your metrics in __init__ as attributes so they move with the module.",
    "Update the metric in validation_step and log the metric object itself in on_validation_epoch_end.",
    "Replace your hand-written accuracy with torchmetrics.classification.MulticlassAccuracy.",
    "Call .detach().cpu() on the tensors you keep if you only need them for logging.",
    "Use torch.cat on the collected tensors rather than building a Python list of floats.",
    "Free the stored outputs once you have logged the epoch metric.",
    "If your validation_epoch_end returned a dictionary, log each entry with self.log instead.",
    "Delete the outputs argument from the signature; the new hook takes only self.",
    "Before upgrading, pin lightning<2.0 and fix the deprecation warnings first.",
    "After upgrading, run your test suite with the warnings turned into errors.",
    "Our recipe averages the per-batch losses that the module stored during the epoch.",
    "The module in this guide stores one tensor per batch and concatenates them at epoch end.",
    "In the example, the callback writes a CSV file with one row per predicted sample.",
    "If you used the outputs only for a mean, switch to a MeanMetric and remove the list altogether.",
    'To resume, pass ckpt_path="last" to trainer.fit.',
    "Restore that list in on_load_checkpoint with the key you chose.",
    "Set num_sanity_val_steps=0 while you debug your new epoch-end code.",
    "Guard your epoch-end code with if self.trainer.sanity_checking: return if the partial epoch confuses your metric.",
    "Read the migration notes for 2.0 alongside this page.",
    "The code listing uses three validation loaders to show the dataloader_idx pattern.",
    "This guide assumes you use automatic optimization.",
    "For manual optimization, scale the loss yourself before calling self.manual_backward.",
    "Compare your logged values before and after the change to make sure nothing moved.",
    "Run the example with devices=2 to see the per-rank lists.",
    "Our callback reads trainer.callback_metrics in on_validation_end and sends them to Slack.",
    "lightning-migrate flags a training_epoch_end even when it is defined on a mixin class.",
    "The checker skips files listed in the exclude option of pyproject.toml.",
    "Open an issue on the guide's repository if a pattern here does not fit your code.",
    "Warning: do not keep the loss tensor without detaching it in your list.",
    "Note: the code on this page targets Lightning 2.1 and torchmetrics 1.2.",
    "- Rename the hook.",
    "- Remove the outputs argument.",
    "- Add a list attribute in __init__ and clear it at the end of each epoch.",
]


# -- The fourteenth round's phrasings: a fourth helper's, in the voices of changelogs, issue comments, answers and ----
# -- docstrings, written without reading the lists ------------------------------------------------------------------
#: Sentences the fourteenth round flags: a list item's marker and a comment's opener left out, a docstring's
#: "Raises ..." and "Defaults to ...", a passive with Lightning or torch as its agent, a name after an adjective
#: ("A detached tensor shares ..."), torch's API paths, Lightning's mechanisms named by what they do.
TYPED_FOURTEENTH = [
    "- Removed `outputs` from `on_train_epoch_end`; the hook now receives only the module.",
    "- Dropped support for returning a dict from `validation_epoch_end` in 2.0.",
    "- `training_epoch_end` was removed in v2.0.0 and defining it now raises a `NotImplementedError`.",
    "- Deprecated `on_epoch_end` in 1.6 and removed it in 1.8.",
    "- Renamed `dataloader_idx` handling so that it is only passed when there is more than one dataloader.",
    "- `LightningModule.training_step_end` no longer exists as of 2.0.",
    "- Changed the default of `sync_dist` to remain `False`, so values are not reduced across processes.",
    "- `EarlyStopping` now checks its monitor at the end of the validation loop by default.",
    "- Fixed `ModelCheckpoint` so that `save_last` writes a symlink-free copy on every save.",
    "- Removed the `dataloader_idx` argument from `on_train_batch_start`.",
    "FWIW the trainer only calls this on rank 0.",
    "Heads up, `on_validation_epoch_end` doesn't get the step outputs anymore, you have to stash them yourself.",
    "I checked and Lightning calls `on_train_epoch_end` after the validation loop when `val_check_interval` is 1.0.",
    "IIRC `trainer.predict` doesn't run the sanity check at all.",
    "Confirmed: the batch-end hook receives `outputs` as a dict when `training_step` returns a dict.",
    "Just a note that `sync_dist=True` triggers an all-reduce on every call, which is slow per step.",
    "Pretty sure `DistributedSampler` is injected automatically unless you set `use_distributed_sampler=False`.",
    "From what I can tell the checkpoint is saved before `on_train_epoch_end` of the callbacks runs.",
    "AFAIK manual optimization disables automatic gradient accumulation entirely.",
    "The sanity check runs two validation batches by default, so your metric state gets touched before epoch 0.",
    "Lightning will raise a `MisconfigurationException` if you set `accumulate_grad_batches` with manual optimization.",
    (
        "What happens under the hood is that Lightning calls `optimizer.zero_grad()` right before "
        "`training_step` when accumulation is off."
    ),
    "Under the hood, the trainer wraps your model in `DistributedDataParallel` after `setup` runs.",
    "What you'll notice is that the validation epoch ends before the training epoch-end hook fires.",
    "The neat thing here is that `self.log` automatically accumulates values and averages them at epoch end.",
    "Behind the scenes, each rank gets a disjoint shard of the dataset.",
    "Here's the catch: keeping every step's output alive keeps every step's autograd graph alive too.",
    "Internally the loop detaches the loss before handing it to `on_train_batch_end`.",
    'The trick is that `BasePredictionWriter` is invoked with `write_interval="batch"` after every predict step.',
    "Under the hood `LearningRateMonitor` reads the scheduler's last learning rate at each logging step.",
    "This is because Lightning no longer collects outputs for you.",
    "This happens because `torch.no_grad()` is active during validation, so no graph is built.",
    "The reason is that `validation_step_end` was removed in 2.0.",
    "That's expected: the trainer calls `on_validation_epoch_end` on every rank, not just rank zero.",
    (
        "You're seeing this since torchmetrics resets the metric state only when `compute` has been logged "
        "through `self.log`."
    ),
    "It fails because the `outputs` argument is no longer passed, so the signature mismatch raises a `TypeError`.",
    "This error comes from the trainer checking that `training_epoch_end` is not overridden.",
    "That's because `ModelCheckpoint` saves according to `every_n_epochs`, which defaults to one.",
    "Called when the train epoch ends.",
    "Called at the end of each validation batch with the outputs of `validation_step`.",
    "Called once per predict batch after `predict_step` returns.",
    "Called before the optimizer step, after gradients have been accumulated.",
    "Invoked by the trainer at the very end of `fit`.",
    "Runs on every process, including non-zero ranks.",
    "Receives the trainer and the LightningModule as its only arguments.",
    "Returns nothing; the return value is ignored by the trainer.",
    "Raises `RuntimeError` if called outside of a fit loop.",
    "Defaults to `None`, in which case no dataloader index is passed.",
    "Tip: `on_train_epoch_end` fires after validation has finished for that epoch.",
    "Caution: `self.log` with `on_step=True` in validation raises a `MisconfigurationException`.",
    "Note: the `outputs` argument was removed from all epoch-end hooks in 2.0.",
    "Warning: calling `self.all_gather` inside an epoch-end hook blocks until every rank reaches it.",
    "Important: the trainer always sets `model.eval()` before the validation loop starts.",
    "Tip: torchmetrics metrics are moved to the right device automatically when registered as attributes.",
    "Caution: storing tensors that require grad in a list retains their graphs and grows GPU memory.",
    "Note: `EarlyStopping` checks `stopping_threshold` before `patience`.",
    "Warning: in DDP, logging without `sync_dist=True` records only rank zero's value.",
    "Heads up: `on_batch_end` was removed in 1.8.",
    "Important: `LearningRateMonitor` raises an error if the trainer has no logger.",
    "Note that the manual optimization flag disables `optimizer_step` hooks on the module.",
    "The `on_train_batch_end` hook receives `outputs`, `batch` and `batch_idx`.",
    "Since 2.0 the `on_validation_batch_end` hook takes `dataloader_idx` with a default of zero.",
    "The trainer calls `on_validation_epoch_end` before `on_train_epoch_end`.",
    "When the loss is returned from `training_step`, Lightning calls `backward` on it for you.",
    "`self.log` reduces values with `torch.mean` unless `reduce_fx` is given.",
    "Gradient accumulation divides the loss by the number of accumulated batches.",
    "`ModelCheckpoint` keeps the top-k checkpoints according to the monitored metric.",
    "Resuming from a checkpoint restores the optimizer state, the loop counters and the callback states.",
    "The sanity check does not call `on_validation_epoch_end` of callbacks when `num_sanity_val_steps=0`.",
    "In 16-mixed precision a `GradScaler` scales the loss before backward.",
    "The predict loop does not run under `torch.no_grad`; it uses `torch.inference_mode`.",
    "Metric objects from torchmetrics accumulate state across `update` calls until `reset`.",
    "Calling `compute` on a torchmetrics metric syncs the state across processes.",
    "Appending `loss` to a list without detaching keeps the whole computational graph in memory.",
    "A detached tensor shares storage with the original but has no gradient history.",
    "`EarlyStopping` will stop training once the monitored quantity fails to improve for `patience` checks.",
    "The `LearningRateMonitor` logs one value per parameter group.",
    "`trainer.validate` runs the validation loop without any training.",
    "The trainer zeros gradients at the start of each optimization step.",
    "In 1.x, `validation_epoch_end` got a list of every `validation_step` output.",
    "In Lightning 2.0, the epoch-end hooks lost their `outputs` parameter.",
    "Lightning 1.5 added `on_train_batch_end` with the `unused` argument removed.",
    "Before 2.0, `test_epoch_end` received a list of lists when there were several dataloaders.",
    "Lightning 2.1 made `use_distributed_sampler` the replacement for `replace_sampler_ddp`.",
    "`replace_sampler_ddp` was renamed in 2.0.",
    "The v1.9 release deprecated `training_epoch_end` with a warning.",
    "Version 2.0 removed the `tpu_cores`, `gpus` and `ipus` Trainer arguments.",
    "Lightning raises `MisconfigurationException` when `monitor` names a metric that was never logged.",
    "An unknown key in `monitor` makes `ModelCheckpoint` raise at the end of the first validation.",
    "Returning `None` from `training_step` in automatic optimization skips the optimizer step for that batch.",
    "`self.log` raises a `ValueError` when the value is a tensor with more than one element.",
    "Overriding `optimizer_zero_grad` in manual optimization has no effect.",
    "`loss.backward()` frees the graph unless `retain_graph=True` is passed.",
    "The predict loop returns a list of batch predictions per dataloader.",
    "With multiple predict dataloaders, `predict_step` is given a `dataloader_idx`.",
    "With a single dataloader, `dataloader_idx` is not passed to `validation_step` at all.",
    "On rank 1 and higher, `trainer.is_global_zero` is `False`.",
    "Checkpoints are written only by the global zero process.",
    "The `DistributedSampler` pads the dataset so that every rank gets the same number of samples.",
    "`on_save_checkpoint` is called right before the checkpoint dictionary is written.",
    "`on_load_checkpoint` runs before the model weights are restored.",
    "The `last.ckpt` file is overwritten every time a checkpoint is saved.",
    (
        "When resuming mid-epoch, Lightning restarts from the beginning of that epoch unless the loop state "
        "is fault-tolerant."
    ),
    "`on_train_start` is called after the sanity check finishes.",
    "Setting `num_sanity_val_steps=-1` runs the full validation set before training.",
    "`on_epoch_end` used to run after both training and validation epochs.",
    "The `on_step` flag defaults to `True` in `training_step` and `False` in `validation_step`.",
    "Logged values with `on_epoch=True` are averaged weighted by batch size.",
    "A torchmetrics `Metric` passed to `self.log` is computed and reset by Lightning at epoch end.",
    "`MetricCollection` forwards the call to each of its metrics.",
    "`torchmetrics.Accuracy` requires a `task` argument since torchmetrics 0.11.",
    "`torch.cuda.empty_cache` does not free memory held by live tensors.",
    "Holding a Python reference to a CUDA tensor keeps its memory allocated.",
    "In bf16, each element takes two bytes.",
    "Mixed precision keeps the master weights in float32.",
    '`precision="16-true"` casts the model weights to half.',
    "Gradient clipping is applied after unscaling in mixed precision.",
    "The `on_before_optimizer_step` hook is called after gradients are unscaled.",
    "`on_after_backward` runs once per backward call, including accumulated ones.",
    "Callbacks' hooks run before the LightningModule's hook of the same name.",
    "Hmm, the LightningModule hook actually runs after the callback hooks, not before.",
    "Lightning's `Callback.on_train_epoch_end` takes `trainer` and `pl_module` only.",
    "`EarlyStopping` with `check_on_train_epoch_end=True` checks at the end of the training epoch instead.",
    "`ModelCheckpoint(save_top_k=-1)` keeps every checkpoint.",
    "`save_top_k=0` disables saving entirely.",
    "Interesting side effect: predict-epoch-end only sees predictions when they were returned.",
    "In practice the trainer calls `setup` on every rank, while `prepare_data` only runs on local rank zero.",
    'So basically `trainer.test` loads the best checkpoint when you pass `ckpt_path="best"`.',
    "Once validation is done, the model is put back into train mode by the trainer.",
    "After `fit` returns, `trainer.callback_metrics` holds the last logged values.",
]
#: What the same helper wrote as sentences a page must be allowed to say.
ORDINARY_FOURTEENTH = [
    "- Removed the outdated screenshot from this page.",
    "- Added a section on migrating your `validation_epoch_end` code.",
    "- Fixed a typo in the `on_train_epoch_end` example.",
    '- Renamed this page from "Epoch hooks" to "Migrating epoch-end hooks".',
    "- `lightning-migrate` now reports the line number of each `training_epoch_end` it finds.",
    "- Dropped the Python 3.7 notes from the install section of this guide.",
    "FWIW I'd move the `self.log` call into your `on_validation_epoch_end` override.",
    "+1, rename your list to `self.validation_step_outputs` so the diff is easier to review.",
    "Could you paste the output of `lightning-migrate check` for your project?",
    "Feel free to open a PR against this page if the example does not match your code.",
    "I'd suggest you keep the `dataloader_idx` argument in your signature while migrating.",
    "What we'll do next is move the body of your old `training_epoch_end` into `on_train_epoch_end`.",
    "The idea here is to keep your recipe working while you port one hook at a time.",
    "In this tutorial you will rewrite a small classifier that uses `validation_epoch_end`.",
    "Let's start by opening your `LightningModule` and finding every epoch-end hook.",
    "Here's the plan: first run the checker, then fix each finding, then rerun your tests.",
    "Next, we'll add a `ModelCheckpoint` to the callbacks list in your trainer.",
    "Under the heading below, you'll find the full diff for the example module.",
    "You can fix this by storing your outputs in a list attribute and clearing it yourself.",
    "To fix it, replace `outputs` in your signature with nothing and read from your own list.",
    "The easiest workaround is to call `self.log` with `sync_dist=True` in your code.",
    "Try passing `ckpt_path` to `trainer.fit` instead of the old trainer argument.",
    "If that still fails, run `lightning-migrate` with `--verbose` and post the output.",
    "Your `training_step` should return the loss as before.",
    "Your callback's `on_train_epoch_end` can read `self.outputs` from the module.",
    'In your recipe, `reduce_fx` is set to `"sum"` on purpose.',
    "Your `BasePredictionWriter` subclass writes one file per batch in this example.",
    "Pass `every_n_epochs=2` to your `ModelCheckpoint` if you want fewer files.",
    "Tip: run `lightning-migrate` before you upgrade, not after.",
    "Tip: keep your old branch around until the metrics match.",
    "Note: this page assumes you have already read the logging guide.",
    "Caution: do not copy the snippet below verbatim; adapt the metric names to your project.",
    'Warning: the example uses `precision="16-mixed"`, so adjust it if your hardware lacks fp16 support.',
    "Important: commit your changes before running the automatic fixer.",
    "Note: the code on this page is written for readability, not speed.",
    "See also the section on gradient accumulation below.",
    "Continue with the next page, which covers manual optimization.",
    "Back to the overview of epoch-end hooks.",
    "Jump to the DDP section if you only train on one node.",
    "The full example is in the appendix at the end of this guide.",
    "This section walks through migrating `test_epoch_end` in your module.",
    "This guide covers hooks, logging and checkpoints, in that order.",
    "The table below lists each old hook next to the snippet we recommend.",
    "The following example shows a module with two validation dataloaders.",
    "In the snippet above, we clear `self.validation_step_outputs` at the end of our hook.",
    "Our example stores predictions in `self.preds` and concatenates them in `on_predict_epoch_end`.",
    "The checker flags any method named `training_epoch_end` in your code.",
    "`lightning-migrate` exits with status 1 when it finds an unported hook.",
    "The `--fix` option of `lightning-migrate` rewrites the signature of your epoch-end hooks.",
    "`lightning-migrate` does not look at your callbacks unless you pass `--callbacks`.",
    "The checker prints one line per finding, with the file and the hook name.",
    "Run `lightning-migrate check src/` from the root of your repository.",
    "Install the checker with `pip install lightning-migrate`.",
    "Add `lightning-migrate` to your pre-commit hooks to catch regressions.",
    'Replace `Trainer(gpus=1)` with `Trainer(accelerator="gpu", devices=1)` in your script.',
    'Change `precision=16` to `precision="16-mixed"` in your config file.',
    "Set `use_distributed_sampler=False` if your code already builds its own sampler.",
    "Detach the loss before you append it to your list.",
    "Call `.reset()` on your torchmetrics metric at the end of your hook.",
    "Wrap your evaluation code in `torch.no_grad()` if you run it outside the trainer.",
    "Log your epoch metric with `on_epoch=True` in your `on_validation_epoch_end`.",
    "Move the `LearningRateMonitor` into the callbacks list of your trainer.",
    "Make sure your `EarlyStopping` monitors a key that your module logs.",
    "Check that your `ModelCheckpoint` `dirpath` exists on every node.",
    "We recommend keeping your step outputs small, for example by storing only the loss.",
    "We suggest you test the migration on a single GPU before moving to DDP.",
    "If you use manual optimization, keep your `optimizer.step()` calls where they are.",
    "Once you've done that, rerun your training and compare the logged values with your old run.",
    "Compare your new `on_train_batch_end` signature with the one in the example above.",
]


#: The later rounds' sets, each as a helper wrote it without reading the guard's lists: the behaviour sentences the
#: guard flags and the ordinary sentences it passes.
LATER_ROUNDS = {
    "eleventh": (TYPED_ELEVENTH, ORDINARY_ELEVENTH),
    "twelfth": (TYPED_TWELFTH, ORDINARY_TWELFTH),
    "thirteenth": (TYPED_THIRTEENTH, ORDINARY_THIRTEENTH),
    "fourteenth": (TYPED_FOURTEENTH, ORDINARY_FOURTEENTH),
}


@pytest.mark.parametrize("round_", LATER_ROUNDS)
def test_a_later_rounds_rules_flag_its_phrasings_and_pass_its_ordinary_sentences(round_):
    typed, ordinary = LATER_ROUNDS[round_]
    missed = [s for s in typed if not any(flagged(p) for p in sentences(s, heading=False))]
    wrong = [(s, reasons(p)) for s in ordinary for p in sentences(s, heading=False) if flagged(p)]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


def test_a_question_answered_by_the_next_sentence_is_read_as_a_statement():
    """A question is a topic, unless the next sentence answers it ("Yes.", "No, ...", "It is ..."): then the
    question states the answer, and is read as a statement; a question answered in other words stays a topic."""
    answered = "Does Lightning call on_train_epoch_end after ModelCheckpoint saves? Yes."
    assert sentences(answered, heading=False) == [
        "Does Lightning call on_train_epoch_end after ModelCheckpoint saves.",
        "Yes.",
    ]
    assert any(flagged(part) for part in sentences(answered, heading=False))
    asked = "What does the checker do? It reads your files."
    assert sentences(asked, heading=False) == ["It reads your files."]


if __name__ == "__main__":
    found = typed_sentences(Path(sys.argv[1]))
    print("\n".join(map(str, found)))
    print(f"{len(found)} typed sentences", file=sys.stderr)
    raise SystemExit(1 if found else 0)
