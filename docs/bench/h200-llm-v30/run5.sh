#!/usr/bin/env bash
# H200 call 5 (v30): the LLM tests that build their tiny models at test time (llm_tiny: every
# prefix's logits batched and token by token against the f64 CPU forward pass; engine: batched
# jobs equal their solo session runs), on the adapter where prompts now run attention on tensor
# cores and their last token in the batch. SmolLM2's engine test needs the fetched model: not
# here. Carry .gl and .devbin (tiny, engine as .xz).
set -u
R=$OUT/r; mkdir -p $R
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json GPUPORT_REQUIRE_GPU=1
for b in .devbin/tiny.xz .devbin/engine.xz; do xz -d "$b"; done; chmod +x .devbin/tiny .devbin/engine
timeout 60 ./.devbin/tiny > $R/tiny.txt 2>&1; echo "tiny rc=$?"; grep "test result\|panicked\|logit" $R/tiny.txt | head -5
timeout 90 ./.devbin/engine --skip smollm2 > $R/engine.txt 2>&1; echo "engine rc=$?"; grep "test result\|panicked" $R/engine.txt | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
