#!/usr/bin/env bash
# v58's calls, whichever card comes (the Q6_K line is issue 13's on the H200; an H100 still
# tells b / x / h apart): run6.sh first, then run7.sh on the warm machine.
mkdir -p target
if [ ! -e target/v58-run6.done ]; then
    touch target/v58-run6.done
    exec bash docs/bench/llm-v58/run6.sh
fi
exec bash docs/bench/llm-v58/run7.sh
