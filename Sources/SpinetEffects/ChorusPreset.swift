/// A named set of chorus parameters: `subtle` and `wide` for the command
/// line and configuration, and the GS / GM2 chorus types.
public struct ChorusPreset: Sendable, Hashable {
    public let name: String
    public let parameters: Chorus.Parameters

    public init(name: String, parameters: Chorus.Parameters) {
        self.name = name
        self.parameters = parameters
    }

    /// Two voices, a slow shallow sweep, moderate width: thickens without
    /// an audible wobble.
    public static let subtle = ChorusPreset(name: "subtle", parameters: .init(
        rateHz: 0.45, depthMilliseconds: 2, delayMilliseconds: 7, voices: 2, feedback: 0, width: 0.6, wetLevel: 0.8))

    /// Three voices, deeper and faster, left and right swept in opposition.
    public static let wide = ChorusPreset(name: "wide", parameters: .init(
        rateHz: 0.8, depthMilliseconds: 4.5, delayMilliseconds: 10, voices: 3, feedback: 0.05, width: 1, wetLevel: 1))

    /// The presets selectable by name.
    public static let all: [ChorusPreset] = [subtle, wide]

    /// The preset called `name` (case-insensitive): "subtle", "wide", or a
    /// GS type name ("chorus1" ... "short-delay-feedback"). Not for the
    /// render thread.
    public init?(name: String) {
        let key = name.lowercased()
        let candidates = Self.all + (0...7).compactMap { ChorusPreset(gsType: $0) }
        guard let found = candidates.first(where: { $0.name == key }) else { return nil }
        self = found
    }

    /// The chorus for a GS chorus type (SysEx 40 01 38; 0-7): Chorus 1-4,
    /// Feedback Chorus, Flanger, Short Delay, Short Delay (FB). Rates,
    /// depths and feedback follow the GM2 defaults for the shared types
    /// (GM2 took types 0-5 from GS); Chorus 1 is `subtle`'s sweep, Chorus
    /// 2-4 are `wide`-like. The two short delays are a fixed 30 ms slapback
    /// (no sweep). Values outside 0-7 are nil. Allocates nothing.
    public init?(gsType: Int) {
        switch gsType {
        case 0...5: self.init(gm2Type: gsType)
        case 6: self.init(name: "short-delay", parameters: .init(
            rateHz: 0, depthMilliseconds: 0, delayMilliseconds: 30, voices: 1, feedback: 0, width: 0, wetLevel: 0.7))
        case 7: self.init(name: "short-delay-feedback", parameters: .init(
            rateHz: 0, depthMilliseconds: 0, delayMilliseconds: 30, voices: 1, feedback: 0.6, width: 0, wetLevel: 0.6))
        default: return nil
        }
    }

    /// The chorus for a GM2 chorus type (Global Parameter Control; 0-5:
    /// Chorus 1-4, FB Chorus, Flanger) with the GM2 default rate, depth and
    /// feedback of each (see `gm2RateHz`, `gm2DepthMilliseconds`,
    /// `gm2Feedback`). Other values are nil. Allocates nothing.
    public init?(gm2Type: Int) {
        func make(_ name: String, rate: Int, depth: Int, feedback: Int, delay: Double, voices: Int, wet: Double) -> ChorusPreset {
            ChorusPreset(name: name, parameters: .init(
                rateHz: Self.gm2RateHz(parameterValue: rate), depthMilliseconds: Self.gm2DepthMilliseconds(parameterValue: depth),
                delayMilliseconds: delay, voices: voices, feedback: Self.gm2Feedback(parameterValue: feedback),
                width: 1, wetLevel: wet))
        }
        switch gm2Type {
        case 0: self = make("chorus1", rate: 3, depth: 5, feedback: 0, delay: 7, voices: 2, wet: 0.8)
        case 1: self = make("chorus2", rate: 9, depth: 19, feedback: 5, delay: 6, voices: 3, wet: 0.9)
        case 2: self = make("chorus3", rate: 3, depth: 19, feedback: 8, delay: 6, voices: 3, wet: 0.9)
        case 3: self = make("chorus4", rate: 9, depth: 16, feedback: 16, delay: 5, voices: 3, wet: 0.9)
        case 4: self = make("feedback-chorus", rate: 2, depth: 24, feedback: 64, delay: 4, voices: 2, wet: 0.7)
        case 5: self = make("flanger", rate: 1, depth: 5, feedback: 112, delay: 1, voices: 1, wet: 0.7)
        default: return nil
        }
    }

    /// GM2 chorus Mod Rate parameter (0-127) in Hz: v · 0.122.
    public static func gm2RateHz(parameterValue: Int) -> Double { Double(min(max(parameterValue, 0), 127)) * 0.122 }

    /// GM2 chorus Mod Depth parameter (0-127) in ms: (v + 1) / 3.2.
    public static func gm2DepthMilliseconds(parameterValue: Int) -> Double { Double(min(max(parameterValue, 0), 127) + 1) / 3.2 }

    /// GM2 chorus Feedback parameter (0-127) as a gain: v · 0.763 %
    /// (clamped to the chorus's 0.95).
    public static func gm2Feedback(parameterValue: Int) -> Double {
        min(Double(min(max(parameterValue, 0), 127)) * 0.00763, 0.95)
    }
}
