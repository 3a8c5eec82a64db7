#!/usr/bin/env bash
# The next device call (written at the end of v39; a fresh machine, under 600 s). First the
# row-table attention's A/Bs (no llama.cpp needed): `rowk row_table` (the subgroup pass against
# the CPU on NVIDIA's 32-lane subgroups), `bench --other-kernels` with the block pass (v39's
# default), the subgroup pass (GPUPORT_ATTN_ROWS_SG=1) and the block pass without naga's loop
# bounding (GPUPORT_UNBOUNDED_LOOPS=attn_prefill); then 64 and 32 streams of the 8B and 1B
# with the blocks and on subgroups, interleaved. run2.sh (llama.cpp beside issue 15's table)
# follows on a call of its own: v39 showed its build cannot share the cores with our runs.
# Build and carry: `cargo build --release -p gpuport-xtask; cargo test --release -p
# gpuport-runtime --test row_kernels --test kernels_vs_cpu --no-run`, stripped into .devbin
# (xtask-t, kvc, rowk) and xz'd (the binaries in .devbin at the end of v39 are b3ec2e1's,
# older than the subgroup pass: rebuild); .gl holds the Vulkan loader debs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dk .devbin/xtask-t.xz .devbin/rowk.xz; chmod +x .devbin/xtask-t .devbin/rowk
X=./.devbin/xtask-t
(cd .devbin && for m in e:llama8b-q4_k_m l:llama1b-q4_k_m; do
  python3 gguf_rebuild.py ${m#*:}.skel /tmp/${m%%:*}.gguf >/dev/null; touch /tmp/${m%%:*}.done; done) &
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
export GPUPORT_REQUIRE_GPU=1
save() { (cd $OUT && tar czf r.tgz r); }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 ./.devbin/rowk row_table > $R/rowk-row-table.txt 2>&1; echo "rowk row_table rc=$? at $(el) s"; grep "test result\|panicked" $R/rowk-row-table.txt | head -3
timeout 40 $X kernel-stats --filter attn_rows_sg > $R/ks-attn_rows_sg.txt 2>&1; grep -o "^[a-z_]*\.[^ ]*\|Register Count=[0-9]*" $R/ks-attn_rows_sg.txt | paste -sd' ' | sed 's/ \([a-z_]*\.\)/\n\1/g' | head -12
save
oth() { timeout 40 env $2 $X bench --other-kernels --json $R/other-$1.json > $R/other-$1.txt 2>&1; echo "other $1 rc=$? at $(el) s"; grep "attention.*f16" $R/other-$1.txt; save; }
for i in 1 2; do oth blocks$i ""; oth sg$i GPUPORT_ATTN_ROWS_SG=1; oth unbounded$i GPUPORT_UNBOUNDED_LOOPS=attn_prefill,attn_decode; done
par() { while [ ! -e /tmp/$1.done ]; do sleep 1; done; timeout 45 env $4 $X bench-llm /tmp/$1.gguf --steps 8 --parallel $3 --prompt-tokens 128 --gen-tokens 128 --json $R/$1-$3-$2.json > $R/$1-$3-$2.txt 2>&1; echo "$1 $3 $2 rc=$? at $(el) s: $(grep -o 'S_TG *[0-9.]* tok/s' $R/$1-$3-$2.txt | paste -sd' ')"; save; }
for i in 1 2; do
  par e blocks$i 32,64 ""; par e sg$i 32,64 GPUPORT_ATTN_ROWS_SG=1
  par l blocks$i 32,64 ""; par l sg$i 32,64 GPUPORT_ATTN_ROWS_SG=1
done
kill $CLK
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
save; rm -rf $R
