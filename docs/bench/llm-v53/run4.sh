#!/usr/bin/env bash
# v53 call 4 (call 3's machine, warm): a second round of the row-table split target, 1,024
# (the default before) against 256 (and 512 on SmolLM2), interleaved.
set -u
. docs/bench/device.sh
device_setup "xtask-n" "e l s" ""
for t in 1024 256 512; do [ "$(el)" -lt 200 ] && par s n 8,32,64 GPUPORT_ROW_SPLIT_WORKGROUPS=$t -rs$t-2; done
for t in 1024 256; do [ "$(el)" -lt 200 ] && par e n 32,64 GPUPORT_ROW_SPLIT_WORKGROUPS=$t -rs$t-2; done
for t in 1024 256; do [ "$(el)" -lt 230 ] && par l n 32,64 GPUPORT_ROW_SPLIT_WORKGROUPS=$t -rs$t-2; done
device_finish
