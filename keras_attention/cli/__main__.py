"""`python -m keras_attention.cli ...` is the `keras-attention` command too."""

import sys

from keras_attention.cli import main

if __name__ == "__main__":
    sys.exit(main())
