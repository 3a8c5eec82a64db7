#!/usr/bin/env bash
# v48 call 2 (same warm machine as run1.sh): end to end, the staged-input tile a subgroup
# (x, GPUPORT_COOP_SG=1) against the workgroup tiles (GPUPORT_COOP_SG=0) at 32 / 64 streams;
# then llama.cpp's CUDA backend on the 8B at 32 streams under Nsight Systems (where the device
# has it), for its kernels' times a step beside ours (8-token prompts: the decode steps
# are nearly all of the kernels' time).
set -u
. docs/bench/device.sh
device_setup "xtask-x" "e l" llama
for m in l e; do
    par $m x 32,64 GPUPORT_COOP_SG=0 -wg
    par $m x 32,64 GPUPORT_COOP_SG=1 -xs1
done
wait_llama 420
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
if [ -n "$NSYS" ] && [ -x target/lc/b/bin/llama-batched-bench ]; then
    timeout 120 "$NSYS" profile -t cuda -o "$R/lc-e32" -f true target/lc/b/bin/llama-batched-bench \
        -m target/m/e.gguf -ngl 99 -fa on -c 20480 -b 2048 -ub 512 -npp 8 -ntg 128 -npl 32 \
        >"$R/lc-e32.txt" 2>&1
    echo "nsys rc=$? at $(el) s"
    timeout 60 "$NSYS" stats --report cuda_gpu_kern_sum --format csv "$R/lc-e32.nsys-rep" \
        >"$R/lc-e32-kern.csv" 2>"$R/lc-e32-kern.err"
    head -25 "$R/lc-e32-kern.csv" | cut -c1-200
    rm -f "$R/lc-e32.nsys-rep" "$R/lc-e32.sqlite"
fi
device_finish
