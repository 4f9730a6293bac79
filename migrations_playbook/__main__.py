"""`python -m migrations_playbook` is the `playbook` CLI."""

import sys

from migrations_playbook.cli import main

sys.exit(main())
