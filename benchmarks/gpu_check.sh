#!/usr/bin/env bash
# One run on a GPU machine (an H100; torch 2.11 + CUDA, no internet) of what only a GPU can show:
#   1. the repo's GPU tests (skipped on CPU), under xdist;
#   2. GPU snapshot stability of the stored form: a throwaway project of zoo and tiny transformers
#      models on CUDA under the default (Inductor) backend, recorded cold, then re-run warm, cold
#      and under `-n 2` (each must pass with no `text only` note) and re-recorded into a copy after
#      each (the stored folders must be byte-identical); the folder must be keyed cuda-sm<cc> and
#      the 2-layer models' wrapper_code must fold a layer (`# again:`) where the stored form folds;
#   3. run_program=True on two CUDA cases: bitwise in a fresh process, or refused with a reason,
#      every run forked from the session's fork server (never a new interpreter);
#   3b. benchmarks/fresh_runs.py on the device: a run_program test against a plain one, each
#      run forked.
# Every step reports PASS or FAIL and the script goes on; a table of steps ends the log,
# $OUT/gpu_check.log. Each pytest call runs under `timeout`, its limit cut to what is left of
# GPU_CHECK_BUDGET_S (default 330 s on a GPU), so a hang never eats the run.
#
#   OUT=/some/folder bash benchmarks/gpu_check.sh                        # on the GPU machine
#   GPU_CHECK_DEVICE=cpu PY=/root/bin/vpy OUT=/tmp/gpuout bash benchmarks/gpu_check.sh
#                                      # the same steps on CPU with fewer models: checks the script
#   GPU_CHECK_STEPS=program OUT=/some/folder bash benchmarks/gpu_check.sh
#                                      # a second run: the threads the fork server's imports start
#                                      # and what the server stopped before, step 3, 3b, then 1b
#                                      # (GPU_CHECK_TIMING=0: not 1b)
#
# The wheels in .whl/ (syrupy, depyf, sybil, ...) go to /tmp/site; without .whl/ that is skipped.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
if [ -d .whl ]; then
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi

PY=${PY:-python3}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
OUT=${OUT:-/tmp/gpu_check_out}
W=${GPU_CHECK_WORK:-/tmp/gpu_check}
if [ "$DEVICE" = cpu ]; then DEFAULT_BUDGET=1500; else DEFAULT_BUDGET=330; fi
BUDGET=${GPU_CHECK_BUDGET_S:-$DEFAULT_BUDGET}
export GPU_CHECK_DEVICE=$DEVICE PYTHONUNBUFFERED=1
unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR # Triton's cache lives in Inductor's: one per phase
#: options of every pytest run in the throwaway projects
BASE=(-p no:cacheprovider -p no:hypothesispytest -q -rfEs)
ROWS=()
FAILED=0

# --- helpers ------------------------------------------------------------------------------------

#: LIMIT [RESERVE]: seconds a step may take: LIMIT, or what is left of the budget (at least 20)
limit() {
    local left=$((BUDGET - SECONDS - ${2:-0}))
    ((left > $1)) && left=$1
    ((left < 20)) && left=20
    echo "$left"
}

#: ID RESULT SECONDS NOTE: one row of the final table, said now too
row() {
    ROWS+=("$(printf '%-8s %-5s %5ss  %s' "$1" "$2" "$3" "$4")")
    [ "$2" = PASS ] || FAILED=1
    echo ">>> $1: $2 ($3 s) $4"
}

#: NAME DIR CACHE LIMIT ARGS...: one pytest run in DIR with its own Inductor cache; its output in
#: $W/logs/NAME.out, its exit status in NAME.rc and its seconds in NAME.s (runs in the background too)
pyt() {
    local name=$1 dir=$2 cache=$3 lim=$4 t0=$SECONDS
    shift 4
    (cd "$dir" && TORCHINDUCTOR_CACHE_DIR=$cache timeout -k 10 "$lim" "$PY" -m pytest "$@") \
        >"$W/logs/$name.out" 2>&1
    echo $? >"$W/logs/$name.rc"
    echo $((SECONDS - t0)) >"$W/logs/$name.s"
}

