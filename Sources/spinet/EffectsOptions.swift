import ArgumentParser
import FoundationEssentials
import Glibc
import SpinetEffects
import SpinetFile
import SpinetRig
import SpinetSettings

/// The effect and master-EQ options `render` and `play` share. Each may
/// also be set in the config file under the same name (the option wins).
struct EffectsOptions: ParsableArguments {
    /// The effects a render or a live session gets when no option says otherwise.
    static let defaultEffects = "spinet"

    @Option(help: "Effects: spinet (Spinet's reverb, chorus and delay on CC 91/93/94 sends, shared by every instrument) or fluidsynth (FluidSynth's own reverb and chorus, SoundFont channels only). Default: \(EffectsOptions.defaultEffects).")
    var effects: String?

    @Option(help: "Spinet reverb preset: room, hall, plate (or a GS/GM2 type name such as hall2, large-hall) or none (implies --effects spinet).")
    var reverb: String?

    @Option(help: "Spinet chorus preset: subtle, wide (or a GS type name such as chorus3, flanger) or none (implies --effects spinet).")
    var chorus: String?

    @Option(help: "Spinet delay preset: eighth, dotted-eighth (synced to the tempo) or none; or a time: 350ms, or a note value such as 1/4, 1/8. or quarter (implies --effects spinet).")
    var delay: String?

    @Flag(help: "No reverb, chorus or delay, for comparisons (an EQ asked for stays).")
    var dry = false

    @Option(name: .customLong("highpass"), help: ArgumentHelp("Master high-pass (Butterworth, -3 dB at the corner) at HZ, 10-2000, or off (the default).", valueName: "hz"))
    var highPass: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Master low shelf: gain in dB (-24 to 24) and optionally its corner, 20-2000 Hz (default 150), e.g. +3 or -2@100.", valueName: "db[@hz]"))
    var lowShelf: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Master high shelf: gain in dB (-24 to 24) and optionally its corner, 500-20000 Hz (default 6000), e.g. -3 or 2@10000.", valueName: "db[@hz]"))
    var highShelf: String?

    /// What the options ask for, checked.
    struct Resolved: Sendable {
        /// FluidSynth's own reverb and chorus on.
        var fluidEffects: Bool
        /// Spinet's send effects (nil: that one is off, or Spinet's effects are not used).
        var reverb: ReverbPreset?
        var chorus: ChorusPreset?
        var delay: DelayPreset?
        var spinetEffects: Bool
        /// The master EQ (nil: none; it would be flat).
        var equalizer: Equalizer.Parameters?

        /// What the graph gets.
        var choices: EffectChoices {
            EffectChoices(fluidEffects: fluidEffects, reverb: reverb, chorus: chorus, delay: delay, equalizer: equalizer)
        }
    }

