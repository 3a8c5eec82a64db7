# The device calls' shared steps (docs/bench/llm-v*/run*.sh source it from v46's run2.sh on;
# the earlier scripts repeat them, as each ran). Carry [".gl", ".devbin"]: .gl holds the
# Vulkan loader's debs, .devbin the xz'd binaries, the skeletons (/work/shared/tools/
# gguf-skeleton), gguf_rebuild.py, llama-src.tar.xz and build_llama_cpp.sh
# (/work/shared/tools/h200-bench). Results go under $OUT/r and come back as $OUT/r.tgz.
#
#   . docs/bench/device.sh
#   device_setup "xtask-b kvc" "e l s g" llama   # binaries, models (e 8B, l 1B, s SmolLM2,
#                                                # g Gemma 3), llama.cpp built in the background
#   par e b 32,64 X=1                            # bench-llm at these streams, env after
#   device_finish

T0=$(date +%s)
R=$OUT/r
el() { echo $(($(date +%s) - T0)); }
save() { (cd "$OUT" && tar czf r.tgz r); }

# The Vulkan loader, the binaries named in $1 (from .devbin/NAME.xz), the models named in $2
# rebuilt from their skeletons in the background (target/m/NAME.gguf, kept on a warm
# machine), llama.cpp's CUDA backend built in the background when $3 is `llama` (target/lc),
# and the SM and memory clocks logged every second.
device_setup() {
    mkdir -p "$R" target/m
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export GPUPORT_REQUIRE_GPU=1
    if [ "${3:-}" = llama ] && [ ! -e target/lc.done ]; then
        (nice -n 10 bash .devbin/build_llama_cpp.sh "$PWD/.devbin/llama-src.tar.xz" "$PWD/target/lc" \
            >"$R/llama-build.txt" 2>&1; touch target/lc.done) &
    fi
    for b in $1; do xz -dkf ".devbin/$b.xz"; chmod +x ".devbin/$b"; done
    local skel=(e:llama8b-q4_k_m l:llama1b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m)
    (cd .devbin && for m in $2; do
        for s in "${skel[@]}"; do
            [ "${s%%:*}" = "$m" ] || continue
            [ -e "../target/m/$m.done" ] ||
                nice python3 gguf_rebuild.py "${s#*:}.skel" "../target/m/$m.gguf" >/dev/null
            touch "../target/m/$m.done"
        done
    done) &
    (while true; do
        nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >>"$R/clocks.txt"
        sleep 1
    done) &
    CLOCKS=$!
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/gpu.txt"
}

wait_model() { while [ ! -e "target/m/$1.done" ]; do sleep 1; done; }

# bench-llm of model $1 with binary xtask-$2 at streams $3 (env assignments $4, e.g. X=1),
# results named $1-par-$2$5: issue 15's measurement, S_TG printed.
par() {
    wait_model "$1"
    local out="$R/$1-par-$2${5:-}"
    timeout 80 env $4 "./.devbin/xtask-$2" bench-llm "target/m/$1.gguf" --steps 8 --parallel "$3" \
        --prompt-tokens 128 --gen-tokens 128 --json "$out.json" >"$out.txt" 2>&1
    echo "$1 $3 $2${5:-} rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' "$out.txt" | paste -sd' ')" \
        "$(grep -o 'ids [0-9a-f]*' "$out.txt" | paste -sd' ')"
    save
}

# llama-batched-bench on model $1 beside `par` (flash attention on, the issue's streams).
bb() {
    [ -x target/lc/b/bin/llama-batched-bench ] || return
    wait_model "$1"
    timeout 50 target/lc/b/bin/llama-batched-bench -m "target/m/$1.gguf" -ngl 99 -fa on -c 20480 \
        -b 2048 -ub 512 -npp 128 -ntg 128 -npl 1,8,32,64 --output-format jsonl \
        >"$R/$1-bb.jsonl" 2>"$R/$1-bb.err"
    echo "bb $1 rc=$? at $(el) s"
    grep -o '"pl": [0-9]*\|"speed_tg": [0-9.]*' "$R/$1-bb.jsonl" | tr '\n' ' '
    echo
    save
}

