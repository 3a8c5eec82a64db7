#!/usr/bin/env bash
# v55 call 3, as sent (raw output call3/): the 1B at 64 streams, b against n, two interleaved
# rounds (call 2's one round of each disagreed with v54's).
. docs/bench/device.sh; device_setup "xtask-b xtask-n" "l" ""; for r in 1 2; do par l b 64 X=1 -b64$r; par l n 64 X=1 -n64$r; done; device_finish
