#!/usr/bin/env bash
# The prepared GPU run (benchmarks/gpu/run.py): the Universal Transformer
# on bAbI 10k, the Music Transformer at the paper's size on JSB and the
# recurrent attention model, on one GPU with JAX, in at most
# $MINUTES (default 7) minutes of wall time.
#
#   bash benchmarks/gpu/run.sh prepare   # here, once (network)
#   bash benchmarks/gpu/run.sh run       # on the GPU machine (no network)
#
# `prepare` downloads the wheels the GPU image lacks (Keras and its two
# missing needs, namex and optree) into .whl/ and copies the data (bAbI
# 10k, the chorales, mnist10k) into .gpudata/, both ignored by git
# (.git/info/exclude); copy the checkout with them to the GPU machine and
# run "bash benchmarks/gpu/run.sh run" there. `run` installs
# the wheels and writes the results files, the log and the music model's
# pieces into $OUT (or runs/gpu).
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
  prepare)
    for folder in /.whl/ /.gpudata/; do
      grep -qx "$folder" .git/info/exclude 2>/dev/null \
        || echo "$folder" >> .git/info/exclude
    done
    data="${KERAS_ATTENTION_DATA:-../shared/data}"
    rm -rf .gpudata && mkdir -p .gpudata/babi .whl
    cp -r "$data/babi/en-10k" .gpudata/babi/
    cp -r "$data/jsb_chorales" "$data/mnist10k" .gpudata/
    python3 -m pip download -q --no-deps --only-binary=:all: \
      --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d .whl \
      "keras==$(python3 -c 'import keras; print(keras.__version__)' \
                2>/dev/null || echo 3.15.1)" namex optree
    du -sh .whl .gpudata
    ;;
  run)
    if [ -d .whl ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile \
        --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
      export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    fi
    nvidia-smi --query-gpu=name,memory.total,driver_version \
      --format=csv,noheader || true
    shift
    exec python3 benchmarks/gpu/run.py --out "${OUT:-runs/gpu}" \
      --minutes "${MINUTES:-7}" "$@"
    ;;
  *)
    echo "usage: bash benchmarks/gpu/run.sh prepare|run [run.py options]" >&2
    exit 2
    ;;
esac
