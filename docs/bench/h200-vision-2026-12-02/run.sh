#!/usr/bin/env bash
# H200 run (vision v3): gpuport bench-vision interleaved with PyTorch CUDA (onnx2torch, CUDA
# events) and onnxruntime CPU x16, two rounds, SM clock logged beside.
set -u
R=$OUT/r; mkdir -p $R
(while true; do nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem --format=csv,noheader >> $R/clocks.txt; sleep 1; done) &
CLK=$!
nproc > $R/nproc.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/gpu.txt
for round in 1 2; do
  ./.devbin/xtask bench-vision .devbin/effnet.onnx --batch 1,32 --seconds 3 --json $R/effnet-ours-$round.json > $R/effnet-ours-$round.txt 2>&1
  python3 .devbin/torch_vision_bench.py .devbin/effnet.onnx --batch 1,32 --seconds 3 --json $R/effnet-peer-$round.json > $R/effnet-peer-$round.txt 2>&1
  ./.devbin/xtask bench-vision .devbin/yolo.onnx --batch 1 --seconds 3 --json $R/yolo-ours-$round.json > $R/yolo-ours-$round.txt 2>&1
  python3 .devbin/torch_vision_bench.py .devbin/yolo.onnx --batch 1 --seconds 3 --json $R/yolo-peer-$round.json > $R/yolo-peer-$round.txt 2>&1
done
./.devbin/xtask bench-vision .devbin/effnet.onnx --batch 1,32 --seconds 1 --profile --json $R/effnet-profile.json > $R/effnet-profile.txt 2>&1
./.devbin/xtask bench-vision .devbin/yolo.onnx --batch 1 --seconds 1 --profile --json $R/yolo-profile.json > $R/yolo-profile.txt 2>&1
kill $CLK
for f in $R/*-ours-*.txt $R/*-peer-*.txt; do echo "== $f"; grep -v Warning $f | grep -v '^ ' ; done
awk -F, '{print $2}' $R/clocks.txt | sort | uniq -c
cd $OUT && tar czf r.tgz r && rm -rf r
