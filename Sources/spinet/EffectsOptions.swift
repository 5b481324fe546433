import ArgumentParser
import SpinetEffects

/// The effect options `render` and `play` share.
struct EffectsOptions: ParsableArguments {
    /// The effects a render or a live session gets when no option says otherwise.
    static let defaultEffects = "spinet"

    @Option(help: "Effects: spinet (Spinet's reverb, chorus and delay on CC 91/93/94 sends, shared by every instrument) or fluidsynth (FluidSynth's own reverb and chorus, SoundFont channels only). Default: \(EffectsOptions.defaultEffects).")
    var effects: String = EffectsOptions.defaultEffects

    @Option(help: "Spinet reverb preset: room, hall, plate (or a GS/GM2 type name such as hall2, large-hall) or none (implies --effects spinet).")
    var reverb: String?

    @Option(help: "Spinet chorus preset: subtle, wide (or a GS type name such as chorus3, flanger) or none (implies --effects spinet).")
    var chorus: String?

    @Option(help: "Spinet delay preset: eighth, dotted-eighth or none, synced to the tempo (implies --effects spinet).")
    var delay: String?

    @Flag(help: "No effects at all, for comparisons.")
    var dry = false

    /// What the options ask for, checked.
    struct Resolved: Sendable {
        /// FluidSynth's own reverb and chorus on.
        var fluidEffects: Bool
        /// Spinet's send effects (nil: that one is off, or Spinet's effects are not used).
        var reverb: ReverbPreset?
        var chorus: ChorusPreset?
        var delay: DelayPreset?
        var spinetEffects: Bool
    }

    func resolve() throws -> Resolved {
        guard ["fluidsynth", "spinet"].contains(effects) else {
            throw Failure("--effects \(effects) is not known; use spinet or fluidsynth")
        }
        let spinet = !dry && (effects == "spinet" || reverb != nil || chorus != nil || delay != nil)
        var r = Resolved(fluidEffects: !dry && !spinet, spinetEffects: spinet)
        if spinet {
            r.reverb = try Render.preset(reverb, default: .room, named: ReverbPreset.init(name:), option: "--reverb", choices: ReverbPreset.all.map(\.name))
            r.chorus = try Render.preset(chorus, default: .subtle, named: ChorusPreset.init(name:), option: "--chorus", choices: ChorusPreset.all.map(\.name))
            r.delay = try Render.preset(delay, default: .eighth, named: DelayPreset.init(name:), option: "--delay", choices: DelayPreset.all.map(\.name))
        }
        return r
    }
}
