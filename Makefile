# syncroll front door. `make run` and `make test` each do all the set-up on a fresh Debian 12
# machine: install missing packages (deps), configure and build (build), then run.

BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# Debian packages the build and tests need (make deps installs the missing ones).
DEPS    := gcc make cmake pkg-config libcurl4-openssl-dev libcjson-dev check libmicrohttpd-dev \
           libxxhash-dev libzstd-dev libxml2-utils python3 python3-numpy python3-yaml \
           python3-pytest python3-venv python3-setuptools python3-pip
# Extra packages for fuzzing (clang's libFuzzer runtime).
FUZZ_DEPS := clang libclang-rt-14-dev libomp-dev
FUZZ_SECONDS ?= 60
FUZZ_BUILD ?= build-fuzz
# Seconds per fuzz target in the CI smoke (make fuzz-smoke, run by .ci/run).
FUZZ_SMOKE_SECONDS ?= 10

SYNCROLL := $(BUILD)/harness/syncroll
MAKEFLAGS += --no-print-directory

.PHONY: all deps fuzz-deps build test run bench fuzz fuzz-smoke sanitize tsan format clean help docs \
        report-shot mutate

all: build

help:
	@echo "make run       install deps, build, run scenarios/nightly into reports/"
	@echo "make test      install deps, build, run every test (ctest)"
	@echo "make bench     run the benchmarks into reports/bench/latest.{txt,json}; print the targets table"
	@echo "make fuzz      build and run every fuzz target for FUZZ_SECONDS (default 60) each"
	@echo "make fuzz-smoke  the same for FUZZ_SMOKE_SECONDS (default 10) each, as CI runs it"
	@echo "make mutate    mutation run of the suite (tests/mutants/*.json) into reports/mutate/"
	@echo "make sanitize  build with address+undefined sanitizers into build-sanitize and run ctest"
	@echo "make tsan      build with ThreadSanitizer into build-tsan, run the engine, sync, client, block cache and rollout suites"
	@echo "make soak      run scenarios/soak/ for SOAK_SECONDS (default 600) each, alone (-j 1)"
	@echo "make memcheck  unit suites and smoke scenarios (harness and engines) under valgrind"
	@echo "make deps      install missing Debian packages (as root), or print the command"
	@echo "make format    clang-format every C file in place"
	@echo "make docs      regenerate docs/reference/{errors,faults,checks}.md from the source tables"
	@echo "make report-shot  render reports/latest/report.html to report.png (headless Chromium)"

# Installs what is missing with apt-get when root; otherwise prints the exact command and fails.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else \
	  echo "missing Debian packages:$$missing"; \
	  echo "run: sudo apt-get update && sudo apt-get install -y$$missing"; exit 1; \
	fi
endef

deps:
	$(call install_missing,$(DEPS))

fuzz-deps:
	$(call install_missing,$(FUZZ_DEPS))

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The nightly suite against the built-in mock engines; the reports go to reports/<run>/.
run: build
	@$(SYNCROLL) run -j$(JOBS) scenarios/nightly

docs: build
	@sh tests/docs_generated.sh $(SYNCROLL) . --write

bench: build
	@sh bench/run.sh $(BUILD)

# The fuzz build needs the project's libraries (deps) as well as clang's runtimes (fuzz-deps).
# fuzz/run.sh fails on any crash, leak, timeout or sanitizer report.
fuzz: deps fuzz-deps
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DSYNCROLL_BUILD_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_all
	@sh fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# CI's guard that the fuzz build and targets do not rot: every target, a few seconds each.
fuzz-smoke:
	@$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)

# The suite's own mutation run (README "How the suite is checked"), not part of make test: each
# mutant of tests/mutants/mutants.json and of the blind batch tests/mutants/blind.json applied
# alone to a scratch copy in build-mutate/, rebuilt, and run through its ctest entries;
# reports/mutate/latest.json and reports/mutate/blind.json. MUTATE_ARGS passes options (e.g.
# MUTATE_ARGS="--only splice": a list without the module runs nothing). It builds and tests on
# 2 jobs, niced.
MUTATE_ARGS ?=
MUTANT_LISTS ?= tests/mutants/mutants.json tests/mutants/blind.json
mutate: deps
	nice -n 10 python3 tests/mutate.py $(addprefix --mutants ,$(MUTANT_LISTS)) $(MUTATE_ARGS)

sanitize: deps
	@cmake -S . -B build-sanitize -DSYNCROLL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build build-sanitize -j$(JOBS)
	cd build-sanitize && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j$(JOBS)

# ThreadSanitizer over the suites whose threads share state: the mock engine (libmicrohttpd's
# threads, the weight-sync receiver), the sync side and the client. OpenMP teams are capped at one
# thread (OMP_THREAD_LIMIT=1): libgomp is not built with TSan, so its barriers are invisible to it
# and every parallel region would report races that are not there; the OpenMP paths (apply,
# publish, threaded splice) are covered by make sanitize and their own tests instead. Any report
# stops the process (halt_on_error), so it fails its test.
TSAN_TESTS ?= ^unit[.](engine|sync|client|block_cache|rollout)
tsan: deps
	@cmake -S . -B build-tsan -DSYNCROLL_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-tsan -j$(JOBS)
	cd build-tsan && OMP_THREAD_LIMIT=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure -j$(JOBS) -R '$(TSAN_TESTS)'

# Renders a run's report.html to report.png beside it with headless Chromium (installed here
# only: nothing else needs it). REPORT_RUN names another run folder.
REPORT_RUN ?= reports/latest
report-shot:
	$(call install_missing,chromium)
	@test -f $(REPORT_RUN)/report.html || { echo "no $(REPORT_RUN)/report.html: run make run first"; exit 1; }
	@d=$$(mktemp -d); \
	chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
	  --disable-component-update --disable-sync --no-first-run --user-data-dir="$$d" \
	  --hide-scrollbars --window-size=1280,2000 --screenshot="$(abspath $(REPORT_RUN))/report.png" \
	  "file://$(abspath $(REPORT_RUN))/report.html" >"$$d.log" 2>&1; rc=$$?; \
	rm -rf "$$d"; \
	if [ $$rc -ne 0 ] || [ ! -s "$(REPORT_RUN)/report.png" ]; then cat "$$d.log"; rm -f "$$d.log"; \
	  echo "report-shot: chromium failed ($$rc)"; exit 1; fi; \
	rm -f "$$d.log"; echo "report-shot: $(REPORT_RUN)/report.png"

format:
	clang-format -i lib/*.[ch] $$(find harness -name "*.[ch]") tests/*.[ch] bench/*.[ch] fuzz/*.c

clean:
	rm -rf $(BUILD) build-sanitize build-tsan $(FUZZ_BUILD)

# The long soak: every scenario of scenarios/soak/ for SOAK_SECONDS each, one after the other
# (-j 1: the runner's descriptor and memory samples must be the soak's own); see README
# "Reliability". The short one runs in ctest (scenarios.soak).
SOAK_SECONDS ?= 600
.PHONY: soak memcheck
soak: build
	$(SYNCROLL) run -j 1 --duration $(SOAK_SECONDS) scenarios/soak

# Unit suites and smoke scenarios (harness and engines) under valgrind memcheck
# (tests/memcheck.sh; suppressions with their reasons in tests/valgrind.supp).
memcheck: build
	$(call install_missing,valgrind)
	@sh tests/memcheck.sh $(BUILD)