# Issue 13's lines for model $1 with binary xtask-$2, round $3: bench-llm's 512-token prompt
# and 128-token decode (`pre`), and llama-bench's beside it (`lb`, flash attention on).
pre() {
    wait_model "$1"
    local out="$R/$1-pre-$2$3"
    timeout 60 "./.devbin/xtask-$2" bench-llm "target/m/$1.gguf" --steps 8 --prompt-tokens 512 \
        --gen-tokens 128 --json "$out.json" >"$out.txt" 2>&1
    echo "$1 pre $2$3 rc=$? at $(el) s: $(grep -E '^prefill|^ +8 ' "$out.txt" | paste -sd' ')"
}

lb() {
    [ -x target/lc/b/bin/llama-bench ] || return
    timeout 60 target/lc/b/bin/llama-bench -m "target/m/$1.gguf" -ngl 99 -p 512 -n 128 -fa 1 -r 3 \
        -o jsonl >"$R/$1-lb$2.jsonl" 2>"$R/$1-lb$2.err"
    echo "lb $1 $2 rc=$? at $(el) s: $(grep -o '"n_prompt": [0-9]*\|"n_gen": [0-9]*\|"avg_ts": [0-9.]*' \
        "$R/$1-lb$2.jsonl" | paste -sd' ')"
}

# Issue 13's decode at depth with binary xtask-$1: Gemma 3 after prompts of 4,096 and 16,384
# tokens, and llama-bench's decode at depth 0 / 4,096 / 16,384 beside it.
depth() {
    wait_model g
    for d in 4096 16384; do
        timeout 60 "./.devbin/xtask-$1" bench-llm target/m/g.gguf --steps 8 --prompt-tokens $d \
            --gen-tokens 128 --json "$R/g-depth$d.json" >"$R/g-depth$d.txt" 2>&1
        echo "g depth $d rc=$? at $(el) s: $(grep -E '^prefill|^ +8 ' "$R/g-depth$d.txt" | paste -sd' ')"
    done
    [ -x target/lc/b/bin/llama-bench ] && timeout 80 target/lc/b/bin/llama-bench -m target/m/g.gguf \
        -ngl 99 -p 0 -n 128 -d 0,4096,16384 -fa 1 -r 3 -o jsonl >"$R/g-lb-depth.jsonl" 2>"$R/g-lb-depth.err"
    echo "lb depth rc=$? at $(el) s: $(grep -o '"n_depth": [0-9]*\|"avg_ts": [0-9.]*' "$R/g-lb-depth.jsonl" |
        paste -sd' ')"
    save
}

# Waits (until $1 seconds into the call) for the llama.cpp build.
wait_llama() {
    while [ ! -e target/lc.done ] && [ "$(el)" -lt "$1" ]; do sleep 2; done
    echo "llama built: $(ls target/lc.done 2>/dev/null) at $(el) s"
    tail -1 "$R/llama-build.txt" 2>/dev/null
    save
}

# The Llama shapes' GEMMs at $1 rows with binary xtask-$2 (env $3), on the engine's path and
# split 1-4 ways: shape/splits:µs.
gm() {
    timeout 60 env $3 "./.devbin/xtask-$2" bench --gemm-only --tuned --shapes llama --gemm-tokens "$1" \
        --splits 1,2,3,4 --json "$R/g$1-$2.json" >"$R/g$1-$2.txt" 2>&1
    echo "g$1 $2 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' "$R/g$1-$2.txt" | grep -v best |
        awk '{s=""; for(i=1;i<=NF;i++) if($i ~ /^splits=/) s=substr($i,8); sub("llama","",$2); printf "%s/%s:%s ", $2, s, $10}')"
    save
}

