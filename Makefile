# make test: installs what is missing (system packages, a .venv with vkt and its test dependencies),
#            then runs the test suite with the Khronos validation layer on.
# make demo: the same set-up, then the main job: a small network trained on the digits (examples/digits.py),
#            and the fused matmul + bias + relu against NumPy (benchmarks/demo.py), on the best adapter.
# make fuzz: the differential fuzz tests (tests/test_fuzz.py) with the long Hypothesis profile.
# make asan: the extension built with AddressSanitizer and UBSan into build/asan, the suite run on it.
# A second run skips the steps that are done.

PY := .venv/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SYS_PKGS := gcc g++ make cmake libvulkan-dev glslang-dev spirv-tools mesa-vulkan-drivers vulkan-validationlayers
SOURCES := $(shell find csrc shaders python -type f \( -name '*.c' -o -name '*.h' -o -name '*.comp' \
             -o -name '*.glsl' -o -name '*.py' \)) setup.py pyproject.toml

# glslang 15 compiles GL_NV_cooperative_matrix2 (float16 products on NVIDIA's tensor cores through
# workgroup-scope matrices); Debian 12's glslang 12 does not. Built once from Debian 13's source (fetched by
# apt-get from the archive this machine's apt already uses: scripts/fetch-glslang.sh), static, into
# build/glslang, which setup.py links when it is there. Without it (no network), vkt links the system's
# glslang and those products take the older tensor-core shader.
GLSLANG_VERSION := 15.1.0+1.4.309.0
GLSLANG_SHA256 := 180f17ea51e6b71bf57b9e0fea78ba3ecd76e3ec8e4c91f0771b922eb22bf4b2

ASAN := build/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g
ASAN_TESTS ?= tests

.PHONY: test demo bench setup system clean fuzz asan

# The op and autograd tests run a second time with fusion off: both paths must give the same answers.
UNFUSED_TESTS = tests/test_ops.py tests/test_elementwise_more.py tests/test_autograd_ops.py tests/test_autograd_more.py \
                tests/test_fuzz_autograd.py

test: .venv/installed
	VKT_VALIDATION=1 $(PY) -m pytest -q tests
	VKT_FUSION=0 VKT_VALIDATION=1 $(PY) -m pytest -q $(UNFUSED_TESTS)

fuzz: .venv/installed
	VKT_FUZZ=long VKT_VALIDATION=1 $(PY) -m pytest -q --hypothesis-show-statistics tests/test_fuzz.py

# A copy of the package holds the sanitized _C, so the in-place build stays as it is. Python itself is
# not instrumented, so gcc's libasan is preloaded; its leak check is off (Python leaks at exit by design).
# A report aborts the run; --capture=sys leaves file descriptor 2 alone, so the report is seen.
asan: .venv/installed
	CFLAGS="$(ASAN_FLAGS)" LDFLAGS="$(ASAN_FLAGS)" \
	  $(PY) setup.py -q build_ext --force --build-lib $(ASAN)/lib --build-temp $(ASAN)/temp
	rm -rf $(ASAN)/pkg && mkdir -p $(ASAN)/pkg && cp -r python/vkt $(ASAN)/pkg/
	rm -f $(ASAN)/pkg/vkt/_C*.so && cp $(ASAN)/lib/vkt/_C*.so $(ASAN)/pkg/vkt/
	PYTHONPATH=$(ASAN)/pkg LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(PY) -m pytest -q -p no:cacheprovider --capture=sys $(ASAN_TESTS)

demo: .venv/installed
	$(PY) examples/digits.py
	$(PY) benchmarks/demo.py

bench: .venv/installed
	$(PY) benchmarks/bench.py

setup: .venv/installed

system:
	@missing=$$(for p in $(SYS_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	python3 -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' \
	  || missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

.venv/bin/python: | system
	python3 -m venv .venv

build/glslang/done: | system
	@rm -rf build/glslang build/glslang.log && mkdir -p build
	@echo "building glslang 15 into build/glslang (once, about 2 minutes)"
	@if ! scripts/build-glslang.sh build/glslang $(GLSLANG_VERSION) $(GLSLANG_SHA256); then \
	  echo "warning: glslang 15 could not be built (build/glslang.log); vkt links the system's glslang 12"; \
	  rm -rf build/glslang; \
	fi
	@mkdir -p build/glslang && touch $@

.venv/installed: $(SOURCES) build/glslang/done | system .venv/bin/python
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e '.[test,demo]'
	touch $@

clean:
	rm -rf build .venv python/vkt/*.so *.egg-info python/*.egg-info
