#!/usr/bin/env bash
# Throughput of evolve-hud against llama-bench on a machine that has CMake
# (and for its GPU, CUDA's compiler) but no Rust toolchain: on its GPU, or on
# its CPU, a kind of CPU the build machine may not have.
#
#   scripts/device-bench.sh pack DIR
#       here: builds the portable evolve-hud (scripts/portable.sh), and writes
#         DIR/ours.tar.xz       the binary and its libraries
#         DIR/eval.tar.xz       the HUD quality evaluation (benches/hud_quality.rs
#                               and tests/it/hud_quality.rs), built the same way
#                               (left out with EVAL=0)
#         DIR/ggml-src.tar.xz   the llama.cpp that llama-cpp-sys-2 builds, for its
#                               CUDA back-end (the same ggml as the binary's)
#         DIR/peer-src.tar.xz   the llama.cpp of the llama-cpp-python sdist with
#                               llama-bench alone of its tools: its llama-bench
#                               sources are also built there on the ggml above
#                               (as `scripts/llama-cpp.sh llama-bench native
#                               linked` builds them), so that one CUDA build
#                               serves both
#   scripts/device-bench.sh parts DIR MIB FILE...
#       here: cuts DIR's packs and the FILEs (the models) into folders
#       DIR/part-01, DIR/part-02... of at most MIB MiB each, the packs whole
#       in the first, for a device tool that carries little per call (64 MiB
#       in all, the working tree included: MIB=60)
#   scripts/device-bench.sh take PART STORE
#       there, once per part: moves the part's pieces into STORE and joins
#       each file whose pieces are all there (checked against its SHA-256)
#   scripts/device-bench.sh build DIR WORK
#       there: builds WORK/ggml/build/bin/libggml-cuda.so and
#       WORK/peer/bin/llama-bench for the GPU at hand (CUDA_ARCH, default
#       native), in one CMake tree: llama-bench loads the same CUDA module
#   scripts/device-bench.sh cpu-build DIR WORK
#       there, for its CPU: builds WORK/cpu/linked/bin/llama-bench (the linked
#       llama.cpp) and WORK/cpu/sdist/bin/llama-bench (the sdist's), each
#       native without ggml's AMX kernels, as `scripts/llama-cpp.sh
#       llama-bench native [linked]` builds them here; WORK/cpu/built or
#       WORK/cpu/failed marks the end (run it in the background while the
#       parts arrive, then wait for one of the two)
#   scripts/device-bench.sh ours DIR WORK
#       there: unpacks ours into WORK/ours, with the CUDA module beside it
#       where one was built, and WORK/ours/run, which runs evolve-hud with the
#       libraries beside it, and the evaluation into WORK/eval if packed. Then:
#   OURS=WORK/ours/run THEIRS=WORK/peer/bin/llama-bench VARIANTS=cuda \
#     GPU_LAYERS=99 FLASH_ATTN="off on" THREADS=8 scripts/bench-compare.sh MODEL...
#   or on the CPU:
#   OURS=WORK/ours/run THEIRS=WORK/cpu/sdist/bin/llama-bench \
#     LINKED_BENCH=WORK/cpu/linked/bin/llama-bench THREADS=16 scripts/bench-compare.sh MODEL...
#   scripts/device-bench.sh eval WORK SMOLLM2 QWEN [WORD...]
#       there: the HUD quality evaluation (cargo bench --bench hud_quality)
#       against WORK/ours/run on the GPU, then its gate (tests/it/hud_quality.rs)
#   scripts/device-bench.sh wait WORK MODEL [WAIT_MS [SESSION.json...]]
#       there: replays tests/fixtures/sessions/ (or the SESSIONs) into WORK/ours/run on
#       MODEL with every sync asking `wait_ms` (default 300): how often the
#       sync's answer already holds the finding of the question it raised,
#       and the time from the sync to the finding
set -euo pipefail
cd "$(dirname "$0")/.."

