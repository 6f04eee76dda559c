"""``python -m dmlops``: the same as the ``dmlops`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
