"""`python -m annotator` runs the qrelkit CLI."""

import sys

from annotator.cli import main

sys.exit(main())
