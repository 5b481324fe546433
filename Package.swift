// swift-tools-version:6.0
import PackageDescription

// The plugins are built only by the plugin build (scripts/build-plugin.sh
// sets SPINET_BUILD_PLUGINS, in their own scratch path,
// with -Xswiftc -static-stdlib): `swift build` builds every product, and the
// release build's --static-swift-stdlib cannot link a dynamic library that
// uses Foundation (it asks for the static-only lib_FoundationCShims); the
// other builds need neither the plugins nor the LV2 headers (lv2-dev). The
// CLAP glue (vendored headers) is compiled by every build all the same.
let buildPlugins = Context.environment["SPINET_BUILD_PLUGINS"] != nil
let pluginProducts: [Product] = buildPlugins ? [
    // The LV2 plugin's library (the bundle: .build/plugins/spinet.lv2).
    .library(name: "spinet_lv2", type: .dynamic, targets: ["SpinetLV2"]),
    // .build/plugins/spinet.clap
    .library(name: "spinet_clap", type: .dynamic, targets: ["SpinetCLAP"]),
] : []
let pluginTargets: [Target] = buildPlugins ? [
    // The LV2 glue in C over the core's C API; only lv2_descriptor and
    // GOMP_parallel are exported (spinet_lv2.map). The TTL is in bundle/.
    // Linked as the CLAP plugin is: -z now (no lazy binding on the audio
    // thread's first calls) and -z nodelete (a host's dlclose must not
    // unload the plugin and its libraries, since libgomp keeps a pool thread,
    // started by libfluidsynth's font loading, that would crash in unmapped code).
    .target(name: "SpinetLV2", dependencies: ["CSpinetPlugin", "SpinetPlugin"],
            exclude: ["bundle", "spinet_lv2.map"],
            linkerSettings: [
                .unsafeFlags(["-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/SpinetLV2/spinet_lv2.map",
                              "-Xlinker", "-z", "-Xlinker", "now", "-Xlinker", "-z", "-Xlinker", "nodelete"]),
            ]),
] : []

// Thread ownership is visible in the module split: SpinetEngine is the
// real-time core (no C, nothing that allocates in render); the C libraries
// stay behind shim modules (CALSA, CFluidSynth, CSndFile).

