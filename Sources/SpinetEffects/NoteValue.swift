import SpinetSupport

/// A musical duration for tempo-synced delay times, in quarter notes
/// (beats): a dotted eighth is 0.75, an eighth-note triplet 1/3.
public struct NoteValue: Sendable, Hashable, CustomStringConvertible {
    /// Length in quarter notes.
    public var quarterNotes: Double

    public init(quarterNotes: Double) {
        self.quarterNotes = quarterNotes
    }

    public static let whole = NoteValue(quarterNotes: 4)
    public static let half = NoteValue(quarterNotes: 2)
    public static let quarter = NoteValue(quarterNotes: 1)
    public static let eighth = NoteValue(quarterNotes: 0.5)
    public static let sixteenth = NoteValue(quarterNotes: 0.25)
    public static let thirtySecond = NoteValue(quarterNotes: 0.125)
    public static let dottedHalf = NoteValue(quarterNotes: 3)
    public static let dottedQuarter = NoteValue(quarterNotes: 1.5)
    public static let dottedEighth = NoteValue(quarterNotes: 0.75)
    public static let dottedSixteenth = NoteValue(quarterNotes: 0.375)
    public static let halfTriplet = NoteValue(quarterNotes: 4.0 / 3)
    public static let quarterTriplet = NoteValue(quarterNotes: 2.0 / 3)
    public static let eighthTriplet = NoteValue(quarterNotes: 1.0 / 3)
    public static let sixteenthTriplet = NoteValue(quarterNotes: 1.0 / 6)

    /// Seconds at `bpm` quarter notes per minute.
    public func seconds(bpm: Double) -> Double { quarterNotes * 60 / bpm }

    /// Parses a note value as written on a command line or in a config file:
    /// a fraction of a whole note, optionally followed by `.` or `d`
    /// (dotted) or `t` (triplet) — "1/4", "1/8.", "1/8d", "1/8t", "1/16" —
    /// or a name: "quarter", "eighth", "dotted-eighth", "eighth-triplet", ...
    /// Not for the render thread (it builds strings).
    public init?(name: String) {
        let text = name.lowercased().trimmingSpaces
        let names: [String: NoteValue] = [
            "whole": .whole, "half": .half, "quarter": .quarter, "eighth": .eighth,
            "sixteenth": .sixteenth, "thirty-second": .thirtySecond,
            "dotted-half": .dottedHalf, "dotted-quarter": .dottedQuarter,
            "dotted-eighth": .dottedEighth, "dotted-sixteenth": .dottedSixteenth,
            "half-triplet": .halfTriplet, "quarter-triplet": .quarterTriplet,
            "eighth-triplet": .eighthTriplet, "sixteenth-triplet": .sixteenthTriplet,
        ]
        if let value = names[text] {
            self = value
            return
        }
        var body = Substring(text)
        var factor = 1.0
        if body.hasSuffix(".") || body.hasSuffix("d") {
            factor = 1.5
            body = body.dropLast()
        } else if body.hasSuffix("t") {
            factor = 2.0 / 3
            body = body.dropLast()
        }
        let parts = body.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let numerator = Int(parts[0]), let denominator = Int(parts[1]),
              numerator > 0, denominator > 0 else { return nil }
        self.init(quarterNotes: 4 * Double(numerator) / Double(denominator) * factor)
    }

    /// "1/8.", "1/8t", "1/4" where the value is one of those; otherwise the
    /// length in quarter notes.
    public var description: String {
        for denominator in [1, 2, 4, 8, 16, 32, 64] {
            let plain = 4 / Double(denominator)
            if abs(quarterNotes - plain) < 1e-9 { return "1/\(denominator)" }
            if abs(quarterNotes - plain * 1.5) < 1e-9 { return "1/\(denominator)." }
            if abs(quarterNotes - plain * 2 / 3) < 1e-9 { return "1/\(denominator)t" }
        }
        return "\(quarterNotes) quarter notes"
    }
}
