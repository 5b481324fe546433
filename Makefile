# Spinet's two everyday commands:
#   make demo   installs what is missing, builds (release) and renders the demo piece
#   make test   installs what is missing and runs the whole test suite
SWIFT ?= swift
OUT ?= out

.PHONY: deps demo build release test bench clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

demo: release
	@mkdir -p $(OUT)
	.build/release/spinet render demo/spinet-demo.mid -o $(OUT)/spinet-demo.wav --force
	@echo "Wrote $(OUT)/spinet-demo.wav"

# The unit and end-to-end suites, then the live system tests inside a small
# VM with a real ALSA kernel (scripts/alsa-vm; about 4 minutes).
test: build
	$(SWIFT) test
	SPINET_BIN=$(CURDIR)/.build/debug/spinet scripts/system-tests.sh

bench: release
	@scripts/install-deps.sh fluidsynth openttd-openmsx
	.build/release/spinet bench $(BENCH_FILES)

clean:
	rm -rf .build $(OUT)