let package = Package(
    name: "Spinet",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "spinet", targets: ["spinet"]),
        .executable(name: "spinet-rtcheck", targets: ["spinet-rtcheck"]),
    ] + pluginProducts,
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(name: "CFluidSynth", pkgConfig: "fluidsynth", providers: [.apt(["libfluidsynth-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // EBU R128 loudness, for --normalize.
        .systemLibrary(name: "CEBUR128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
        // JACK (jackd2, or PipeWire's libjack): the shim wraps the variadic jack_client_open.
        .systemLibrary(name: "CJACK", pkgConfig: "jack", providers: [.apt(["libjack-jackd2-dev"])]),

        // JSON, text and number formatting shared by the modules above the engine.
        .target(name: "SpinetSupport"),
        .target(name: "SpinetMIDI"),
        .target(name: "SpinetEngine", dependencies: ["SpinetMIDI", "SpinetEffects"]),
        // Its GOMP_parallel must be in the executable's dynamic symbol table so
        // that libfluidsynth binds to it (see gomp_inline.c).
        .target(name: "CFluidSynthRealtime", linkerSettings: [
            .linkedLibrary("dl"),
            .unsafeFlags(["-Xlinker", "--export-dynamic-symbol=GOMP_parallel"]),
        ]),
        .target(name: "SpinetSoundFont", dependencies: ["SpinetEngine", "SpinetMIDI", "CFluidSynth", "CFluidSynthRealtime"]),
        .target(name: "SpinetEffects", dependencies: ["SpinetSupport"]),
        .target(name: "SpinetSynth", dependencies: ["SpinetEngine", "SpinetMIDI", "SpinetSupport"], exclude: ["PRESETS.md"]),
        .target(name: "SpinetFile", dependencies: ["SpinetEngine", "SpinetMIDI", "SpinetSupport", "CSndFile", "CEBUR128"]),
        // The settings a user writes: the config file and --channel values (no audio, no C).
        .target(name: "SpinetSettings", dependencies: ["SpinetSupport"]),
        // What every live host shares and every driver implements, below the
        // drivers: the AudioDevice and MIDIInput protocols, the timeline where
        // engine frames meet the clock, the record ring. No C library, no files.
        .target(name: "SpinetHost", dependencies: ["SpinetEngine"]),
        // ALSA only: the PCM output and the sequencer client (AudioDevice, MIDIInput).
        .target(name: "SpinetALSA", dependencies: ["CALSA", "SpinetEngine", "SpinetMIDI", "SpinetHost", "SpinetSupport"]),
        // JACK only: the client (AudioDevice) and its MIDI inputs (MIDIInput),
        // inside the JACK or PipeWire graph.
        .target(name: "SpinetJACK", dependencies: ["CJACK", "SpinetEngine", "SpinetMIDI", "SpinetHost", "SpinetSupport"]),
        // The rig every host builds on: the graph builder (settings -> engine
        // and units), the live session over any AudioDevice and MIDIInput, the
        // swappable SoundFont slot and recording. No driver in it.
        .target(name: "SpinetRig", dependencies: [
            "SpinetEngine", "SpinetEffects", "SpinetMIDI", "SpinetSoundFont", "SpinetSynth", "SpinetFile", "SpinetHost",
            "SpinetSettings", "SpinetSupport",
        ]),
        // The plugin core every plugin format wraps: one instance = one live
        // graph from the rig, driven through the C API in CSpinetPlugin.
        .target(name: "CSpinetPlugin"),
        .target(name: "SpinetPlugin", dependencies: [
            "CSpinetPlugin", "SpinetRig", "SpinetEngine", "SpinetEffects", "SpinetMIDI", "SpinetSoundFont", "SpinetSynth",
            "SpinetSettings", "SpinetSupport", "CFluidSynthRealtime",
        ]),
        // The CLAP headers (free-audio/clap 1.2.10, MIT, header-only; see Sources/CCLAP/VERSION.md).
        .target(name: "CCLAP", exclude: ["LICENSE", "VERSION.md"]),
        // The CLAP plugin: C glue (clap_entry must be a data symbol) over the
        // plugin core. Its version script exports clap_entry and GOMP_parallel only.
        .target(name: "SpinetCLAP", dependencies: ["CCLAP", "CSpinetPlugin", "SpinetPlugin"],
                exclude: ["spinet_clap.map"],
                linkerSettings: [
                    .linkedLibrary("pthread"),
                    // -z now: no lazy binding on the audio thread's first calls.
                    // -z nodelete: a host's dlclose (after a scan) must not unmap
                    // the plugin: libgomp keeps a pool thread that libfluidsynth's
                    // font loading started, and it would run in unmapped code.
                    .unsafeFlags(["-Xlinker", "-z", "-Xlinker", "now", "-Xlinker", "-z", "-Xlinker", "nodelete",
                                  "-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/SpinetCLAP/spinet_clap.map"]),
                ]),
        .executableTarget(name: "spinet", dependencies: [
            "SpinetEngine", "SpinetMIDI", "SpinetSoundFont", "SpinetSynth", "SpinetFile", "SpinetALSA", "SpinetSupport",
            "SpinetHost", "SpinetRig", "SpinetSettings", "SpinetJACK", "SpinetPlugin", "CSpinetPlugin",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Test support: counts malloc and lock calls made by the thread that asks.
        .target(name: "CRealtimeProbe", path: "Tests/CRealtimeProbe"),
        // The same counting for `spinet bench`, in its own executable: the
        // interposed malloc and lock functions stay out of `spinet`.
        .executableTarget(name: "spinet-rtcheck", dependencies: [
            "SpinetEngine", "SpinetMIDI", "SpinetSoundFont", "SpinetSynth", "SpinetFile", "SpinetTestSupport",
            "SpinetRig",
        ]),
        .target(name: "SpinetTestSupport", dependencies: ["SpinetEngine", "SpinetMIDI", "SpinetSupport", "CRealtimeProbe"], path: "Tests/SpinetTestSupport"),
        // Swift Testing traits that say which tests a run leaves out (the
        // probe's under a sanitizer, the slow ones); apart from
        // SpinetTestSupport, which spinet-rtcheck links.
        .target(name: "SpinetTestTraits", path: "Tests/SpinetTestTraits"),
        .testTarget(name: "SpinetTestSupportTests", dependencies: ["SpinetTestSupport", "CRealtimeProbe", "SpinetTestTraits"]),
        .testTarget(name: "SpinetMIDITests", dependencies: ["SpinetMIDI", "SpinetTestSupport"], exclude: ["Regressions"]),
        .testTarget(name: "SpinetEngineTests", dependencies: ["SpinetEngine", "SpinetEffects", "SpinetMIDI", "SpinetTestSupport", "SpinetTestTraits"]),
        .testTarget(name: "SpinetSoundFontTests", dependencies: ["SpinetSoundFont", "SpinetSynth", "SpinetEngine", "SpinetFile", "SpinetRig", "SpinetMIDI", "SpinetTestSupport", "SpinetSettings", "SpinetTestTraits"], exclude: ["Regressions"]),
        .testTarget(name: "SpinetSynthTests", dependencies: ["SpinetSynth", "SpinetEngine", "SpinetMIDI", "SpinetSupport", "SpinetTestSupport", "SpinetTestTraits"], exclude: ["Regressions"]),
        .testTarget(name: "SpinetSupportTests", dependencies: ["SpinetSupport"]),
        .testTarget(name: "SpinetEffectsTests", dependencies: ["SpinetEffects", "SpinetTestSupport", "SpinetTestTraits"]),
        .testTarget(name: "SpinetALSATests", dependencies: ["SpinetALSA", "SpinetMIDI", "CALSA", "SpinetHost"]),
        .testTarget(name: "SpinetRigTests", dependencies: [
            "SpinetRig", "SpinetHost", "SpinetEngine", "SpinetMIDI", "SpinetSoundFont", "SpinetSynth", "SpinetTestSupport",
            "SpinetALSA", "CRealtimeProbe", "SpinetTestTraits",
        ]),
        .testTarget(name: "SpinetJACKTests", dependencies: ["SpinetJACK", "CJACK", "SpinetEngine", "SpinetSynth", "SpinetSoundFont", "SpinetMIDI", "SpinetTestSupport", "CRealtimeProbe", "SpinetTestTraits"]),
        .testTarget(name: "SpinetPluginTests", dependencies: ["SpinetPlugin", "CSpinetPlugin", "SpinetTestSupport", "CRealtimeProbe", "SpinetTestTraits"]),
        // The CLAP plugin under Tests/PluginHosts/clap-host.c (SPINET_PLUGIN_DIR: make plugin-tests-clap).
        .testTarget(name: "SpinetCLAPTests", dependencies: ["SpinetTestSupport", "SpinetTestTraits"]),
        // Runs the headless LV2 host (Tests/PluginHosts/lv2-host.c) on the
        // built bundle; enabled by SPINET_PLUGIN_DIR (make plugin-tests).
        .testTarget(name: "SpinetLV2Tests", dependencies: ["SpinetTestSupport", "SpinetTestTraits", "SpinetPlugin", "CSpinetPlugin"]),
        .testTarget(name: "SpinetCommandTests", dependencies: ["SpinetMIDI", "SpinetSupport", "SpinetTestSupport", "CEBUR128", "SpinetTestTraits"]),
    ] + pluginTargets
)
