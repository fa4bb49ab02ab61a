#!/usr/bin/env bash
# The README's main command: installs and builds (scripts/setup.sh), then runs the embedded
# default model, models/tessera-tiny-en (a 10M-parameter Gemma 3 trained in this repository on
# public-domain and freely licensed English: see its README.md). The random-weight presets
# (`tessera make-model`) stay for benchmarks and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
MODEL=models/tessera-tiny-en
./build/tessera info --model "$MODEL"
# Streams the generated text to stdout and the metrics to stderr; --seed makes the sampled text
# the same on every run.
./build/tessera generate --model "$MODEL" --prompt "And it came to pass, when the king" \
  --max-tokens 48 --seed 42
# The same model with its matrices quantized to MLX 4-bit (group 64) at load: 3.6x fewer weight
# bytes per token (README, "Quantized models").
echo "--- 4-bit (--quantize 4):" >&2
./build/tessera generate --model "$MODEL" --prompt "And it came to pass, when the king" \
  --max-tokens 48 --seed 42 --quantize 4
