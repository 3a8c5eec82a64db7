#!/usr/bin/env bash
# v57's calls, whichever card comes. An H200 (the card issues 13 and 15 name): issue 13's table
# first (run1.sh), then issue 15's (run2.sh) on the warm machine. Any other card: run3.sh
# (the run stores in swapped pairs, Q6_K's run scales once a run, the fused norm rows), then
# v56's run4.sh (its A/Bs again and the 8B's and SmolLM2's batched steps profiled).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    mkdir -p target
    if [ ! -e target/v57-13.done ]; then
        touch target/v57-13.done
        exec bash docs/bench/llm-v57/run1.sh
    fi
    exec bash docs/bench/llm-v57/run2.sh
fi
if [ ! -e target/v57-run3.done ]; then
    mkdir -p target && touch target/v57-run3.done
    exec bash docs/bench/llm-v57/run3.sh
fi
exec bash docs/bench/llm-v56/run4.sh
