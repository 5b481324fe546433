# Spinet's two everyday commands:
#   make demo   installs what is missing, builds (release) and renders the demo piece
#   make test   installs what is missing and runs the whole test suite
SWIFT ?= swift
OUT ?= out
# seconds per fuzz target in `make test` (scripts/fuzz.sh runs them longer)
FUZZ_SECONDS ?= 60

.PHONY: deps demo build release test fuzz sanitize bench clean

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

# The unit and end-to-end suites, the live system tests inside a small VM
# with a real ALSA kernel (scripts/alsa-vm; about 6 minutes; a release
# build, as a musician runs it: the emulated guest is 20-60x slower than the
# host, and the effects' SIMD code is slow unoptimized), the five fuzzers
# (FUZZ_SECONDS each, after about 2 minutes building them the first time)
# and the suites under AddressSanitizer and ThreadSanitizer (about 20
# minutes on two cores).
test: build
	$(SWIFT) test
	$(SWIFT) build -c release
	SPINET_BIN=$(CURDIR)/.build/release/spinet scripts/system-tests.sh
	scripts/fuzz.sh $(FUZZ_SECONDS)
	SWIFT=$(SWIFT) scripts/sanitizers.sh all

fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

sanitize: deps
	SWIFT=$(SWIFT) scripts/sanitizers.sh all

bench: release
	@scripts/install-deps.sh fluidsynth openttd-openmsx
	.build/release/spinet bench $(BENCH_FILES)

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan $(OUT)
