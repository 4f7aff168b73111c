"""Install keras-attention: `pip install -e ".[dev]"` (the Makefile does it)."""

import pathlib
import re

from setuptools import find_packages
from setuptools import setup

HERE = pathlib.Path(__file__).parent
VERSION = re.search(
    r'__version__ = "([^"]+)"',
    (HERE / "keras_attention" / "version.py").read_text(),
).group(1)

setup(
    name="keras-attention",
    version=VERSION,
    description=(
        "Attention layers for Keras 3, the models built from them, and the "
        "path from a trained translator to a TF Serving endpoint."
    ),
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["keras_attention", "keras_attention.*"]),
    install_requires=[
        "tensorflow~=2.20.0",
        "tensorflow-text~=2.20.0",
        "keras>=3.10",
        "keras-hub>=0.32",
        "sentencepiece>=0.2",
        "sacrebleu>=2.4",
        # keras_attention.visualize: attention heatmaps (PNG, SVG, PDF).
        "matplotlib>=3.7",
        # TF Serving's protos: the export writes its warm-up requests
        # (PredictionLogs) into every SavedModel; the server and the
        # grpc:// client speak its messages.
        "tensorflow-serving-api~=2.20.0",
        # TF Serving's gRPC API (server and client); TensorFlow needs it too.
        "grpcio>=1.60",
        # The 8x8 digits that ship with scikit-learn: the Image Transformer
        # and the Show-Attend-Tell captioner train on them offline.
        "scikit-learn>=1.3",
    ],
    entry_points={
        "console_scripts": ["keras-attention=keras_attention.cli:main"],
    },
    extras_require={
        "dev": [
            "pytest>=8",
            "pytest-xdist>=3",
            "hypothesis>=6.100",
            "ruff>=0.6",
            "pyyaml>=6",  # tests/deployment reads the Kubernetes manifests
            # `make test-jax`: the layers and ops run on the JAX backend too.
            "jax[cpu]>=0.4.30",
            # tests/visualize: the HTML viewer in headless Chromium (Debian's
            # chromium and chromium-driver; .ci/run installs them).
            "selenium>=4.10",
        ],
        # `make test-torch`: the layers and ops on the PyTorch backend.
        "torch": ["torch>=2.5"],
        # Beam search (sequence_beam_search with the GNMT length penalty).
        "official": ["tf-models-official==2.20.0"],
        # The TF Serving-compatible server's REST API (aiohttp); its gRPC
        # API needs only the base dependencies.
        "serving": [
            "aiohttp>=3.10",
        ],
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "Intended Audience :: Science/Research",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
