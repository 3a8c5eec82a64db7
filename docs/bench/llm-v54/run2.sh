#!/usr/bin/env bash
# Written in v54, not run (H200): v51's run1.sh — issue 13's table on the card it names — on
# HEAD's build. Carry `.devbin/xtask-b.xz` (HEAD: `cargo build --release -p gpuport-xtask`,
# stripped, xz'd) and `.devbin/kvc-b.xz` (HEAD's `cargo test --release -p gpuport-runtime
# --test kernels_vs_cpu --no-run`). They stand in for v51's g; its h and p (builds from before
# Q6_K's groups) are b too, so its Q6_K comparison lines time b three times a round.
set -u
for n in xtask-g xtask-h xtask-p; do cp .devbin/xtask-b.xz ".devbin/$n.xz"; done
cp .devbin/kvc-b.xz .devbin/kvc-g.xz
exec bash docs/bench/llm-v51/run1.sh