# The Llama shapes' GEMMs at $1 rows with binary xtask-$2 (env $3), results tagged $4, on the
# engine's path and split as $5 says (default 1,2,4,8): shape/splits:µs.
gt() {
    timeout 45 env $3 "./.devbin/xtask-$2" bench --gemm-only --tuned --shapes llama --gemm-tokens "$1" \
        --splits "${5:-1,2,4,8}" --json "$R/g$1-$4.json" >"$R/g$1-$4.txt" 2>&1
    echo "g$1 $4 rc=$? at $(el) s: $(grep -E '^gemm .*tokens.*coop' "$R/g$1-$4.txt" |
        awk '{sub("llama","",$2); s=""; for(i=1;i<=NF;i++) if($i ~ /^splits=/) s=substr($i,8); printf "%s/%s:%s ", $2, s, $10}')"
    save
}

# The matrices $5 (`bench --matrix` TYPE:ROWSxCOLS list; default: the 8B gate|up tile's rows
# over grids of 66, 132, 198 and 264 workgroups of 128 rows) at $1 rows with binary xtask-$2
# (env $3), one split, results tagged $4: matrix:µs.
gw() {
    local m=${5:-q4_K:8448x4096,q4_K:16896x4096,q4_K:25344x4096,q4_K:33792x4096}
    timeout 60 env $3 "./.devbin/xtask-$2" bench --gemm-only --tuned --shapes matrix --matrix "$m" \
        --gemm-tokens "$1" --splits 1 --json "$R/w$1-$4.json" >"$R/w$1-$4.txt" 2>&1
    echo "w$1 $4 rc=$? at $(el) s: $(grep -E '^gemm matrix.*splits=1 ' "$R/w$1-$4.txt" |
        awk '{printf "%s:%s ", $2, $10}')"
    save
}

# The $2 best variants (default 5) of the sweep JSON $1: tunables and ratio, one line.
top_variants() {
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for r in sorted(d['results'], key=lambda r: -r['ratio'])[:int(sys.argv[2])]:
    print(r['tunables'].replace(' ', ','), round(r['ratio'], 3), end='; ')
" "$1" "${2:-5}"
}

# Q6_K's int8 GEMV at 256 MB through --tuned with binary xtask-$1 (env $3), results tagged
# $1$2: type, ratio of the ceiling, tunables.
q6() {
    timeout 40 env $3 "./.devbin/xtask-$1" bench --shapes large --tuned --types q6_K --kernel gemv_q8 \
        --json "$R/q6-$1$2.json" >"$R/q6-$1$2.txt" 2>&1
    echo "q6 $1$2 rc=$? at $(el) s: $(grep -E '^large' "$R/q6-$1$2.txt" | awk '{print $3, $8, $10}' | paste -sd' ')"
    save
}

# Every type's int8 GEMV at 256 MB through --tuned with binary xtask-$1: type and ratio.
tuned_q8() {
    timeout 60 "./.devbin/xtask-$1" bench --shapes large --tuned --kernel gemv_q8 --json "$R/t-$1.json" \
        >"$R/t-$1.txt" 2>&1
    echo "tuned $1 rc=$? at $(el) s: $(grep -E '^large' "$R/t-$1.txt" | awk '{print $3, $8}' | paste -sd' ')"
    save
}

# A sweep of Q6_K's 32-lane int8 GEMV variants at 256 MB with binary xtask-$1: the six best.
q6_sweep() {
    GPUPORT_BENCH_HOLD_MS=100 timeout 60 "./.devbin/xtask-$1" bench --shapes large --types q6_K \
        --kernel gemv_q8 --wg 128,256 --lanes 32 --json "$R/sw-q6-$1.json" >"$R/sw-q6-$1.txt" 2>&1
    echo "sweep q6 $1 rc=$? at $(el) s: $(top_variants "$R/sw-q6-$1.json" 6)"
    save
}

# Stops the clock log, counts its samples by SM clock, packs the results.
device_finish() {
    kill "$CLOCKS"
    awk -F, '{print $2}' "$R/clocks.txt" | sort | uniq -c
    save
    rm -rf "$R"
}
