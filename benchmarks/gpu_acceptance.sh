#!/usr/bin/env bash
# arraybench's GPU acceptance (benchmarks/gpu_acceptance.py; docs/gpu.md says when and how).
#   bash benchmarks/gpu_acceptance.sh [--out DIR] [--wheels DIR]
# PYTHON: the interpreter that has torch, jax and cupy (default python3); the checkout needs no
# install: the script puts it on PYTHONPATH, and --wheels DIR supplies, offline, the pure-Python
# packages that interpreter lacks (pip install --no-index --find-links DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" benchmarks/gpu_acceptance.py "$@"
