"""The migration guide's own tools, run from the checkout (``PYTHONPATH=src``, as the noxfile and the build run
them) and never installed with ``lightning-migrate``: the probes (:mod:`.probes`), the release records
(:mod:`.compat`), the scenario matrix (:mod:`.scenarios`), the claims' cells (:mod:`.claim_cells`), the checker's
corpus measure (:mod:`.corpus`) and the record of proven rewrites (:mod:`.record_proven`). They import the installed
package (:mod:`lightning_migrate`); it never imports them. Every path into the checkout is made in
:mod:`.source_tree`.
"""
