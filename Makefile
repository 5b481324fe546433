# Spinet's two everyday commands:
#   make demo   installs what is missing, builds (release) and renders the demo piece
#   make test   installs what is missing and runs the whole test suite
# and, while working on it, the faster tiers of the tests:
#   make unit   the Swift unit suites only: no release or plugin build, no command tests (about 2 min)
#   make check  the unit and command tests (the command tests run the release build)
# and, to install it like any Linux program (see README, "Install"):
#   make install [PREFIX=/usr/local] [DESTDIR=...]   make uninstall   make deb
SWIFT ?= swift
OUT ?= out
# seconds per fuzz target in `make test` (scripts/fuzz.sh runs them longer)
FUZZ_SECONDS ?= 60
# The one release build, for `make demo`, `make test` and what is installed:
# the Swift runtime is linked in (an installed spinet needs no toolchain),
# no $$ORIGIN rpath (nothing is loaded from beside the binary), and every
# symbol bound at start (-z now), so that no first call on the audio thread
# goes through the dynamic linker's lazy binding.
RELEASE_FLAGS = -c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now

.PHONY: deps demo build release unit check test fuzz sanitize bench clean install uninstall dist dist-if-stale deb
.PHONY: plugins install-plugins plugin-tests plugins-clap plugin-tests-clap install-plugins-clap uninstall-plugins-clap

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build $(RELEASE_FLAGS)

demo: release
	@mkdir -p $(OUT)
	.build/release/spinet render demo/spinet-demo.mid -o $(OUT)/spinet-demo.wav --force
	@echo "Wrote $(OUT)/spinet-demo.wav"

# The unit tier: every Swift unit suite on the debug build, without the
# suites that run the built command, a server or a plugin host (the command
# tests, the JACK suite, the LV2 and CLAP plugins under their hosts).
unit: deps
	$(SWIFT) test --skip SpinetCommandTests --skip SpinetJACKTests --skip SpinetLV2Tests --skip SpinetCLAPTests

# The fast tier: the unit suites and the end-to-end command tests
# (Tests/SpinetCommandTests), which run the release build's spinet and
# spinet-rtcheck, the binaries that are installed (SPINET_BIN; a plain
# `swift test` runs .build/debug/spinet). No VM, fuzzers or sanitizers.
SPINET_RELEASE_BIN = $(CURDIR)/.build/release/spinet

check: release
	@scripts/install-deps.sh $(TEST_SERVER_DEPS)
	SPINET_BIN=$(SPINET_RELEASE_BIN) $(SWIFT) test --skip SpinetJACKTests
	SPINET_BIN=$(SPINET_RELEASE_BIN) SWIFT=$(SWIFT) scripts/jack-suite.sh

# The full tier, what CI runs (.ci/run): the fast tier, then the install
# checks, the live system tests inside a small VM with a real ALSA kernel
# (scripts/alsa-vm; about 6 minutes; the release build, as a musician runs
# it: the emulated guest is 20-60x slower than the host, and the effects'
# SIMD code is slow unoptimized), the six fuzzers (FUZZ_SECONDS each,
# after about 2 minutes building them the first time) and the suites under
# AddressSanitizer and ThreadSanitizer (about 20 minutes on two cores).
test: check
	@scripts/install-deps.sh $(INSTALL_TEST_DEPS)
	@scripts/install-deps.sh systemd >/dev/null 2>&1 || echo "spinet: systemd did not install here (a container?): the unit check is skipped"
	MAKE="$(MAKE)" SWIFT=$(SWIFT) scripts/install-tests.sh
	SPINET_BIN=$(SPINET_RELEASE_BIN) scripts/system-tests.sh
	scripts/fuzz.sh $(FUZZ_SECONDS)
	SWIFT=$(SWIFT) scripts/sanitizers.sh all

fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

sanitize: deps
	SWIFT=$(SWIFT) scripts/sanitizers.sh all

# ---------------------------------------------------------------------------
# Plugins (issue 17): `make plugins` builds the LV2 bundle (plugins-lv2) and
# the CLAP plugin (plugins-clap) into .build/plugins/.
plugins: plugins-lv2 plugins-clap
install-plugins: install-plugins-lv2 install-plugins-clap
plugin-tests: plugin-tests-clap
check: plugin-tests-clap

