"""``python -m agent.cli``: the same command as the ``deepreflect`` script."""

import sys

from agent.cli import main

sys.exit(main())
