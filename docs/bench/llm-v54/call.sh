#!/usr/bin/env bash
# v54's third call, on whichever card came: run4.sh. (run2.sh, issue 13's table on an H200,
# run1.sh, issue 15's table beside llama.cpp, and run3.sh, the four models, each need more
# device time than the session had left after its refused starts.)
exec bash docs/bench/llm-v54/run4.sh
