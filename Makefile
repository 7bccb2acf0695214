# make test: installs what is missing (system packages, a .venv with vkt and its test dependencies),
#            then runs the test suite with the Khronos validation layer on.
# make demo: the same set-up, then the main job: benchmarks/demo.py on the best adapter.
# A second run skips the steps that are done.

PY := .venv/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SYS_PKGS := gcc make libvulkan-dev glslang-dev spirv-tools mesa-vulkan-drivers vulkan-validationlayers
SOURCES := $(shell find csrc shaders python -type f \( -name '*.c' -o -name '*.h' -o -name '*.comp' \
             -o -name '*.glsl' -o -name '*.py' \)) setup.py pyproject.toml

.PHONY: test demo bench setup system clean

test: .venv/installed
	VKT_VALIDATION=1 $(PY) -m pytest -q tests

demo: .venv/installed
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

.venv/installed: $(SOURCES) | system .venv/bin/python
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -e '.[test]'
	touch $@

clean:
	rm -rf build .venv python/vkt/*.so *.egg-info python/*.egg-info
