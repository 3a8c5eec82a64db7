#!/usr/bin/env bash
# H200 call (v25), the device command as run (on the machine of the v24 call, still warm: its
# llama.cpp build in /tmp/lc and the 1B/8B files were reused): 7b37b79's xtask ("norm2") and
# llama-bench (flash attention on) interleaved on the four layouts, two rounds.
set -u; R=$OUT/r; mkdir -p $R; T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
ls /tmp/lc/b/bin/llama-bench /tmp/*.gguf; B=0
if [ ! -x /tmp/lc/b/bin/llama-bench ]; then (bash .devbin/build_llama_cpp.sh $PWD/.devbin/llama-src.tar.xz /tmp/lc > $R/lb.txt 2>&1) & B=$!; fi
xz -dk .devbin/xtask-norm2.xz; chmod +x .devbin/xtask-norm2
(cd .devbin && for m in l:llama1b-q4_k_m e:llama8b-q4_k_m s:smollm2-135m-q4_1 g:gemma-3-270m-q4_k_m; do [ -s /tmp/${m%%:*}.gguf ] || python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; done)
echo "ready at $(el) s"
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) & CLK=$!
ours() { timeout 80 ./.devbin/xtask-norm2 bench-llm /tmp/$1.gguf --steps 8 --prompt-tokens 512 --gen-tokens 128 --json $R/$1-ours-$2.json > $R/$1-ours-$2.txt 2>&1; echo "ours $1 $2 rc=$? at $(el) s: $(sed -n 2p $R/$1-ours-$2.txt) | $(sed -n 5p $R/$1-ours-$2.txt)"; }
theirs() { timeout 80 /tmp/lc/b/bin/llama-bench -m /tmp/$1.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o jsonl > $R/$1-llama-$2.jsonl 2>$R/$1-llama-$2.err; echo "llama $1 $2 rc=$? at $(el) s: $(grep -o '"avg_ts": [0-9.]*' $R/$1-llama-$2.jsonl | tr '\n' ' ')"; }
for m in e l s g; do ours $m 1; done
[ $B != 0 ] && while kill -0 $B 2>/dev/null && [ $(el) -lt 300 ]; do sleep 2; done
for m in e l s g; do theirs $m 1; done
for m in e l s g; do [ $(el) -lt 330 ] || break; ours $m 2; theirs $m 2; done
kill $CLK; awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
