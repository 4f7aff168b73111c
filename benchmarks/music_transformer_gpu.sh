#!/usr/bin/env bash
# The Music Transformer at the paper's size on one GPU, JAX backend, in one
# command of at most 10 minutes (benchmarks/music_transformer_jsb.py
# --preset paper: 5 layers, 512 hidden, 8 heads, relative attention up to
# 256 positions, windows of 512 tokens, batches of 32, all of one shape:
# one XLA compilation).
#
#   bash benchmarks/music_transformer_gpu.sh prepare   # here, once
#   bash benchmarks/music_transformer_gpu.sh run       # on the GPU machine
#
# `prepare` downloads the wheels the GPU image lacks (Keras and its two
# pure-Python needs, mido) into .whl/ and copies the chorales into .jsb/,
# both ignored by git (.git/info/exclude); the device tool carries them
# (carry: [".whl", ".jsb"]). `run` installs the wheels, trains for
# $MINUTES (default 7) and writes benchmarks/results/ files into $OUT (or
# runs/jsb_gpu) with the figure beside the paper's.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  prepare)
    grep -qx '/.whl/' .git/info/exclude || echo /.whl/ >> .git/info/exclude
    grep -qx '/.jsb/' .git/info/exclude || echo /.jsb/ >> .git/info/exclude
    mkdir -p .whl .jsb
    cp "${JSB_CHORALES:-../shared/data/jsb_chorales}"/*.json* .jsb/
    python3 -m pip download --no-deps --only-binary=:all: \
      --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d .whl \
      "keras==$(python3 -c 'import keras; print(keras.__version__)' 2>/dev/null || echo 3.15.1)" \
      namex optree mido
    ls -l .whl .jsb
    ;;
  run)
    python3 -m pip install -q --no-index --no-deps --no-compile \
      --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 KERAS_BACKEND=jax
    results="${OUT:-runs/jsb_gpu}"
    mkdir -p "$results"
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
    python3 benchmarks/music_transformer_jsb.py --data .jsb --preset paper \
      --precision auto --minutes "${MINUTES:-7}" --eval-every 1000 \
      --variants relative_sinusoid_voices --no-samples \
      --save-dir /tmp/jsb_models --results-dir "$results" \
      --results-name music_transformer_jsb_gpu
    ;;
  *)
    echo "usage: bash benchmarks/music_transformer_gpu.sh prepare|run" >&2
    exit 2
    ;;
esac
