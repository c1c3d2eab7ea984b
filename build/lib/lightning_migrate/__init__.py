"""Tools of the Lightning epoch-end migration guide.

- :mod:`lightning_migrate.registry`: every removed or changed epoch/batch hook shape, as data (no Lightning import);
- :mod:`lightning_migrate.probes`: runs each registry pattern on the installed Lightning and records what happens.
"""

__version__ = "0.1.0"