#: DIR: how many files DIR holds (0 when it does not exist)
files_in() { find "$1" -type f 2>/dev/null | wc -l; }

#: NAME: the run's output into the log, under a header
show() {
    echo "----- $1 (exit $(cat "$W/logs/$1.rc"), $(cat "$W/logs/$1.s") s)"
    cat "$W/logs/$1.out"
}

#: NAME: pytest's last outcome line (`5 passed, 1 skipped in 12.0s`), or what stopped the run
outcome() {
    local line rc
    rc=$(cat "$W/logs/$1.rc")
    line=$(grep -E "[0-9]+ (passed|failed|skipped|errors?|deselected)" "$W/logs/$1.out" | tail -1)
    line=${line//=/}
    line=$(echo "$line" | sed 's/^ *//; s/ *$//')
    case $rc in
        124 | 137) echo "TIMED OUT after $(cat "$W/logs/$1.s") s; ${line:-no outcome line}" ;;
        *) echo "exit $rc; ${line:-no outcome line}" ;;
    esac
}

#: NAME [EXPECT_NO_TEXT_ONLY]: PASS when the run exited 0 (and said no `text only`)
judge() {
    local rc notes
    rc=$(cat "$W/logs/$1.rc")
    notes=$(grep -c "text only" "$W/logs/$1.out")
    if [ "$rc" = 0 ] && { [ -z "${2:-}" ] || [ "$notes" = 0 ]; }; then echo PASS; else echo FAIL; fi
}

#: NAME A B: the stored snapshot folders of two projects byte for byte; the diff in the log
same_snapshots() {
    local t0=$SECONDS
    echo "----- diff -r $2/snapshots $3/snapshots"
    if [ ! -d "$2/snapshots" ] || [ ! -d "$3/snapshots" ]; then
        row "$1" FAIL 0 "a snapshot folder is missing"
        return
    fi
    diff -r "$2/snapshots" "$3/snapshots" >"$W/logs/$1.diff" 2>&1
    local rc=$? files
    files=$(find "$3/snapshots" -type f | wc -l)
    head -50 "$W/logs/$1.diff"
    {
        echo "===== $1: diff -r $2/snapshots $3/snapshots (exit $rc)"
        head -200 "$W/logs/$1.diff"
    } >>"$W/diffs.txt"
    if [ "$rc" = 0 ]; then
        row "$1" PASS $((SECONDS - t0)) "byte-identical ($files files)"
    else
        row "$1" FAIL $((SECONDS - t0)) "$(grep -c '^[<>]' "$W/logs/$1.diff") lines differ, $(grep -c '^Only in' "$W/logs/$1.diff") files on one side (diffs.txt)"
    fi
}

# --- the throwaway projects -----------------------------------------------------------------------

#: the test module's head: models moved to the device, transformers models from tiny configs
write_head() {
    cat <<'EOF'
"""Snapshot stability on a device (written by benchmarks/gpu_check.sh)."""

import os

import pytest
import torch

from fixtures import zoo
from fixtures.real_models import token_ids

DEVICE = os.environ["GPU_CHECK_DEVICE"]


def on_device(case):
    model, args, kwargs = case
    move = lambda v: v.to(DEVICE) if isinstance(v, torch.Tensor) else v  # noqa: E731
    if isinstance(model, torch.nn.Module):
        model = model.to(DEVICE)
    return model, tuple(move(a) for a in args), {k: move(v) for k, v in kwargs.items()}


def gpt2():
    import transformers as tf

    zoo.seeded()
    config = tf.GPT2Config(
        vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    return zoo.Case(tf.GPT2LMHeadModel(config).eval(), (), {"input_ids": token_ids(2, 8)})


def bert():
    import transformers as tf

    zoo.seeded()
    config = tf.BertConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return zoo.Case(tf.BertModel(config).eval(), (), {"input_ids": token_ids(2, 8)})


WITH_KERNELS = ("summary", "dynamo_graph", "guards", "aot_inference", "wrapper_code", "output_code")
EOF
}

#: MODEL: one test of the snapshot project (the default marker: Inductor, the default artifacts)
snippet() {
    case $1 in
        mlp_training) cat <<'EOF'


@pytest.mark.compile_snapshot
def test_mlp_training(compile_model):
    model, args, _ = on_device(zoo.mlp_training())
    compile_model(model, *args)
EOF
            ;;
        graph_break) cat <<'EOF'


