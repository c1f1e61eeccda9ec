#!/usr/bin/env bash
# Record and replay the custom gradients that real libraries' own test suites call.
#
# Three libraries nobody in this project wrote (beside larq, which the project already tests):
#   tensorflow-probability 0.25.0  (tfp.math special functions, Student-t CDF and its inverse)
#   tensorflow-model-optimization 0.8.1  (weight clustering)
#   dm-sonnet 2.0.2  (scale_gradient, leaky_clip_by_value, embed.dense_gradient)
# under TensorFlow 2.21.0 / tf-keras 2.21.0 / Python 3.11.
#
# Steps (each can be skipped, see the variables):
#   1. make a virtual environment with those releases and this checkout installed (so the pytest
#      plugin is registered);
#   2. put the chosen test files in $TESTS/<lib>/ (from git clones of the libraries, if given);
#   3. record each suite with --harness-record and replay it with --mode=all;
#   4. optionally (MEASURE=1) time one suite without and with --harness-record (paired runs).
#
# Variables (defaults in brackets):
#   VENV      the environment to make or reuse [/tmp/venv-real]
#   TESTS     where the test files go, one folder per library [/tmp/real-suites]
#   OUT       recordings, replay reports and logs [/tmp/real-suites-out]
#   TFP_GIT, TFMOT_GIT, SONNET_GIT
#             git directories (a clone's .git, or a bare mirror) of tensorflow/probability,
#             tensorflow/model-optimization and google-deepmind/sonnet; when set, the test files
#             are taken from them at the tags below. Without them, the files must already be in
#             $TESTS/<lib>/.
#   SKIP_INSTALL=1   reuse $VENV as it is
#   RUNS      paired runs for MEASURE=1 [3]
#   NICE      the niceness the TensorFlow processes run at [10] (the machine may be shared)
#
# Usage: bash scripts/record_real_suites.sh            (from anywhere)
#        MEASURE=1 SKIP_INSTALL=1 bash scripts/record_real_suites.sh
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-/tmp/venv-real}"
TESTS="${TESTS:-/tmp/real-suites}"
OUT="${OUT:-/tmp/real-suites-out}"
RUNS="${RUNS:-3}"
NICE="${NICE:-10}"
PY="$VENV/bin/python"
RUN=(nice -n "$NICE")

TFP_TAG=v0.25.0
TFMOT_TAG=v0.8.1
SONNET_TAG=v2.0.2

# ---------------------------------------------------------------------------------------------
# 1. The environment.
if [[ "${SKIP_INSTALL:-0}" != 1 ]]; then
  if command -v uv >/dev/null; then
    uv venv "$VENV" --python python3
    VIRTUAL_ENV="$VENV" uv pip install tensorflow==2.21.0 tf-keras==2.21.0 pytest==9.2.0 mpmath==1.4.1 scipy==1.17.1 \
      tensorflow-probability==0.25.0 tensorflow-model-optimization==0.8.1 dm-sonnet==2.0.2
    VIRTUAL_ENV="$VENV" uv pip install --no-deps -e "$HERE"
  else
    python3 -m venv "$VENV"
    "$PY" -m pip install tensorflow==2.21.0 tf-keras==2.21.0 pytest==9.2.0 mpmath==1.4.1 scipy==1.17.1 \
      tensorflow-probability==0.25.0 tensorflow-model-optimization==0.8.1 dm-sonnet==2.0.2
    "$PY" -m pip install --no-deps -e "$HERE"
  fi
fi
"$PY" -c "import tensorflow as tf, tensorflow_probability as tfp, tensorflow_model_optimization as m, sonnet as s; print('TF', tf.__version__, 'TFP', tfp.__version__, 'TFMOT', m.__version__, 'sonnet', s.__version__)"

# ---------------------------------------------------------------------------------------------
# 2. The test files: only *_test.py files, flat in one folder per library, so that the installed
#    library (not a source tree) is what they import.
TFP_FILES=(tensorflow_probability/python/math/special_test.py
           tensorflow_probability/python/math/hypergeometric_test.py
           tensorflow_probability/python/math/bessel_test.py
           tensorflow_probability/python/distributions/student_t_test.py)
TFMOT_FILES=(tensorflow_model_optimization/python/core/clustering/keras/cluster_wrapper_test.py
             tensorflow_model_optimization/python/core/clustering/keras/clustering_registry_test.py
             tensorflow_model_optimization/python/core/clustering/keras/cluster_integration_test.py)
SONNET_FILES=(sonnet/src/scale_gradient_test.py sonnet/src/leaky_clip_by_value_test.py
              sonnet/src/embed_test.py)

take() {  # take GITDIR TAG DEST FILE...
  local git="$1" tag="$2" dest="$3"; shift 3
  mkdir -p "$dest"
  for f in "$@"; do git --git-dir="$git" show "$tag:$f" > "$dest/$(basename "$f")"; done
}
[[ -n "${TFP_GIT:-}" ]] && take "$TFP_GIT" "$TFP_TAG" "$TESTS/tfp" "${TFP_FILES[@]}"
[[ -n "${TFMOT_GIT:-}" ]] && take "$TFMOT_GIT" "$TFMOT_TAG" "$TESTS/tfmot" "${TFMOT_FILES[@]}"
[[ -n "${SONNET_GIT:-}" ]] && take "$SONNET_GIT" "$SONNET_TAG" "$TESTS/sonnet" "${SONNET_FILES[@]}"