backends=(vulkan sycl metal opencl cann webgpu hexagon openvino zdnn zendnn musa hip et virtgpu blas rpc)
exclude_backends() {
  for b in "${backends[@]}"; do echo "--exclude=llama.cpp/ggml/src/ggml-$b"; done
}
# What no build here uses, in the llama.cpp tree $1: llama-bench is the one
# tool built.
exclude_unbuilt() {
  for d in docs models tests examples benches conversion gguf-py media pocs; do
    echo "--exclude=llama.cpp/$d"
  done
  for t in "$1"/tools/*/; do
    [ "$(basename "$t")" = llama-bench ] || echo "--exclude=llama.cpp/tools/$(basename "$t")"
  done
}
# llama-bench's sources from the sdist's tree $1 beside the linked
# llama.cpp $2, as `scripts/llama-cpp.sh llama-bench native linked` puts
# them: the one tool there, its context sized by LLAMA_BENCH_CTX.
graft_llama_bench() {
  mkdir -p "$2/tools"
  cp -r "$1/tools/llama-bench" "$2/tools/"
  echo 'add_subdirectory(llama-bench)' >"$2/tools/CMakeLists.txt"
  sed -i 's|^\( *cparams.n_ctx *= \)\(n_prompt + n_gen + n_depth\);|\1getenv("LLAMA_BENCH_CTX") ? (uint32_t) atoi(getenv("LLAMA_BENCH_CTX")) : \2;|' \
    "$2/tools/llama-bench/llama-bench.cpp"
  grep -q LLAMA_BENCH_CTX "$2/tools/llama-bench/llama-bench.cpp" ||
    { echo "error: llama-bench's context size was not found to patch" >&2; exit 1; }
}

case "${1:-}" in
pack)
  dir="$(realpath -m "${2:?usage: device-bench.sh pack DIR}")"
  mkdir -p "$dir"
  ggml="$(scripts/llama-cpp.sh source linked)"
  # shellcheck disable=SC2046
  tar cJf "$dir/ggml-src.tar.xz" -C "$(dirname "$ggml")" $(exclude_backends) --exclude=llama.cpp/tools llama.cpp
  peer="$(scripts/llama-cpp.sh source)"
  # shellcheck disable=SC2046
  tar cJf "$dir/peer-src.tar.xz" -C "$(dirname "$peer")" $(exclude_backends) $(exclude_unbuilt "$peer") \
    --exclude=llama.cpp/ggml/src/ggml-cuda/template-instances llama.cpp
  stage="$(mktemp -d)"
  trap 'rm -rf "$stage"' EXIT
  scripts/portable.sh "$stage" >/dev/null
  tar cJf "$dir/ours.tar.xz" -C "$stage" .
  if [ "${EVAL:-1}" = 0 ]; then
    ls -l "$dir"
    exit 0
  fi
  # The HUD quality evaluation, built the same way; it finds the session
  # fixtures under the directory it was built in (kept in manifest-dir).
  # (`cargo bench` builds in the release profile without being told.)
  # The gate is the hud_quality module of the one test binary, `it`.
  for kind in bench test; do
    release=(--release) target_name=it
    [ "$kind" = test ] || { release=(); target_name=hud_quality; }
    RUSTFLAGS="$(scripts/portable.sh --rustflags)" CARGO_TARGET_DIR="$(scripts/portable.sh --target-dir)" \
      cargo "$kind" "${release[@]}" --locked --features dynamic-backends \
      --no-run --"$kind" "$target_name" --message-format json >"$stage/$kind.json"
  done
  eval_stage="$(mktemp -d)"
  trap 'rm -rf "$stage" "$eval_stage"' EXIT
  python3 - "$stage" "$eval_stage" <<'PY'
import json, shutil, sys
stage, out = sys.argv[1], sys.argv[2]
for kind in ("bench", "test"):
    for line in open(f"{stage}/{kind}.json"):
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] in ("hud_quality", "it") and m.get("executable"):
            shutil.copy(m["executable"], f"{out}/hud_quality-{kind}")
PY
  strip "$eval_stage"/hud_quality-*
  pwd >"$eval_stage/manifest-dir"
  tar cJf "$dir/eval.tar.xz" -C "$eval_stage" .
  ls -l "$dir"
  ;;
parts)
  dir="$(realpath "${2:?usage: device-bench.sh parts DIR MIB FILE...}")"
  mib="${3:?usage: device-bench.sh parts DIR MIB FILE...}"
  shift 3
  packs=("$dir"/ggml-src.tar.xz "$dir"/peer-src.tar.xz "$dir"/ours.tar.xz)
  [ ! -e "$dir/eval.tar.xz" ] || packs+=("$dir/eval.tar.xz")
  python3 - "$dir" "$mib" "${packs[@]}" "$@" <<'PY'
import hashlib, os, shutil, sys
dir, cap, files = sys.argv[1], int(sys.argv[2]) << 20, sys.argv[3:]
for old in os.listdir(dir):
    if old.startswith("part-"):
        shutil.rmtree(os.path.join(dir, old))
manifest = []
part, room = 0, 0
def new_part():
    global part, room
    part += 1
    os.makedirs(os.path.join(dir, f"part-{part:02}"))
    room = cap
for path in files:
    name, size = os.path.basename(path), os.path.getsize(path)
    # The packs stay whole where they fit, so that the build can start at
    # once; the models are cut anywhere.
    if part == 0 or room == 0 or (not name.endswith(".gguf") and room < size <= cap):
        new_part()
    digest, pieces, left = hashlib.sha256(), 0, size
    with open(path, "rb") as f:
        while left:
            if room == 0:
                new_part()
            chunk = f.read(min(room, left))
            digest.update(chunk)
            with open(os.path.join(dir, f"part-{part:02}", f"{name}.{pieces:03}"), "wb") as out:
                out.write(chunk)
            pieces, room, left = pieces + 1, room - len(chunk), left - len(chunk)
    manifest.append(f"{name} {pieces} {digest.hexdigest()}")
with open(os.path.join(dir, "part-01", "MANIFEST"), "w") as f:
    f.write("\n".join(manifest) + "\n")
for p in sorted(os.listdir(dir)):
    if p.startswith("part-"):
        print(p, sum(os.path.getsize(os.path.join(dir, p, x)) for x in os.listdir(os.path.join(dir, p))) >> 20, "MiB:", " ".join(sorted(os.listdir(os.path.join(dir, p)))))
PY
  ;;
take)
  part="${2:?usage: device-bench.sh take PART STORE}"
  store="$(realpath -m "${3:?usage: device-bench.sh take PART STORE}")"
  mkdir -p "$store/pieces"
  mv "$part"/* "$store/pieces/"
  [ ! -e "$store/pieces/MANIFEST" ] || mv "$store/pieces/MANIFEST" "$store/"
  [ -e "$store/MANIFEST" ] || exit 0
  while read -r name pieces sum; do
    [ ! -e "$store/$name" ] || continue
    got=("$store/pieces/$name".???)
    if [ ! -e "${got[0]}" ] || [ "${#got[@]}" != "$pieces" ]; then continue; fi
    cat "${got[@]}" >"$store/$name.tmp"
    [ "$(sha256sum "$store/$name.tmp" | cut -d' ' -f1)" = "$sum" ] || { echo "error: $name does not match its SHA-256" >&2; exit 1; }
    mv "$store/$name.tmp" "$store/$name"
    rm "$store/pieces/$name".???
    echo "joined $name"
  done <"$store/MANIFEST"
  ;;
build)
  dir="$(realpath "${2:?usage: device-bench.sh build DIR WORK}")"
  work="$(realpath -m "${3:?usage: device-bench.sh build DIR WORK}")"
  arch="${CUDA_ARCH:-native}"
  jobs="${JOBS:-$(nproc)}"
  export PATH="$PATH:/usr/local/cuda/bin"
  mkdir -p "$work/ggml" "$work/peer"
  tar xJf "$dir/ggml-src.tar.xz" -C "$work/ggml"
  tar xJf "$dir/peer-src.tar.xz" -C "$work/peer"
  src="$work/ggml/llama.cpp"
  graft_llama_bench "$work/peer/llama.cpp" "$src"
  # One tree: ggml's back-ends as modules (libggml-cuda.so is what our
  # binary loads too), llama-bench as llama.cpp builds it for CUDA. Its CPU
  # module is x86-64-v3 (modules cannot be native), without ggml's AMX
  # kernels (they crash on AMX CPUs, as GPU hosts often are).
  no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cmake -S "$src" -B "$work/ggml/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA=ON -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DCMAKE_C_FLAGS="$no_amx" -DCMAKE_CXX_FLAGS="$no_amx" -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >"$work/ggml.log" 2>&1
  cmake --build "$work/ggml/build" --target ggml-cuda ggml-cpu llama-bench -j "$jobs" >>"$work/ggml.log" 2>&1
  ln -sfn "$work/ggml/build/bin" "$work/peer/bin"
  ;;
cpu-build)
  dir="$(realpath "${2:?usage: device-bench.sh cpu-build DIR WORK}")"
  work="$(realpath -m "${3:?usage: device-bench.sh cpu-build DIR WORK}")"
  jobs="${JOBS:-$(nproc)}"
  mkdir -p "$work/cpu/src-linked" "$work/cpu/src-sdist"
  rm -f "$work/cpu/built" "$work/cpu/failed"
  trap '[ -e "$work/cpu/built" ] || touch "$work/cpu/failed"' EXIT
  tar xJf "$dir/ggml-src.tar.xz" -C "$work/cpu/src-linked"
  tar xJf "$dir/peer-src.tar.xz" -C "$work/cpu/src-sdist"
  linked="$work/cpu/src-linked/llama.cpp" sdist="$work/cpu/src-sdist/llama.cpp"
  graft_llama_bench "$sdist" "$linked"
  # llama-bench alone of the sdist's tools.
  echo 'add_subdirectory(llama-bench)' >"$sdist/tools/CMakeLists.txt"
  # The flags of scripts/llama-cpp.sh's native build: the CPU at hand,
  # without ggml's AMX kernels.
  no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  for side in linked sdist; do
    src="$work/cpu/src-$side/llama.cpp"
    cmake -S "$src" -B "$work/cpu/$side" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
      -DCMAKE_C_FLAGS="$no_amx" -DCMAKE_CXX_FLAGS="$no_amx" -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DLLAMA_BUILD_APP=OFF -DBUILD_SHARED_LIBS=OFF >"$work/cpu/$side.log" 2>&1
    cmake --build "$work/cpu/$side" --target llama-bench -j "$jobs" >>"$work/cpu/$side.log" 2>&1
  done
  # What a later command waits for, when this one ran in the background
  # (a wait on the process by name also finds the waiting command itself).
  touch "$work/cpu/built"
  ;;
ours)
  dir="$(realpath "${2:?usage: device-bench.sh ours DIR WORK}")"
  work="$(realpath -m "${3:?usage: device-bench.sh ours DIR WORK}")"
  mkdir -p "$work/ours"
  tar xJf "$dir/ours.tar.xz" -C "$work/ours"
  [ ! -e "$work/ggml/build/bin/libggml-cuda.so" ] || cp "$work/ggml/build/bin/libggml-cuda.so" "$work/ours/"
  # The binary has no run path: its libraries are found through
  # LD_LIBRARY_PATH, set for it alone (llama-bench has its own).
  cat >"$work/ours/run" <<'SH'
#!/bin/sh
here="$(dirname "$(realpath "$0")")"
LD_LIBRARY_PATH="$here${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/evolve-hud" "$@"
SH
  chmod +x "$work/ours/run"
  if [ -e "$dir/eval.tar.xz" ]; then
    mkdir -p "$work/eval"
    tar xJf "$dir/eval.tar.xz" -C "$work/eval"
  fi
  ;;
eval)
  work="$(realpath "${2:?usage: device-bench.sh eval WORK SMOLLM2 QWEN [WORD...]}")"
  smol="$(realpath "${3:?usage: device-bench.sh eval WORK SMOLLM2 QWEN [WORD...]}")"
  qwen="$(realpath "${4:?usage: device-bench.sh eval WORK SMOLLM2 QWEN [WORD...]}")"
  shift 4
  # The rows served by evolve-hud (no llama-server here).
  [ $# -gt 0 ] || set -- facts SmolLM2 Q4_K_M
  # The evaluation reads the session fixtures under the directory it was
  # built in: this checkout stands in for it.
  built="$(cat "$work/eval/manifest-dir")"
  if [ ! -e "$built/tests/fixtures/sessions" ]; then
    mkdir -p "$(dirname "$built")"
    ln -sfn "$PWD" "$built"
  fi
  export EVOLVE_HUD_BIN="$work/ours/run" EVOLVE_HUD_TEST_MODEL="$smol" EVOLVE_HUD_EVAL_MODEL="$qwen" \
    EVOLVE_HUD_GPU_LAYERS="${GPU_LAYERS:-99}"
  "$work/eval/hud_quality-bench" "$@"
  "$work/eval/hud_quality-test" hud_quality:: --nocapture
  ;;
wait)
  work="$(realpath "${2:?usage: device-bench.sh wait WORK MODEL [WAIT_MS [SESSION.json...]]}")"
  model="$(realpath "${3:?usage: device-bench.sh wait WORK MODEL [WAIT_MS [SESSION.json...]]}")"
  wait_ms="${4:-300}"
  shift $(($# < 4 ? $# : 4))
  [ $# -gt 0 ] || set -- tests/fixtures/sessions/*.json
  port="${PORT:-18377}"
  # Its own config folder: the sidecar writes its token there, and the
  # replay sends it, as the plugin does.
  config="$work/wait-config"
  rm -rf "$config"
  XDG_CONFIG_HOME="$config" EVOLVE_HUD_GPU_LAYERS="${GPU_LAYERS:-99}" \
    "$work/ours/run" serve --model "$model" --port "$port" --nice 0 >"$work/wait-serve.log" 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null' EXIT
  python3 - "http://127.0.0.1:$port" "$wait_ms" "$(basename "$model" .gguf)" "$config/evolve-hud/token" "$@" <<'PY'
import json, os, sys, time, urllib.request
base, wait_ms, model, token_file, files = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
token = None

def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=180) as r:
        raw = r.read().decode()
        return json.loads(raw) if r.headers.get_content_type() == "application/json" else raw

def metric(name, label):
    total = None
    for line in call("GET", "/metrics").splitlines():
        end = min([i for i in (line.find("{"), line.find(" ")) if i >= 0] or [len(line)])
        if line[:end] == name and label in line:
            total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
    return total

def state(view):
    """The HUD's model status: none, pending, ready or rejected."""
    return view["model_status"]["state"]

LABEL = "local model found in the output, each line checked there: "
def findings(hud):
    """The HUD's lines that hold the model's verified findings."""
    return {line for line in hud.splitlines() if LABEL in line}

def quantile(values, p):
    v = sorted(values)
    return v[round((len(v) - 1) * p)] if v else float("nan")

deadline = time.time() + 300
while True:
    try:
        urllib.request.urlopen(base + "/health", timeout=2)
        break
    except Exception:
        if time.time() > deadline:
            sys.exit("the server did not start")
        time.sleep(0.2)
token = open(token_file).read().strip()

# As the evaluation does: a session opens with a user's request, and the
# replay starts once the HUD has decoded the start its questions share.
call("POST", "/v1/hud/sync", {"session_id": "ses_warmup", "full": True, "messages": [
    {"info": {"id": "msg_m0", "sessionID": "ses_warmup", "role": "user", "time": {"created": 1.0}},
     "parts": [{"type": "text", "id": "prt_m0", "text": "Run the tests and fix what fails."}]}]})
while metric("evolve_hud_prompt_seconds_count", 'work="warmup"') is None:
    time.sleep(0.1)

COUNT = "evolve_hud_prompt_seconds_count"
syncs = asked = carried = shown = rejected = 0
latencies, answer_times, plain_times = [], [], []
for path in files:
    messages = json.load(open(path))["messages"]
    sid = messages[0]["info"]["sessionID"]
    sent, before = 0, set()
    for i, message in enumerate(messages):
        if not any(p.get("type") == "tool" for p in message.get("parts", [])):
            continue
        questions = metric(COUNT, 'work="hud"') or 0.0
        started = time.monotonic()
        view = call("POST", "/v1/hud/sync", {"session_id": sid, "messages": messages[sent:i + 1],
                                              "full": sent == 0, "wait_ms": wait_ms})
        answered = time.monotonic() - started
        pending = state(view) == "pending"
        sent, syncs = i + 1, syncs + 1
        first = answered if findings(view["hud"]) - before else None
        at_answer = first is not None
        while state(view) == "pending" and time.monotonic() - started < 120:
            time.sleep(0.02)
            view = call("GET", f"/v1/hud/{sid}")
            if first is None and findings(view["hud"]) - before:
                first = time.monotonic() - started
        time.sleep(0.05)
        delta = (metric(COUNT, 'work="hud"') or 0.0) - questions
        print(f"{path.rsplit('/', 1)[-1]} message {i}: answered in {answered:.3f} s, {state(view)}, "
              f"{delta:.0f} question(s), finding at {first}", file=sys.stderr)
        # A question was raised: still pending at the answer, a generation
        # counted, or a finding new since the last step.
        if pending or delta > 0 or first is not None:
            asked += 1
            answer_times.append(answered)
            if state(view) == "ready" and first is not None:
                shown += 1
                latencies.append(first)
                carried += at_answer
            elif state(view) == "rejected":
                rejected += 1
        else:
            plain_times.append(answered)
        before = findings(view["hud"])

print("| model | wait_ms | syncs | questions | shown | rejected | the sync's answer held the finding "
      "| sync to finding p50 / p90 | sync answer, questions: p50 / max | longest sync without a question | each (s) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
print(f"| {model} | {wait_ms} | {syncs} | {asked} | {shown} | {rejected} | {carried}/{asked} "
      f"| {quantile(latencies, 0.5):.2f} s / {quantile(latencies, 0.9):.2f} s "
      f"| {quantile(answer_times, 0.5):.2f} s / {max(answer_times, default=float('nan')):.2f} s "
      f"| {max(plain_times, default=float('nan')) * 1000:.0f} ms | {' '.join(f'{x:.2f}' for x in sorted(latencies))} |")
PY
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | grep '^#' >&2
  exit 2
  ;;
esac