@pytest.mark.compile_snapshot
def test_graph_break(compile_model):
    model, args, _ = on_device(zoo.graph_break())
    assert compile_model(model, *args).graph_break_count == 1
EOF
            ;;
        transformer_block) cat <<'EOF'


@pytest.mark.compile_snapshot(artifacts=WITH_KERNELS)
def test_transformer_block(compile_model):
    model, args, _ = on_device(zoo.transformer_block())
    with torch.no_grad():
        compile_model(model, *args)
EOF
            ;;
        buffer_mutation) cat <<'EOF'


@pytest.mark.compile_snapshot
def test_buffer_mutation(compile_model):
    model, args, _ = on_device(zoo.buffer_mutation())
    with torch.no_grad():
        compile_model(model, *args)
EOF
            ;;
        row_norm) cat <<'EOF'


@pytest.mark.compile_snapshot
def test_row_norm(compile_model):
    model, args, _ = on_device(zoo.dynamic_shapes())  # a norm over rows: a reduction kernel
    with torch.no_grad():
        compile_model(model, *args)
EOF
            ;;
        gpt2) cat <<'EOF'


@pytest.mark.compile_snapshot(artifacts=WITH_KERNELS)
def test_gpt2_two_layers(compile_model):
    model, args, kwargs = on_device(gpt2())
    with torch.no_grad():
        compile_model(model, *args, **kwargs)
EOF
            ;;
        bert) cat <<'EOF'


@pytest.mark.compile_snapshot
def test_bert_two_layers(compile_model):
    model, args, kwargs = on_device(bert())
    with torch.no_grad():
        compile_model(model, *args, **kwargs)
EOF
            ;;
    esac
}

#: DIR MODEL...: a project with the ini keying snapshots by torch and device, and the test module
write_project() {
    local dir=$1
    shift
    mkdir -p "$dir"
    printf '[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n' >"$dir/pytest.ini"
    {
        write_head
        for model in "$@"; do snippet "$model"; done
    } >"$dir/test_gpu.py"
}

#: the run_program project: two cases whose program files hold Inductor's kernels
write_program_project() {
    mkdir -p "$1"
    printf '[pytest]\ntorchcompile_snapshot_dir = snapshots/{torch}/{device}\n' >"$1/pytest.ini"
    {
        write_head
        cat <<'EOF'


def bitwise(name, result):
    report = result.program_report
    print(f"\nPROGRAM bitwise {name}: {report.file_bytes} bytes, load {report.load_seconds} s, "
          f"call {report.call_seconds} s, ran {report.ran}, started {report.started}")


@pytest.mark.compile_snapshot(run_program=True, artifacts=("summary",))
def test_mlp_training_program(compile_model):
    model, args, _ = on_device(zoo.mlp_training())
    bitwise("test_mlp_training_program", compile_model(model, *args))
EOF
        [ "$DEVICE" = cpu ] || cat <<'EOF'


@pytest.mark.compile_snapshot(run_program=True, artifacts=("summary",))
def test_transformer_block_program(compile_model):
    model, args, _ = on_device(zoo.transformer_block())
    with torch.no_grad():
        bitwise("test_transformer_block_program", compile_model(model, *args))
EOF
    } >"$1/test_prog.py"
}

# --- the steps ------------------------------------------------------------------------------------

