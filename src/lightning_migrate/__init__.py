"""``lightning-migrate``: the checker that finds PyTorch Lightning's removed epoch-end and batch hooks in user code.

- :mod:`lightning_migrate.checker`: the rules, the fixes and the command line;
- :mod:`lightning_migrate.registry`: every removed or changed epoch/batch hook shape, as data (no Lightning import);
- :mod:`lightning_migrate.hook_names`: the hook names recorded from Lightning, which the checker reads.

The guide's own tools (probes, release records, the scenario matrix, claims) are :mod:`migration_guide`, which runs
from the checkout and is never installed.
"""

__version__ = "0.1.0"
