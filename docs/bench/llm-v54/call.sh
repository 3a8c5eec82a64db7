#!/usr/bin/env bash
# v54's third call, on whichever card came: run3.sh. (run2.sh, issue 13's table on an H200,
# and run1.sh, run3.sh with issue 15's table beside llama.cpp, each need ~600 s of device time
# the session no longer had after its refused starts.)
exec bash docs/bench/llm-v54/run3.sh