step_env() {
    local t0=$SECONDS
    echo "===== 0. environment (device $DEVICE, budget $BUDGET s, python: $PY)"
    nproc
    if "$PY" - <<'EOF'; then
import importlib.metadata as m, sys
sys.exit(0 if any(e.value == "pytest_torchcompile.plugin" for e in m.entry_points(group="pytest11")) else 1)
EOF
        echo "plugin: its pytest11 entry point is installed"
    else
        # not installed (the wheels lack it): PYTEST_PLUGINS loads it in every pytest, pytester's
        # subprocesses and xdist workers included (`-p` would not reach those)
        export PYTEST_PLUGINS=pytest_torchcompile.plugin
        echo "plugin: no entry point installed; PYTEST_PLUGINS=$PYTEST_PLUGINS"
    fi
    timeout 120 "$PY" - <<'EOF' >"$W/env.txt" 2>&1
import importlib.metadata as m, os, sys
import torch
print("python", sys.version.split()[0], "| torch", torch.__version__, "| cuda build", torch.version.cuda)
needed = ["transformers", "pytest", "pytest-xdist", "syrupy", "depyf", "sybil", "hypothesis"]
for dist in needed + ["triton"] * (os.environ["GPU_CHECK_DEVICE"] != "cpu"):
    try:
        print(f"{dist} {m.version(dist)}")
    except m.PackageNotFoundError:
        print(f"{dist} MISSING")
import pytest_torchcompile.plugin as p
print("plugin from", os.path.dirname(p.__file__))
if torch.cuda.is_available():
    major, minor = torch.cuda.get_device_capability()
    print("gpu", torch.cuda.get_device_name(), f"cc {major}.{minor}", "count", torch.cuda.device_count())
    print(f"KEY=cuda-sm{major}{minor}")
else:
    print("gpu none")
    print("KEY=cpu")
EOF
    local rc=$?
    cat "$W/env.txt"
    KEY=$(sed -n 's/^KEY=//p' "$W/env.txt")
    if [ "$rc" = 0 ] && { [ "$DEVICE" = cpu ] || [ "${KEY#cuda}" != "$KEY" ]; } && ! grep -q MISSING "$W/env.txt"; then
        row 0-env PASS $((SECONDS - t0)) "key ${KEY:-?}"
    else
        row 0-env FAIL $((SECONDS - t0)) "exit $rc, key ${KEY:-?}, $(grep -c MISSING "$W/env.txt") package(s) missing"
    fi
}

step_record() {
    echo "===== 2a. record the snapshot project (--update-snapshots, cold cache): ${MODELS[*]}"
    write_project "$W/rec_a" "${MODELS[@]}"
    pyt 2a_record "$W/rec_a" "$W/cache_a" "$(limit 140)" "${BASE[@]}" --update-snapshots test_gpu.py
    show 2a_record
    local files
    files=$(find "$W/rec_a/snapshots" -type f 2>/dev/null | wc -l)
    row 2a-rec "$(judge 2a_record)" "$(cat "$W/logs/2a_record.s")" "$(outcome 2a_record); $files files"
}

