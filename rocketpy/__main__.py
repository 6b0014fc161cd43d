"""``python -m rocketpy``: the ``rocketpy`` command."""

import sys

from .cli import main

sys.exit(main())
