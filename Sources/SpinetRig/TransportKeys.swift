/// The file player's keys on a terminal, from the bytes it sends (raw
/// mode): space pauses and resumes, ← and → seek 5 s (with Shift 30 s),
/// `n` and `p` go to the next and previous file, `q` quits.
public struct TransportKeys: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    /// The commands in `bytes` (an escape sequence may be split across calls).
    public mutating func decode(_ bytes: [UInt8]) -> [FilePlayer.Command] {
        pending += bytes
        var out: [FilePlayer.Command] = []
        var i = 0
        scan: while i < pending.count {
            let b = pending[i]
            if b == 0x1B {
                // ESC [ C, ESC O C, ESC [ 1 ; 2 C (Shift) ...: an arrow ends at a letter
                var j = i + 1
                guard j < pending.count else { break scan }
                guard pending[j] == UInt8(ascii: "[") || pending[j] == UInt8(ascii: "O") else { i += 1; continue }
                j += 1
                while j < pending.count && !(pending[j] >= 0x40 && pending[j] <= 0x7E) { j += 1 }
                guard j < pending.count else {
                    if j - i > 8 { i = j; continue }      // not a key we know: drop it
                    break scan
                }
                let shifted = pending[(i + 2)..<j].contains(UInt8(ascii: "2"))
                switch pending[j] {
                case UInt8(ascii: "C"): out.append(.seek(by: shifted ? 30 : 5))
                case UInt8(ascii: "D"): out.append(.seek(by: shifted ? -30 : -5))
                default: break
                }
                i = j + 1
                continue
            }
            switch b {
            case UInt8(ascii: " "): out.append(.togglePause)
            case UInt8(ascii: "n"), UInt8(ascii: "N"): out.append(.next)
            case UInt8(ascii: "p"), UInt8(ascii: "P"): out.append(.previous)
            case UInt8(ascii: "q"), UInt8(ascii: "Q"): out.append(.quit)
            default: break
            }
            i += 1
        }
        pending.removeFirst(i)
        return out
    }
}