# .build/plugins/spinet.clap (+ SoundFonts/ beside it) and the test host clap-host.
plugins-clap: deps
	SWIFT=$(SWIFT) scripts/build-plugin.sh clap

# Tests/SpinetCLAPTests against the built plugin, through Tests/PluginHosts/clap-host.c
# (the suite is disabled unless SPINET_PLUGIN_DIR is set; this sets it). Part
# of `make check`, so of `make test`.
# TimGM6mb is the second font of the font-change test.
plugin-tests-clap: plugins-clap release
	@scripts/install-deps.sh timgm6mb-soundfont
	SPINET_PLUGIN_DIR=$(CURDIR)/.build/plugins SPINET_BIN=$(SPINET_RELEASE_BIN) $(SWIFT) test --filter SpinetCLAPTests

# Installs spinet.clap and its default SoundFont as <dir>/Spinet/spinet.clap and
# <dir>/Spinet/SoundFonts/sf_GMbank.sf2 (CLAP hosts search their folders
# recursively): <dir> is $(DESTDIR)$(PREFIX)/lib/clap when PREFIX is given
# (command line or environment), else ~/.clap.
CLAPDIR = $(if $(filter file,$(origin PREFIX)),$(HOME)/.clap,$(DESTDIR)$(PREFIX)/lib/clap)
install-plugins-clap:
	@test -f .build/plugins/spinet.clap || { echo "spinet: run make plugins-clap first"; exit 1; }
	install -d $(call sh,$(CLAPDIR)/Spinet/SoundFonts)
	install -m 755 .build/plugins/spinet.clap $(call sh,$(CLAPDIR)/Spinet/spinet.clap)
	$(STRIP) --strip-unneeded $(call sh,$(CLAPDIR)/Spinet/spinet.clap)
	install -m 644 .build/plugins/SoundFonts/sf_GMbank.sf2 $(call sh,$(CLAPDIR)/Spinet/SoundFonts/sf_GMbank.sf2)
	@echo Installed $(call sh,$(CLAPDIR)/Spinet/spinet.clap)

uninstall-plugins-clap:
	rm -f $(call sh,$(CLAPDIR)/Spinet/spinet.clap) $(call sh,$(CLAPDIR)/Spinet/SoundFonts/sf_GMbank.sf2)
	rmdir $(call sh,$(CLAPDIR)/Spinet/SoundFonts) $(call sh,$(CLAPDIR)/Spinet) 2>/dev/null || true

# Spinet's LV2 in Ardour 7, headless (scripts/ardour-test.sh): installs
# Debian's ardour if missing (about 80 s on a fresh machine; skipped, saying
# so, when it cannot be installed), then 20-40 s. Part of `make test`.
.PHONY: ardour-test
ardour-test: plugins-lv2
	scripts/ardour-test.sh
test: ardour-test

bench: release
	@scripts/install-deps.sh fluidsynth openttd-openmsx
	.build/release/spinet bench $(BENCH_FILES)

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan $(OUT)

# ---------------------------------------------------------------------------
# Installing. The man pages and completions are generated from the built
# command's own help (swift-argument-parser's generate-manual, the tool its
# plugin runs, and --generate-completion-script), so they cannot drift from
# its options;
# nothing generated is committed. They go to .build/dist/.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/spinet
FONTDIR ?= $(DATADIR)/spinet/SoundFonts
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
# The LV2 and CLAP plugins are installed apart, by `make install-plugins`
# (into ~/.lv2 and ~/.clap, or under PREFIX): see the plugin targets below.
VERSION := $(shell sed -n 's/.*version: "\(.*\)".*/\1/p' Sources/spinet/Spinet.swift)
MAN_PAGES = spinet.1 spinet-render.1 spinet-play.1 spinet-ports.1 spinet-bench.1
DIST = .build/dist
STRIP ?= strip
# What tools `make test` needs for scripts/install-tests.sh (systemd is tried
# on its own: it may not install in a container; the test then says so).
# The JACK tests run in a test process of their own: beside the other suites
# (a LiveSession test in the same process) the PipeWire rate-change test hung
# once and failed once, and alone it passed every time.
# The JACK tests also run Spinet under a private headless PipeWire (through
# pw-jack); they skip, saying so, where it is missing. pipewire-alsa is not
# among them: it would make PipeWire every program's ALSA default.
TEST_SERVER_DEPS = pipewire pipewire-bin pipewire-jack
INSTALL_TEST_DEPS = man-db groff-base bash-completion dpkg-dev lintian

