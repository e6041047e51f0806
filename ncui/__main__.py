"""``python -m ncui``: the same as the ``ncui`` command."""

from .cli import main

raise SystemExit(main())
