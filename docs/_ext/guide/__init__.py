"""The guide's Sphinx extensions: pages that state what Lightning does, produced by running it.

Each extension here renders a Lightning fact from a run, never from typed text: the probe records of the
installed Lightning (``probe_records``), the reference table drawn from them, the symptom index drawn from them and
from the recorded releases, with the search that finds a pasted error's fix (``symptom_index``,
``symptom_search``), the recorded releases (``compat_table``), the checker's rule pages run through the checker
(``checker_rules``), the scenario matrix run over every recipe page (``scenario_matrix``), the Lightning release
each gallery page was produced with (``gallery_version``), the releases that deprecated and removed each
pattern, from the registry (``changelog_roles``), every sentence about Lightning rendered from ``data/claims.toml`` and
checked against its evidence (``claims``), and the declared warnings checked against the runs that emit them
(``warning_witnesses``). How the site is built (execution, warnings, addresses, the search
index, notebooks) is in ``build_mechanics``.
"""
