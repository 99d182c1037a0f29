"""Run the command-line tool: python -m mindconverter."""

import sys

from .cli import main

sys.exit(main())
