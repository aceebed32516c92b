# shardsim — two entry points that work on a fresh Debian machine as root:
#   make demo   installs what is missing, builds, runs the default scenario
#   make test   installs what is missing, builds, runs every test through ctest, prints the validation table
BUILD ?= build
JOBS ?= $(shell nproc)
DEMO ?= scenarios/frontier_gpt20b_zero3.yaml

# Debian packages the build needs (checked one by one; apt-get runs only when something is missing).
# hipcc/libamdhip64-dev compile the kernels for AMD MI250X; nvcc (CUDA, for H100) is used when on the machine.
PACKAGES := g++ make cmake ninja-build pkg-config libyaml-cpp-dev libboost-program-options-dev \
            libeigen3-dev libcsv-dev nlohmann-json3-dev libfmt-dev libgtest-dev libzfp-dev hipcc libamdhip64-dev libsimgrid-dev \
            python3-matplotlib python3-pandas jupyter-nbconvert python3-ipykernel libopenmpi-dev openmpi-bin

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build demo test test-sanitize notebooks fuzz bench validate-gpu gpu-bundle clean

all: build

deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# UNITY=ON compiles eight sources at a time (as the sanitizer build below does): a clean build in about three
# quarters of the time, for CI's clean clones; an edit then recompiles its whole batch, so it is off by default.
UNITY ?= OFF
$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=$(UNITY) -DCMAKE_UNITY_BUILD_BATCH_SIZE=8

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/shardsim run $(DEMO)

# The validation table (predicted vs published measurements: figures, not a gate; a row that crashes or is
# refused fails the tests), then every test.
test: build
	./$(BUILD)/shardsim validate
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) test-sanitize

# The notebooks (notebooks/*.ipynb) executed headless on data the CLI writes; figures in $(BUILD)/notebooks/figures.
# `make test` runs them too (the ctest Notebooks.WriteTheirFigures).
notebooks: build
	/usr/bin/python3 notebooks/run_notebooks.py --shardsim $(BUILD)/shardsim --out $(BUILD)/notebooks

# The tests once more under AddressSanitizer and UndefinedBehaviorSanitizer, in a second build folder without the
# GPU kernels (their CPU references are the same code); the ones that re-run whole validation sets are left to
# the plain build above, for time.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_SKIP := ^(Notebooks\.|Sweep\.UnderMpirun|Validate\.|Calibrate\.|Readme\.|HostHooks\.Megatron|DeviceFit\.A100Is|DeviceFit\.AFitToTrainingRuns|SimGridEngine\.AgreesWith|SimGridEngine\.NodeSymmetry)
# A unity build (eight sources per compilation): the sanitizer build is CI's largest step and most of its time is
# spent parsing the same headers; unity compilation cuts it by a third (a source that clashes with its neighbours
# opts out with SKIP_UNITY_BUILD_INCLUSION).
test-sanitize: deps
	cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DSHARDSIM_SANITIZE=ON \
	  -DSHARDSIM_CUDA=OFF -DSHARDSIM_HIP=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j $(JOBS) -E '$(SANITIZE_SKIP)'

# libFuzzer on every input reader (not part of `make test`): a clang build with the fuzzer and the sanitizers, each
# target run for FUZZ_SECONDS from its seed corpus (tests/fuzz/fuzz_entries.cpp names the folders). A failure leaves
# its input in $(FUZZ_BUILD)/findings/<target>/: fix it, and keep the input in tests/fuzz/regressions/<target>/,
# which the test FuzzCorpus replays.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := scenario deepspeed hf_config calibration validation_set nccl_tests npy
fuzz: deps
	@command -v clang++ >/dev/null || $(SUDO) apt-get install -y -qq clang libclang-rt-dev
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DSHARDSIM_FUZZ=ON \
	  -DSHARDSIM_WERROR=OFF -DSHARDSIM_CUDA=OFF -DSHARDSIM_HIP=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/findings/$$t; \
	  seeds=$$(sed -n "s|.*{\"$$t\", [a-z_]*, {\(.*\)}}.*|\1|p" tests/fuzz/fuzz_entries.cpp | tr -d '",'); \
	  echo "fuzz_$$t ($(FUZZ_SECONDS) s) from $$seeds"; \
	  ASAN_OPTIONS=detect_leaks=0 ./$(FUZZ_BUILD)/tests/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
	    -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/findings/$$t/ \
	    $(FUZZ_BUILD)/corpus/$$t $$seeds 2>&1 | grep -E "^stat::number_of_executed_units|^stat::new_units_added|ERROR|SUMMARY|Test unit written" || true; \
	done

bench: build
	./$(BUILD)/shardsim bench
	./$(BUILD)/shardsim bench --simgrid

# On a machine with an NVIDIA GPU: parity tests, the harness (and PyTorch baselines), results and calibration
# under validate/results/.
validate-gpu:
	BUILD=$(BUILD) sh validate/run_gpu.sh

# For a GPU node without the build dependencies (cluster compute nodes, containers): built here with nvcc, a
# directory with the programs and the libraries they need; on the node, `sh $(BUILD)/gpu-bundle/run.sh OUTDIR`
# does what validate-gpu does. See validate/bundle_gpu.sh.
gpu-bundle: deps $(BUILD)/build.ninja
	BUILD=$(BUILD) sh validate/bundle_gpu.sh

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