#: the compare runs (in copies holding (a)'s snapshots), the re-recordings (copies without), and
#: step 3, all at once: no two share a cold cache, the warm ones only read (a)'s
step_reruns_and_program() {
    local lim x warm
    lim=$(limit 150)
    for x in cmp_b cmp_c cmp_d rec_b rec_c rec_d; do
        mkdir -p "$W/$x"
        cp "$W/rec_a/pytest.ini" "$W/rec_a/test_gpu.py" "$W/$x/"
    done
    for x in cmp_b cmp_c cmp_d; do cp -r "$W/rec_a/snapshots" "$W/$x/"; done
    write_program_project "$W/prog"
    warm=$(files_in "$W/cache_a")
    # 7 sessions at once: 4 Inductor compile workers each, not one per core each
    export TORCHINDUCTOR_COMPILE_THREADS=4
    echo "===== 2b-2d (and 3) run at once, each at most $lim s"
    pyt 2b_warm "$W/cmp_b" "$W/cache_a" "$lim" "${BASE[@]}" test_gpu.py &
    pyt 2b_record "$W/rec_b" "$W/cache_a" "$lim" "${BASE[@]}" --update-snapshots test_gpu.py &
    pyt 2c_cold "$W/cmp_c" "$W/cache_c1" "$lim" "${BASE[@]}" test_gpu.py &
    pyt 2c_record "$W/rec_c" "$W/cache_c2" "$lim" "${BASE[@]}" --update-snapshots test_gpu.py &
    pyt 2d_xdist "$W/cmp_d" "$W/cache_a" "$lim" "${BASE[@]}" -n 2 test_gpu.py &
    pyt 2d_record "$W/rec_d" "$W/cache_a" "$lim" "${BASE[@]}" -n 2 --update-snapshots test_gpu.py &
    PTC_FRESH_PROCESS_TIMEOUT=120 \
        pyt 3_program "$W/prog" "$W/cache_p" "$lim" "${BASE[@]}" -s --update-snapshots test_prog.py &
    wait
    unset TORCHINDUCTOR_COMPILE_THREADS
    echo "Inductor caches: (a)'s holds $warm files after (a), $(files_in "$W/cache_a") after the warm runs" \
        "(a warm run that missed would add some); the new ones $(files_in "$W/cache_c1") and $(files_in "$W/cache_c2")"
    for x in b_warm:"warm cache" c_cold:"new empty cache" d_xdist:"-n 2, warm cache"; do
        local name=2${x%%:*} phase=${x%%_*}
        echo "===== 2$phase. re-run plainly (${x#*:}): must pass, no 'text only'"
        show "$name"
        row "2$phase-run" "$(judge "$name" strict)" "$(cat "$W/logs/$name.s")" \
            "$(outcome "$name"); $(grep -c 'text only' "$W/logs/$name.out") 'text only'"
        echo "----- 2$phase. re-recorded into a copy"
        show "2${phase}_record"
        if [ "$(judge "2${phase}_record")" = PASS ]; then
            same_snapshots "2$phase-diff" "$W/rec_a" "$W/rec_$phase"
        else
            row "2$phase-diff" FAIL "$(cat "$W/logs/2${phase}_record.s")" "re-recording failed: $(outcome "2${phase}_record")"
        fi
    done
}

step_folder_and_folding() {
    local t0=$SECONDS folders expect=${KEY:-cpu}
    echo "===== 2e. the snapshot folder's key"
    folders=$(cd "$W/rec_a/snapshots" 2>/dev/null && ls -d -- */*)
    echo "folders: $folders (expected <torch>/$expect)"
    if [ "$(echo "$folders" | wc -w)" = 1 ] && [ "${folders##*/}" = "$expect" ]; then
        row 2e-key PASS $((SECONDS - t0)) "snapshots/$folders"
    else
        row 2e-key FAIL $((SECONDS - t0)) "snapshots/$folders, expected */$expect"
    fi
    [ "$DEVICE" = cpu ] || [ "$expect" = cuda-sm90 ] || echo "NOTE: not an H100 (cuda-sm90): $expect"
    echo "===== 2f. layer folding: '# again:' lines per stored file"
    grep -rc "# again: lines" "$W/rec_a/snapshots" | grep -v ':0$' | sed "s|$W/rec_a/||"
    local missing="" file test
    for test in "${LAYERED[@]}"; do
        file=$(find "$W/rec_a/snapshots" -path "*/$test/wrapper_code*" | head -1)
        if [ -n "$file" ] && grep -q "# again: lines" "$file"; then
            echo "--- $test: $(grep -c '# again: lines' "$file") fold(s) in ${file##*/}:"
            grep "# again: lines" "$file" | head -3
        else
            missing="$missing $test"
        fi
    done
    if [ ! -f pytest_torchcompile/snapshot/artifacts/repeats.py ]; then
        row 2f-fold PASS $((SECONDS - t0)) "n/a: this stored form folds no layers (no repeats.py)"
    elif [ -z "$missing" ]; then
        row 2f-fold PASS $((SECONDS - t0)) "wrapper_code folds a layer in: ${LAYERED[*]}"
    else
        row 2f-fold FAIL $((SECONDS - t0)) "no '# again:' in the wrapper_code of:$missing"
    fi
    echo "===== 2g. the plain runs wrote no snapshot"
    local x changed=""
    for x in cmp_b cmp_c cmp_d; do
        diff -rq "$W/rec_a/snapshots" "$W/$x/snapshots" >/dev/null 2>&1 || changed="$changed $x"
    done
    if [ -z "$changed" ]; then row 2g-ro PASS 0 "snapshots of the compare runs untouched"; else row 2g-ro FAIL 0 "changed in:$changed"; fi
    tar -czf "$OUT/gpu_snapshots.tar.gz" -C "$W/rec_a" snapshots test_gpu.py pytest.ini \
        && echo "recorded set: $OUT/gpu_snapshots.tar.gz ($(du -h "$OUT/gpu_snapshots.tar.gz" | cut -f1))"
}