# These suites are absltest suites; under pytest nobody parses absl's flags, and TFP's test_util
# reads one (UnparsedFlagAccessError). absltest.main would parse them; here a conftest does.
for lib in tfp tfmot sonnet; do
  mkdir -p "$TESTS/$lib"
  cat > "$TESTS/$lib/conftest.py" <<'EOF'
from absl import flags


def pytest_configure(config):
    flags.FLAGS.mark_as_parsed()
EOF
done

# The TFP subset: one gradient test per custom-gradient function (each in TFP's execution regimes:
# _eager runs the test body in a tf.function, _graph in a TF1 graph, _eager_no_tf_function eagerly).
TFP_K='(testBetaincGradient0 or testBetaincinvGradient or testDawsnGradient or testIgammainvGradient or testIgammacinvGradient or testOwensTGradient or testErfcxGradient or testLambertWGradient0 or testLogBetaGradient or testLogGammaDifferenceGradient or test2F1HypergeometricGradient or testBesselIvRatioGradient or testBesselIveGradientfloat64 or testBesselKveGradientfloat64 or testLogBesselIveGradientfloat64 or testLogBesselKveGradientfloat64 or testStdtrGradient or testStdtritGradient) and not Broadcast and not Bounds and not Finite'

suite() {  # suite LIB EXTRA_PYTEST_ARGS... : run LIB's subset with pytest
  local lib="$1"; shift
  case "$lib" in
    tfp) (cd "$TESTS/tfp" && "${RUN[@]}" "$PY" -m pytest -q -p no:cacheprovider -k "$TFP_K" \
            special_test.py hypergeometric_test.py bessel_test.py student_t_test.py "$@") ;;
    tfmot) (cd "$TESTS/tfmot" && "${RUN[@]}" "$PY" -m pytest -q -p no:cacheprovider \
            cluster_wrapper_test.py clustering_registry_test.py cluster_integration_test.py "$@") ;;
    sonnet) (cd "$TESTS/sonnet" && "${RUN[@]}" "$PY" -m pytest -q -p no:cacheprovider \
            scale_gradient_test.py leaky_clip_by_value_test.py embed_test.py "$@") ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# 3. Record and replay, one library at a time (never two TensorFlow processes at once).
mkdir -p "$OUT"
for lib in ${LIBS:-tfp tfmot sonnet}; do
  rm -rf "$OUT/rec-$lib"
  echo "== $lib: recording"
  suite "$lib" --harness-record="$OUT/rec-$lib" 2>&1 | tee "$OUT/record-$lib.log" | tail -3
  echo "== $lib: replaying"
  (cd "$OUT" && "${RUN[@]}" "$PY" -m harness replay "$OUT/rec-$lib" --mode=all \
      --json_out="$OUT/replay-$lib.json" --timeout 600 > "$OUT/replay-$lib.log" 2>&1) || true
  tail -1 "$OUT/replay-$lib.log"
done

# ---------------------------------------------------------------------------------------------
# 4. What recording costs (MEASURE=1): RUNS rounds, each running TFP's Dawson and erfcx tests
#    (special_test.py -k "Dawsn or Erfcx": 62 tests, about 45 s) without recording, with
#    --harness-record, and with --harness-record --harness-record-eager, one after another;
#    wall-clock medians and their ratios. On a shared machine, read them with that in mind.
if [[ "${MEASURE:-0}" == 1 ]]; then
  TIME_BIN="$(type -P time)"  # GNU time (not the shell keyword), for CPU seconds beside wall ones
  times="$OUT/times.txt"; : > "$times"
  for i in $(seq "$RUNS"); do
    for how in plain record eager; do
      rm -rf "$OUT/cost-$how"
      case "$how" in
        plain) args=() ;;
        record) args=(--harness-record="$OUT/cost-$how") ;;
        eager) args=(--harness-record="$OUT/cost-$how" --harness-record-eager) ;;
      esac
      # wall, user and system seconds of the pytest process (CPU time is less disturbed by
      # other users of a shared machine than wall time)
      (cd "$TESTS/tfp" && "$TIME_BIN" -f "%e %U %S" -o "$OUT/cost-$how-$i.time" \
          "${RUN[@]}" "$PY" -m pytest -q -p no:cacheprovider -k "Dawsn or Erfcx" special_test.py \
          "${args[@]}" > "$OUT/cost-$how-$i.log" 2>&1) || true
      echo "$how $i $(tail -1 "$OUT/cost-$how-$i.time")" | tee -a "$times"
      grep -h "harness record:" "$OUT/cost-$how-$i.log" || true
    done
  done
  "$PY" - "$times" <<'EOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    how, _, wall, user, system = line.split()
    by.setdefault(how, []).append((float(wall), float(user) + float(system)))
for how, runs in by.items():
    print(f"{how}: wall {', '.join(f'{w:.1f}' for w, _ in runs)} s (median {statistics.median(w for w, _ in runs):.1f}); "
          f"CPU {', '.join(f'{c:.1f}' for _, c in runs)} s (median {statistics.median(c for _, c in runs):.1f})")
for how in ("record", "eager"):
    if how in by and "plain" in by:
        for k, what in ((0, "wall"), (1, "CPU")):
            ratio = statistics.median(r[k] for r in by[how]) / statistics.median(r[k] for r in by["plain"])
            print(f"{how} / plain, {what} medians: {ratio:.3f}")
EOF
fi
