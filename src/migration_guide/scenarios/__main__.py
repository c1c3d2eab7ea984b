"""``python -m migration_guide.scenarios``: run the scenario matrix (see the package docstring)."""

import sys

from . import main

sys.exit(main())
