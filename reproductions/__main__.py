"""`python -m reproductions`: see `reproductions.runner`."""

import sys

from reproductions.runner import main

sys.exit(main())
