#!/usr/bin/env bash
# v56's calls, whichever card comes: an H200 runs v54's run2.sh first (issue 13's table on the
# card it names; call again on the warm machine for run1.sh), any other card run1.sh.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ ! -e target/v56-h200.done ]; then
    mkdir -p target && touch target/v56-h200.done
    exec bash docs/bench/llm-v54/run2.sh
fi
exec bash docs/bench/llm-v56/run1.sh
