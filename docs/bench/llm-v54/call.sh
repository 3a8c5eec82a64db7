#!/usr/bin/env bash
# Whichever card the call gets: an H200 runs run2.sh (issue 13's table on the card it names),
# any other card run1.sh (the int8 few-row rule below 32 rows, then issue 15's table).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    exec bash docs/bench/llm-v54/run2.sh
fi
exec bash docs/bench/llm-v54/run1.sh