step_program() {
    echo "===== 3. run_program=True on $DEVICE: bitwise in a fresh process, or refused with a reason"
    show 3_program
    local out=$W/logs/3_program.out name section bitwise=0 refused=0 other=0 tests=(test_mlp_training_program)
    [ "$DEVICE" = cpu ] || tests+=(test_transformer_block_program)
    echo "--- per case:"
    for name in "${tests[@]}"; do
        # the test's failure section: from its `____ name ____` header to the next header
        section=$(awk -v n="$name" '/^_+ .* _+$/ {on = ($2 == n)} /^=+ / {on = 0} on' "$out")
        if grep -q "^PROGRAM bitwise $name:" "$out"; then
            bitwise=$((bitwise + 1))
            grep "^PROGRAM bitwise $name:" "$out"
        elif echo "$section" | grep -q "run_program=True: \|refused"; then
            refused=$((refused + 1))
            echo "REFUSED $name: $(echo "$section" | grep -m1 "run_program=True: \|refused" | cut -c1-400)"
        else
            other=$((other + 1))
            echo "FAILED $name: $(echo "$section" | sed -n 2,6p | cut -c1-300)"
        fi
    done
    local result=FAIL spawned
    # every run forked from the session's fork server: none a new interpreter
    spawned=$(grep "^PROGRAM bitwise" "$out" | grep -c "new interpreter")
    [ "$other" = 0 ] && [ "$spawned" = 0 ] && result=PASS
    row 3-prog "$result" "$(cat "$W/logs/3_program.s")" "$bitwise bitwise, $refused refused, $other failed, $spawned with a new interpreter; $(outcome 3_program)"
}

#: 1a: the GPU tests that time nothing, under xdist; 1b: test_gpu_figures.py alone (it times the
#: GPU: nothing else may run beside it)
step_repo_tests() {
    local quick=(tests/perf/test_gpu_control_flow.py tests/snapshot/artifacts/test_normalize_gpu_text.py
        tests/snapshot/files/test_torch_and_device_folders.py) workers=8
    if [ "$DEVICE" = cpu ]; then # the rest is slow here and checks no GPU
        quick[2]+="::test_device_is_the_cases_device_not_the_machines"
        workers=2
    fi
    echo "===== 1a. the repo's GPU tests: ${quick[*]}"
    pyt 1a_repo "$PWD" "$W/cache_1" "$(limit 100 40)" -n "$workers" -p no:cacheprovider -q -rfEs "${quick[@]}"
    repo_row 1a_repo 1a-repo
    step_timing
}

step_timing() {
    local timed=tests/perf/test_gpu_figures.py
    echo "===== 1b. the repo's GPU timing test alone: $timed"
    pyt 1b_repo "$PWD" "$W/cache_1" "$(limit 200)" -p no:cacheprovider -q -rfEs "$timed"
    repo_row 1b_repo 1b-repo
}

#: the threads running after each import the fork server makes (a thread makes it refuse to fork)
step_threads() {
    echo "===== threads after each of the fork server's imports"
    "$PY" - <<'PY'
import importlib, os
from pytest_torchcompile._torch.process.preload import MODULES
for name in MODULES:
    importlib.import_module(name)
    tasks = os.listdir("/proc/self/task")
    names = sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in tasks)
    print(f"after {name}: {len(tasks)} thread(s) {names}")
import torch
print("torch.cuda.is_initialized():", torch.cuda.is_initialized())
PY
    echo "===== the fork server as started: the import it stopped before (if any), its threads"
    timeout 300 "$PY" - <<'PY'
