"""What every process that runs Lightning for the build starts from: imported once, in the forkserver.

The build's forkserver (see ``example_workers``) imports this module before it forks anything, so the
sphinx-gallery workers and the probe process all begin with torch, Lightning, torchmetrics and matplotlib
already imported -- about 4.5 s of CPU per process on the project's machine, paid once per build instead of
once per process -- and with nothing run yet: no example has touched Lightning's state when a child is forked.

Importing it also:

- selects matplotlib's Agg backend (what sphinx-gallery uses for a build) before pyplot is imported;
- ignores the one warning that says nothing about this guide -- Lightning 2.6 calls a ``torch.utils._pytree``
  API that torch 2.13 deprecates, on every fit -- which would otherwise appear in the output of every example;
- collects once and moves every object that exists then into the permanent generation (``gc.freeze``,
  https://docs.python.org/3/library/gc.html#gc.freeze): sphinx-gallery calls ``gc.collect()`` before each
  example, and without the freeze each of those collections walks all of torch and Lightning again (a quarter
  of a second per example, measured with cProfile), finding nothing. An example's own garbage is still
  collected. Frozen objects are also never written to by the collector, so forked children keep sharing
  their memory pages with the forkserver.
"""

from __future__ import annotations

import gc
import warnings

import matplotlib

matplotlib.use("agg")
warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning)

import lightning.pytorch  # noqa: E402, F401 - imported by every example and by the probes
import matplotlib.pyplot  # noqa: E402, F401
import sphinx_gallery.gen_rst  # noqa: E402, F401 - what each sphinx-gallery worker runs
import torch  # noqa: E402, F401
import torchmetrics  # noqa: E402, F401

gc.collect()
gc.freeze()