# Paths may hold spaces, quotes and other characters the shell or make
# would split on (PREFIX="/opt/my apps"): every path in an install or
# uninstall recipe is given to the shell as one word by `sh` (single-quoted,
# a ' in it written '\''), and no list of paths is split by make.
sh = '$(subst ','\'',$(1))'

# Every file `make install` writes, as DIR/NAME: the variable of its
# directory (under $(DESTDIR)), then its name; `installed` makes the path.
# The manual's pages go beside the README (DOCDIR/docs/), where its links lead.
DOC_PAGES = $(sort $(notdir $(wildcard docs/*.md)))
INSTALLED = BINDIR/spinet FONTDIR/sf_GMbank.sf2 $(addprefix MANDIR/man1/,$(MAN_PAGES)) \
	BASHCOMPDIR/spinet ZSHCOMPDIR/_spinet FISHCOMPDIR/spinet.fish \
	USERUNITDIR/spinet.service DOCDIR/README.md DOCDIR/SoundFonts.md $(addprefix DOCDIR/docs/,$(DOC_PAGES))
installed = $(call sh,$(DESTDIR)$($(firstword $(subst /, ,$(1))))/$(patsubst $(firstword $(subst /, ,$(1)))/%,%,$(1)))

# The man pages and completions, generated from the release build.
dist: release
	@SWIFT=$(SWIFT) scripts/generate-dist.sh $(DIST)

# `sudo make install` after `make dist` builds nothing as root (root's PATH
# may not even have swift): it runs `make dist` only when there is no build
# yet or a source is newer than it.
dist-if-stale:
	@if [ ! -x .build/release/spinet ] || [ ! -f $(DIST)/man/spinet.1 ] || \
	    [ -n "$$(find Sources Package.swift scripts/generate-dist.sh -newer $(DIST)/man/spinet.1 -print -quit)" ]; then \
	  $(MAKE) dist; fi

install: dist-if-stale
	install -d $(foreach d,BINDIR FONTDIR MANDIR BASHCOMPDIR ZSHCOMPDIR FISHCOMPDIR USERUNITDIR DOCDIR,$(call sh,$(DESTDIR)$($(d)))) \
		$(call sh,$(DESTDIR)$(MANDIR)/man1) $(call sh,$(DESTDIR)$(DOCDIR)/docs)
	install -m 755 .build/release/spinet $(call installed,BINDIR/spinet)
	$(STRIP) --remove-section=.comment --remove-section=.note $(call installed,BINDIR/spinet)
	install -m 644 SoundFonts/sf_GMbank.sf2 $(call installed,FONTDIR/sf_GMbank.sf2)
	install -m 644 $(addprefix $(DIST)/man/,$(MAN_PAGES)) $(call sh,$(DESTDIR)$(MANDIR)/man1/)
	install -m 644 $(DIST)/completions/spinet.bash $(call installed,BASHCOMPDIR/spinet)
	install -m 644 $(DIST)/completions/_spinet $(call installed,ZSHCOMPDIR/_spinet)
	install -m 644 $(DIST)/completions/spinet.fish $(call installed,FISHCOMPDIR/spinet.fish)
	@# The unit names the binary in one Environment= line (a path with spaces or
	@# quotes stays one word there); systemd unescapes \\ and \" and reads %% as %.
	bin=$$(printf '%s' $(call sh,$(BINDIR)/spinet) | sed 's/[\\"]/\\&/g; s/%/%%/g'); \
	  SPINET_UNIT_BIN="$$bin" awk '{ while ((i = index($$0, "@SPINET@")) > 0) $$0 = substr($$0, 1, i - 1) ENVIRON["SPINET_UNIT_BIN"] substr($$0, i + 8); print }' \
	  packaging/spinet.service.in > $(call installed,USERUNITDIR/spinet.service)
	chmod 644 $(call installed,USERUNITDIR/spinet.service)
	install -m 644 README.md $(call installed,DOCDIR/README.md)
	install -m 644 SoundFonts/README.md $(call installed,DOCDIR/SoundFonts.md)
	install -m 644 $(addprefix docs/,$(DOC_PAGES)) $(call sh,$(DESTDIR)$(DOCDIR)/docs/)
	@echo Installed spinet $(VERSION) under $(call sh,$(DESTDIR)$(PREFIX))

# Removes exactly what `make install` wrote (same PREFIX and DESTDIR), and
# the directories that are Spinet's own (when empty); nothing else.
uninstall:
	rm -f $(foreach f,$(INSTALLED),$(call installed,$(f)))
	rmdir $(call sh,$(DESTDIR)$(FONTDIR)) $(call sh,$(DESTDIR)$(DATADIR)/spinet) $(call sh,$(DESTDIR)$(DOCDIR)/docs) $(call sh,$(DESTDIR)$(DOCDIR)) 2>/dev/null || true

# A Debian package of the same files under /usr: out/spinet_VERSION-1_ARCH.deb.
deb: dist
	@scripts/install-deps.sh dpkg-dev
	@SWIFT=$(SWIFT) VERSION=$(VERSION) OUT=$(OUT) scripts/make-deb.sh

# ---------------------------------------------------------------------------
# The LV2 plugin (issue 17): `make plugins-lv2` builds the bundle
# .build/plugins/spinet.lv2/ and the headless test host .build/plugins/lv2-host
# (scripts/build-plugin.sh lv2); `make install-plugins-lv2` copies the bundle to
# ~/.lv2, or to $(DESTDIR)$(PREFIX)/lib/lv2 when PREFIX is given;
# `make plugin-tests-lv2` runs Tests/SpinetLV2Tests on the built bundle (part
# of `make check`, so of `make test`).
LV2_DEPS = lv2-dev liblilv-dev lilv-utils sordi jalv timgm6mb-soundfont
LV2_BUNDLE = .build/plugins/spinet.lv2
ifeq ($(origin PREFIX),file)
LV2_INSTALL_DIR ?= $(HOME)/.lv2
else
LV2_INSTALL_DIR ?= $(PREFIX)/lib/lv2
endif

.PHONY: plugins plugins-lv2 install-plugins install-plugins-lv2 uninstall-plugins-lv2 plugin-tests plugin-tests-lv2

plugins: plugins-lv2
install-plugins: install-plugins-lv2
plugin-tests: plugin-tests-lv2
check: plugin-tests-lv2

plugins-lv2: deps
	@scripts/install-deps.sh $(LV2_DEPS)
	SWIFT=$(SWIFT) scripts/build-plugin.sh lv2

# The bundle's files: what install-plugins-lv2 copies and uninstall-plugins-lv2 removes.
LV2_DATA = manifest.ttl spinet.ttl
LV2_LIBRARY = spinet_lv2.so
LV2_FONTS = SoundFonts/sf_GMbank.sf2 SoundFonts/README.md
LV2_DEST = $(DESTDIR)$(LV2_INSTALL_DIR)/spinet.lv2

install-plugins-lv2:
	@test -f $(LV2_BUNDLE)/spinet_lv2.so || $(MAKE) plugins-lv2
	install -d $(call sh,$(LV2_DEST)/SoundFonts)
	install -m 644 $(addprefix $(LV2_BUNDLE)/,$(LV2_DATA)) $(call sh,$(LV2_DEST)/)
	install -m 755 $(addprefix $(LV2_BUNDLE)/,$(LV2_LIBRARY)) $(call sh,$(LV2_DEST)/)
	install -m 644 $(addprefix $(LV2_BUNDLE)/,$(LV2_FONTS)) $(call sh,$(LV2_DEST)/SoundFonts/)
	@echo Installed the LV2 plugin in $(call sh,$(LV2_DEST))

# The bundle's own files, then its directories if empty: never rm -r (a
# PREFIX with a space once made that `rm -rf /opt/my apps/...`).
uninstall-plugins-lv2:
	rm -f $(foreach f,$(LV2_DATA) $(LV2_LIBRARY) $(LV2_FONTS),$(call sh,$(LV2_DEST)/$(f)))
	rmdir $(call sh,$(LV2_DEST)/SoundFonts) $(call sh,$(LV2_DEST)) 2>/dev/null || true

# The release spinet is the one the parity test compares the plugin with.
plugin-tests-lv2: plugins-lv2 release
	SPINET_PLUGIN_DIR=$(CURDIR)/.build/plugins SPINET_BIN=$(SPINET_RELEASE_BIN) $(SWIFT) test --filter SpinetLV2Tests
