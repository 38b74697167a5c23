"""``python -m cqels_endpoint.cli``: the ``cqels`` command."""

import sys

from cqels_endpoint.cli import main

sys.exit(main())