import time
from pytest_torchcompile.snapshot.fresh_process.servers import FreshProcesses
fresh = FreshProcesses()
fresh.prestart()
server = fresh.server
server._ready(time.monotonic() + 280)
with open(f"/proc/{server.pid}/status") as status:
    threads = next(line for line in status if line.startswith("Threads:")).split()[1]
print(f"fork server pid {server.pid}: {threads} thread(s); stopped before {server.stopped_before}: {server.why}")
fresh.close()
PY
}

#: 3b: what a run_program test costs on the device, plain against forked (benchmarks/fresh_runs.py);
#: every forked run must have forked, none a new interpreter
step_fresh_cost() {
    local t0=$SECONDS lim
    lim=$(limit 200)
    echo "===== 3b. benchmarks/fresh_runs.py on $DEVICE: plain against forked, how each run started"
    timeout -k 10 "$lim" "$PY" benchmarks/fresh_runs.py --cases 8 --variants plain,fork --device "$DEVICE" \
        >"$W/logs/3b_cost.out" 2>&1
    local rc=$?
    cat "$W/logs/3b_cost.out"
    local runs
    runs=$(grep "^fork runs started:" "$W/logs/3b_cost.out")
    if [ "$rc" = 0 ] && echo "$runs" | grep -q "'forked'" && ! echo "$runs" | grep -q "new_interpreter"; then
        row 3b-cost PASS $((SECONDS - t0)) "$(grep '^fork ' "$W/logs/3b_cost.out" | head -1 | tr -s ' ')"
    else
        row 3b-cost FAIL $((SECONDS - t0)) "exit $rc; ${runs:-no runs counted}"
    fi
}

#: NAME ID: a repo test run into the log, its skip reasons, its row
repo_row() {
    show "$1"
    echo "--- skip reasons left:"
    grep "^SKIPPED" "$W/logs/$1.out" || echo "(none)"
    row "$2" "$(judge "$1")" "$(cat "$W/logs/$1.s")" "$(outcome "$1"); $(grep -c '^SKIPPED' "$W/logs/$1.out") skip line(s)"
}

main() {
    echo "gpu_check.sh $(date -u +%FT%TZ) on ${HOSTNAME:-?}, repo $PWD ($(git rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
    rm -rf "$W" && mkdir -p "$W/logs" "$OUT" && : >"$W/diffs.txt"
    if [ "$DEVICE" = cpu ]; then
        MODELS=(mlp_training gpt2)
        LAYERED=(test_gpt2_two_layers)
    else
        MODELS=(mlp_training graph_break transformer_block buffer_mutation row_norm gpt2 bert)
        LAYERED=(test_gpt2_two_layers test_bert_two_layers)
    fi
    step_env
    if [ "${GPU_CHECK_STEPS:-all}" = program ]; then
        step_threads
        write_program_project "$W/prog"
        PTC_FRESH_PROCESS_TIMEOUT=120 pyt 3_program "$W/prog" "$W/cache_p" "$(limit 200 100)" \
            "${BASE[@]}" -s --update-snapshots test_prog.py
        step_program
        step_fresh_cost
        [ "${GPU_CHECK_TIMING:-1}" = 0 ] || step_timing
        summary
        return "$FAILED"
    fi
    # the main point first: the snapshot stability, then run_program (run beside 2b-2d), then the
    # repo's tests alone (they time the GPU: nothing else may run beside them)
    step_record
    step_reruns_and_program
    step_folder_and_folding
    step_program
    step_fresh_cost
    step_repo_tests
    summary
    return "$FAILED"
}

summary() {
    echo
    echo "===== summary (device $DEVICE, ${KEY:-?}, $SECONDS s in all)"
    printf '%-8s %-5s %6s  %s\n' step result time note
    printf '%s\n' "${ROWS[@]}"
    printf '%s\n' "${ROWS[@]}" >"$OUT/gpu_check_summary.txt"
    cp "$W/diffs.txt" "$OUT/gpu_check_diffs.txt"
    [ "$FAILED" = 0 ] && echo "ALL PASS" || echo "SOME STEPS FAILED"
    return "$FAILED"
}

mkdir -p "$OUT" || exit 1
main 2>&1 | tee "$OUT/gpu_check.log"
exit "${PIPESTATUS[0]}"
