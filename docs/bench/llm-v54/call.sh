#!/usr/bin/env bash
# The next call, whichever card comes: an H200 runs run2.sh (issue 13's table on the card it
# names; call again for run1.sh on the warm machine), any other card run1.sh (the int8
# few-row rule at 8 streams, issue 15's table, the row tables' blocks).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    exec bash docs/bench/llm-v54/run2.sh
fi
exec bash docs/bench/llm-v54/run1.sh
