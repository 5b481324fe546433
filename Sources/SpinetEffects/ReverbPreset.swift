#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A named set of reverb parameters: `room`, `hall` and `plate` for the
/// command line and configuration, and variants of them for the GS and
/// GM2 reverb types.
///
/// The presets differ the way the spaces do: a room is small (short, dense
/// echoes), quick to decay and dark; a hall is large, slow, with a clear
/// pre-delay and a gentle high-frequency roll-off; a plate has no pre-delay,
/// maximum diffusion (an instant dense onset, as a steel plate gives) and
/// stays bright. Their wet levels are balanced so that the three sound about
/// equally loud at the same send (a longer decay has more energy).
public struct ReverbPreset: Sendable, Hashable {
    public let name: String
    public let parameters: Reverb.Parameters

    public init(name: String, parameters: Reverb.Parameters) {
        self.name = name
        self.parameters = parameters
    }

    public static let room = ReverbPreset(name: "room", parameters: .init(
        preDelayMilliseconds: 6, decaySeconds: 0.9, size: 0.35, damping: 0.55, dampingFrequency: 4000,
        diffusion: 0.85, modulation: 0.3, earlyReflections: 0.6, width: 0.9, wetLevel: 1))

    public static let hall = ReverbPreset(name: "hall", parameters: .init(
        preDelayMilliseconds: 22, decaySeconds: 2.4, size: 0.9, damping: 0.45, dampingFrequency: 4500,
        diffusion: 0.85, modulation: 0.5, earlyReflections: 0.35, width: 1, wetLevel: 1.1))

    public static let plate = ReverbPreset(name: "plate", parameters: .init(
        preDelayMilliseconds: 2, decaySeconds: 1.7, size: 0.4, damping: 0.25, dampingFrequency: 7000,
        diffusion: 1, modulation: 0.35, earlyReflections: 0, width: 1, wetLevel: 1))

    /// The presets selectable by name.
    public static let all: [ReverbPreset] = [room, hall, plate]

    /// The preset called `name` (case-insensitive): "room", "hall", "plate",
    /// or one of the GS/GM2 variant names. Not for the render thread.
    public init?(name: String) {
        let key = name.lowercased()
        let variants = Self.all + (0...5).compactMap { ReverbPreset(gsType: $0) }
            + [0, 1, 2, 3, 4, 8].compactMap { ReverbPreset(gm2Type: $0) }
        guard let found = variants.first(where: { $0.name == key }) else { return nil }
        self = found
    }

    /// The reverb for a GS reverb type (SysEx 40 01 30; 0-7): 0-2 Room 1-3
    /// are rooms of growing size and decay, 3-4 Hall 1-2 halls, 5 Plate the
    /// plate. Types 6 (Delay) and 7 (Panning Delay) are echoes, not
    /// reverbs: nil here, see `DelayPreset(gsReverbType:)`. Values outside
    /// 0-7 are nil. Allocates nothing (safe on the render thread).
    public init?(gsType: Int) {
        switch gsType {
        case 0: self = Self.room.variant("room1", decay: 0.8, size: 0.3, preDelay: 4)
        case 1: self = Self.room.variant("room2", decay: 1.1, size: 0.4, preDelay: 8)
        case 2: self = Self.room.variant("room3", decay: 1.5, size: 0.55, preDelay: 12)
        case 3: self = Self.hall.variant("hall1", decay: 1.8, size: 0.75, preDelay: 18)
        case 4: self = Self.hall.variant("hall2", decay: 2.6, size: 0.95, preDelay: 25)
        case 5: self = Self.plate
        default: return nil
        }
    }

    /// The reverb for a GM2 reverb type (Global Parameter Control; 0 Small
    /// Room, 1 Medium Room, 2 Large Room, 3 Medium Hall, 4 Large Hall,
    /// 8 Plate), with the GM2 default reverb times (see `gm2DecaySeconds`):
    /// 1.1, 1.3, 1.5, 1.8, 1.8 and 1.3 s. Other values are nil. Allocates
    /// nothing (safe on the render thread).
    public init?(gm2Type: Int) {
        switch gm2Type {
        case 0: self = Self.room.variant("small-room", decay: Self.gm2DecaySeconds(parameterValue: 44), size: 0.3, preDelay: 4)
        case 1: self = Self.room.variant("medium-room", decay: Self.gm2DecaySeconds(parameterValue: 50), size: 0.45, preDelay: 8)
        case 2: self = Self.room.variant("large-room", decay: Self.gm2DecaySeconds(parameterValue: 56), size: 0.6, preDelay: 12)
        case 3: self = Self.hall.variant("medium-hall", decay: Self.gm2DecaySeconds(parameterValue: 64), size: 0.75, preDelay: 18)
        case 4: self = Self.hall.variant("large-hall", decay: Self.gm2DecaySeconds(parameterValue: 64), size: 1, preDelay: 28)
        case 8: self = ReverbPreset(name: "gm2-plate", parameters: Self.plate.with(decay: Self.gm2DecaySeconds(parameterValue: 50)))
        default: return nil
        }
    }

    /// The GM2 reverb time parameter (0-127) in seconds: e^((v - 40) · 0.025),
    /// 0.37 s at 0, 1.8 s at 64, 8.9 s at 127.
    public static func gm2DecaySeconds(parameterValue: Int) -> Double {
        exp(Double(min(max(parameterValue, 0), 127) - 40) * 0.025)
    }

    private func variant(_ name: String, decay: Double, size: Double, preDelay: Double) -> ReverbPreset {
        var p = parameters
        p.decaySeconds = decay
        p.size = size
        p.preDelayMilliseconds = preDelay
        p.wetLevel *= (parameters.decaySeconds / decay).squareRoot()   // same loudness as the base preset
        return ReverbPreset(name: name, parameters: p)
    }

    private func with(decay: Double) -> Reverb.Parameters {
        var p = parameters
        p.wetLevel *= (parameters.decaySeconds / decay).squareRoot()
        p.decaySeconds = decay
        return p
    }
}
