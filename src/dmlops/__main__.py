"""``python -m dmlops``: the same as the ``dmlops`` command."""

import sys

from .cli import main

sys.exit(main())
