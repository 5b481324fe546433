/// A named set of delay parameters: `eighth` and `dotted-eighth` for the
/// command line and configuration (both follow the tempo), and the echoes
/// that GS files ask for through the reverb type.
public struct DelayPreset: Sendable, Hashable {
    public let name: String
    public let parameters: Delay.Parameters

    public init(name: String, parameters: Delay.Parameters) {
        self.name = name
        self.parameters = parameters
    }

    /// Eighth-note ping-pong, three or four audible repeats, darkened.
    public static let eighth = DelayPreset(name: "eighth", parameters: .init(
        time: .note(.eighth), mode: .pingPong, feedback: 0.35, lowPassHz: 5000, highPassHz: 150, wetLevel: 0.7))

    /// The dotted-eighth rhythmic echo (stereo), a little more feedback.
    public static let dottedEighth = DelayPreset(name: "dotted-eighth", parameters: .init(
        time: .note(.dottedEighth), mode: .stereo, feedback: 0.4, lowPassHz: 4500, highPassHz: 200, wetLevel: 0.7))

    /// The presets selectable by name.
    public static let all: [DelayPreset] = [eighth, dottedEighth]

    /// The preset called `name` (case-insensitive): "eighth", "dotted-eighth",
    /// "gs-delay", "gs-panning-delay"; or a delay time with the eighth
    /// preset's sound: milliseconds ("350ms", 1 to 4000) or a note value
    /// that follows the tempo ("1/4", "1/8.", "1/8t", "quarter",
    /// "dotted-quarter", ...; see `NoteValue(name:)`). Not for the render thread.
    public init?(name: String) {
        let key = name.lowercased()
        let candidates = Self.all + [6, 7].compactMap { DelayPreset(gsReverbType: $0) }
        if let found = candidates.first(where: { $0.name == key }) {
            self = found
            return
        }
        var parameters = Self.eighth.parameters
        if key.hasSuffix("ms"), let ms = Double(key.dropLast(2)), (1...4000).contains(ms) {
            parameters.time = .milliseconds(ms)
        } else if let value = NoteValue(name: key), value.quarterNotes > 0, value.quarterNotes <= 8 {
            parameters.time = .note(value)
        } else {
            return nil
        }
        self.init(name: key, parameters: parameters)
    }

    /// GS reverb types 6 (Delay) and 7 (Panning Delay) are echoes: a
    /// stereo and a ping-pong delay of 250 ms with moderate feedback. Nil
    /// for the other types (they are reverbs: `ReverbPreset(gsType:)`).
    /// Allocates nothing.
    public init?(gsReverbType: Int) {
        switch gsReverbType {
        case 6: self.init(name: "gs-delay", parameters: .init(
            time: .milliseconds(250), mode: .stereo, feedback: 0.35, lowPassHz: 6000, highPassHz: 100, wetLevel: 0.7))
        case 7: self.init(name: "gs-panning-delay", parameters: .init(
            time: .milliseconds(250), mode: .pingPong, feedback: 0.35, lowPassHz: 6000, highPassHz: 100, wetLevel: 0.7))
        default: return nil
        }
    }
}