    /// The options, each falling back to the config file's setting of the same name.
    func resolve(config: SpinetConfig = SpinetConfig()) throws -> Resolved {
        // Where a value came from, for the error that names it.
        func source(_ option: String, _ cli: String?, _ file: String?, key: String) -> (value: String?, label: String) {
            if let cli { return (cli, "--\(option)") }
            return (file, config.label(key))
        }
        try refuseContradictions(config: config)
        // A reverb, chorus or delay preset implies Spinet's effects, but only
        // over an --effects of the same level: `--effects fluidsynth` on the
        // command line is not undone by a reverb in the config file.
        let cliPicksFluid = self.effects?.lowercased() == "fluidsynth"
        let effects = source("effects", self.effects, config.effects, key: "effects")
        let reverb = source("reverb", self.reverb, cliPicksFluid ? nil : config.reverb, key: "reverb")
        let chorus = source("chorus", self.chorus, cliPicksFluid ? nil : config.chorus, key: "chorus")
        let delay = source("delay", self.delay, cliPicksFluid ? nil : config.delay, key: "delay")
        let kind = effects.value ?? Self.defaultEffects
        guard ["fluidsynth", "spinet"].contains(kind) else {
            throw Failure("\(effects.label) \(kind) is not known; use spinet or fluidsynth")
        }
        let spinet = !dry && (kind == "spinet" || reverb.value != nil || chorus.value != nil || delay.value != nil)
        var r = Resolved(fluidEffects: !dry && !spinet, spinetEffects: spinet)
        if spinet {
            r.reverb = try Render.preset(reverb.value, default: .room, named: ReverbPreset.init(name:), option: reverb.label, choices: ReverbPreset.all.map(\.name))
            r.chorus = try Render.preset(chorus.value, default: .subtle, named: ChorusPreset.init(name:), option: chorus.label, choices: ChorusPreset.all.map(\.name))
            r.delay = try Render.preset(delay.value, default: .eighth, named: DelayPreset.init(name:), option: delay.label,
                                        choices: DelayPreset.all.map(\.name) + ["a time such as 350ms or 1/4"])
        }

        var eq = Equalizer.Parameters()
        let highPass = source("highpass", self.highPass, config.highPass, key: "highpass")
        if let text = highPass.value, !["off", "none"].contains(text.lowercased()) {
            guard let hz = Double(text.trimmingSpaces), (10...2000).contains(hz) else {
                throw Failure("\(highPass.label) \(text) is not a corner frequency; use 10 to 2000 (Hz) or off")
            }
            eq.highPassEnabled = true
            eq.highPassFrequency = hz
        }
        let low = source("low-shelf", self.lowShelf, config.lowShelf, key: "low-shelf")
        if let text = low.value {
            let (gain, hz) = try Self.shelf(text, label: low.label, corners: 20...2000, defaultCorner: eq.lowShelfFrequency)
            eq.lowShelfGainDB = gain
            eq.lowShelfFrequency = hz
        }
        let high = source("high-shelf", self.highShelf, config.highShelf, key: "high-shelf")
        if let text = high.value {
            let (gain, hz) = try Self.shelf(text, label: high.label, corners: 500...20000, defaultCorner: eq.highShelfFrequency)
            eq.highShelfGainDB = gain
            eq.highShelfFrequency = hz
        }
        r.equalizer = eq.isFlat ? nil : eq
        return r
    }

    /// Options that ask for opposite things are refused before any work:
    /// FluidSynth's effects with one of Spinet's presets, or --dry with one.
    func refuseContradictions(config: SpinetConfig) throws {
        let cli: [(String, String?)] = [("--reverb", reverb), ("--chorus", chorus), ("--delay", delay)]
        if let (option, value) = cli.first(where: { $0.1 != nil }) {
            if effects?.lowercased() == "fluidsynth" {
                throw Failure("--effects fluidsynth and \(option) \(value!) contradict each other: \(option) is one of Spinet's effects (--effects spinet); drop one of them")
            }
            if dry && value!.lowercased() != "none" {
                throw Failure("--dry and \(option) \(value!) contradict each other: --dry turns the reverb, chorus and delay off; drop one of them")
            }
        }
        // Within the config file (an option on the command line wins over it).
        if effects == nil, reverb == nil, chorus == nil, delay == nil, config.effects?.lowercased() == "fluidsynth" {
            let file: [(String, String?)] = [("reverb", config.reverb), ("chorus", config.chorus), ("delay", config.delay)]
            if let (key, value) = file.first(where: { $0.1 != nil }) {
                throw Failure("config \(config.path ?? ""): \"effects\": \"fluidsynth\" and \"\(key)\": \"\(value!)\" contradict each other: \"\(key)\" is one of Spinet's effects (\"effects\": \"spinet\"); drop one of them")
            }
        }
    }

    /// A shelf setting: `GAIN` or `GAIN@HZ` (dB, optional "dB"/"Hz" units).
    static func shelf(_ text: String, label: String, corners: ClosedRange<Double>, defaultCorner: Double) throws -> (gain: Double, hz: Double) {
        let usage = "use a gain in dB from -24 to 24, optionally @ a corner from \(Int(corners.lowerBound)) to \(Int(corners.upperBound)) Hz (e.g. +3 or -2@\(Int(defaultCorner)))"
        let parts = text.lowercased().replacing(" ", with: "").split(separator: "@", omittingEmptySubsequences: false)
        func number(_ s: Substring, unit: String) -> Double? {
            Double(s.hasSuffix(unit) ? s.dropLast(unit.count) : s).flatMap { $0.isFinite ? $0 : nil }
        }
        guard (1...2).contains(parts.count), let gain = number(parts[0], unit: "db"), (-24...24).contains(gain) else {
            throw Failure("\(label) \(text): \(usage)")
        }
        var hz = defaultCorner
        if parts.count == 2 {
            guard let f = number(parts[1], unit: "hz"), corners.contains(f) else { throw Failure("\(label) \(text): \(usage)") }
            hz = f
        }
        return (gain, hz)
    }
}
