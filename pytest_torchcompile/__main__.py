"""`python -m pytest_torchcompile diff OLD NEW` (see `diff_command`)."""

import sys

from .diff_command import main

sys.exit(main())
