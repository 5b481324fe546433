/// Where Spinet's audio outputs go once the client is active.
///
/// MIDI inputs are never connected automatically: that is for the user or
/// the session manager.
public enum JACKConnect: Equatable, Sendable {
    /// The first two physical playback ports (`system:playback_1`, `_2`).
    case auto
    /// Nothing: the user or a session manager connects.
    case none
    /// Named ports: out_L to the first, out_R to the second (or both to the
    /// only one).
    case ports([String])

    /// Reads `auto`, `none` or `PORT,PORT` (the `--jack-connect` value).
    public init(parsing text: String) throws(JACKError) {
        switch text.lowercased() {
        case "auto": self = .auto
        case "none": self = .none
        default:
            let names = text.split(separator: ",").map { String($0).trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
            guard (1...2).contains(names.count) else {
                throw JACKError("--jack-connect '\(text)' must be auto, none, or one or two JACK ports (PORT,PORT; see `spinet ports`)")
            }
            self = .ports(names)
        }
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let drop = Set(set)
        var s = Substring(self)
        while let c = s.first, drop.contains(c) { s = s.dropFirst() }
        while let c = s.last, drop.contains(c) { s = s.dropLast() }
        return String(s)
    }
}
