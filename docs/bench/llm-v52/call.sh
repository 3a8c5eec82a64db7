#!/usr/bin/env bash
# Whichever card a call gets: an H200 runs v51's run1.sh (issue 13's table on the card it
# names, Q6_K's groups there; xtask-g = 1f9955f, or HEAD's build renamed), then call again for
# run3.sh (issue 15's table) on the warm machine; any other card runs run3.sh alone.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    exec bash docs/bench/llm-v51/run1.sh
fi
exec bash docs/bench/llm-v52/run3.sh
