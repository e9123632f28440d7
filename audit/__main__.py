"""``python -m audit``: the same as the ``audit`` console script."""

from audit.cli import main

raise SystemExit(main())
