#!/usr/bin/env bash
# gemma3-1b GGUFs (random bf16 weights, seed 0 -> BF16 GGUF -> llama-quantize --pure Q4_0 / Q8_0):
# tessera_gpu_bench and llama.cpp's llama-bench (built here with CUDA) on the same files
# (bench/RESULTS.md "GGUF files against llama.cpp CUDA"). Runs on the GPU machine from the
# repository root, from a carried folder .dev/gB holding (built on the dev machine; the whole carry
# must stay under the device's 64 MiB, so each is stripped and xz-compressed):
#   bench.txz      tessera_gpu_bench (stripped), lib/ (its non-CUDA shared libraries: ldd),
#                  scripts/bench/hf_to_gguf_gemma3.py, this folder's mk_model.py and mk_tok.py, and
#                  g1b_config.json (`tessera make-model --preset gemma3-1b`'s config.json)
#   llama-py.tgz   llama.cpp's gguf-py/gguf (as gguf-py/gguf) and a CPU llama-quantize
#   llama-src.txz  llama.cpp's CMakeLists.txt cmake ggml src include common tools vendor (without
#                  tools/ui and the other GPU backends' folders)
# Usage: bash .dev/gB/run.sh   (through the device tool; results in $OUT)
set -u
R=$PWD; D=$R/.dev/gB; W=/tmp/gb; mkdir -p $W; cd $W
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
tar xJf $D/bench.txz; tar xzf $D/llama-py.tgz; mkdir -p src && tar xJf $D/llama-src.txz -C src
( cd src && cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
   -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_UI=OFF \
   -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_APP=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
   -DBUILD_SHARED_LIBS=OFF > $OUT/llama_cfg.log 2>&1 && nice -n 5 ninja -C b -j 13 llama-bench > $OUT/llama_build.log 2>&1; echo "llama build rc=$?" >> $OUT/llama_build.log ) &
BUILD=$!
export LD_LIBRARY_PATH=$W/lib
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in os.listdir(p)))' 2>/dev/null); do
  [ -e "$d/libcublasLt.so.13" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d" && break
done
{ date -u +%FT%TZ; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem --format=csv; nproc; } > $OUT/env.log 2>&1
M=/tmp/gm; mkdir -p $M
el model; python3 mk_model.py g1b_config.json $M/g1b > $OUT/models.log 2>&1; python3 mk_tok.py $M/tok.json
PYTHONPATH=$W/gguf-py python3 hf_to_gguf_gemma3.py --model $M/g1b --out $M/g1b-bf16.gguf --tokenizer $M/tok.json >> $OUT/models.log 2>&1
for q in Q4_0 Q8_0; do ./llama-quantize --pure $M/g1b-bf16.gguf $M/g1b-$q.gguf $q >> $OUT/models.log 2>&1; done
ls -la $M | tee -a $OUT/models.log; el models done; tail -3 $OUT/models.log
for f in Q4_0 Q8_0 bf16; do
  timeout 100 ./tessera_gpu_bench --model $M/g1b-$f.gguf --only ${ONLY:-decode_b1,decode_b128,prefill_4096} \
    --no-ceilings --reps 3 > $OUT/tessera_$f.log 2>&1
  echo "tessera $f rc=$?"; grep -v '^{' $OUT/tessera_$f.log | grep -iE "decode|prefill|loaded|error|fail" | head -8
done
el wait build; wait $BUILD; tail -2 $OUT/llama_build.log
LB=src/b/bin/llama-bench
if [ -x $LB ]; then
  for f in Q4_0 Q8_0 bf16; do
    el llama $f; timeout 80 $LB -m $M/g1b-$f.gguf -p 4096 -n 128 -ngl 99 -fa 1 -r 3 -o md > $OUT/llama_$f.log 2>&1
    grep -E "^\|" $OUT/llama_$f.log
  done
fi
el end
