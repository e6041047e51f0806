"""``python -m ncui`` is ``ncui`` (the console script)."""

from .cli import main

raise SystemExit(main())
