"""`python -m keras_attention ...` is the `keras-attention` command."""

import sys

from keras_attention.cli import main

if __name__ == "__main__":
    sys.exit(main())
