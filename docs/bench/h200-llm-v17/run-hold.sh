#!/usr/bin/env bash
# H200 run (v17b): GEMV ratio per type at 256 MB with the bench's clock hold (300 ms of untimed
# steady work before each variant is timed).
set -u
R=$OUT/r; mkdir -p $R
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks-hold.txt; sleep 1; done) &
CLK=$!
./.devbin/xtask bench --shapes large --types q5_1,q8_0,q4_K,q5_K,q6_K --json $R/gemv-hold.json > $R/gemv-hold.txt 2>&1
kill $CLK
(cd $OUT && tar czf all.tgz r)
grep -E "large|ceiling" $R/gemv-hold.txt | head -40
awk -F, '{print $2}' $R/clocks-hold.txt | sort | uniq -c
