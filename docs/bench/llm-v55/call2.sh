#!/usr/bin/env bash
# v55 call 2, as sent (the warm machine after run1.sh; raw output call2/): the 8-stream A/B of
# the int8 few-row rule on the other models and the 8B's old rule (run1.sh ran out of time
# there), and b against n at 64 streams (the 8B twice, the 1B once).
. docs/bench/device.sh; device_setup "xtask-b xtask-n" "e l s g" ""; OLD="GPUPORT_Q8_ROWS_RPT=2 GPUPORT_Q8_ROWS_THREADS=131072"; par e b 8 "$OLD" -old8; for m in l s g; do par $m b 1,8 X=1 -new8; par $m b 8 "$OLD" -old8; done; par e n 64 X=1 -n64; par e b 64 X=1 -b64; par l n 64 X=1 -n64; par l b 64 X=1 -b64; par e n 64 X=1 -n64b; par e b 64 X=1 -b64b; device_finish
