"""`python -m server`, as the `pulsard` command.

The cyclic collector is off while the modules load: they make some hundred thousand objects
that all stay, so its passes over them (about 13 ms of a start) find nothing. cli.main turns
it back on; a standalone broker once it serves, after freezing what start-up made.
"""

import gc

gc.disable()

from .cli import main  # noqa: E402

main()
