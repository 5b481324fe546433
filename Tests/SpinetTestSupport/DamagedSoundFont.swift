import Foundation

/// Damaged copies of a SoundFont 2 file, made by patching its sample
/// headers (`shdr` records), the way fonts in the wild come broken.
public struct DamagedSoundFont: Sendable {
    public enum Damage: Sendable {
        /// Start and end moved past the end of the sample data.
        case startPastData
        /// Start and end swapped.
        case startEndSwapped
        /// The loop moved past the end of the sample data.
        case loopOutside
        /// Another sample rate (0, 4 GHz).
        case rate(UInt32)
        /// The ROM flag set.
        case rom
        /// Marked as SF3 compressed, pointing at its own (PCM, not Ogg) bytes;
        /// with `oggMagic`, those bytes start with "OggS" (Ogg that does not
        /// decode). Makes the font version 3.
        case compressed(oggMagic: Bool)
    }

    public private(set) var bytes: [UInt8]
    /// Where the `shdr` records and the `smpl` data start, and their sizes.
    let shdr: (offset: Int, size: Int), smpl: (offset: Int, size: Int), ifil: Int?

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var found: [String: (Int, Int)] = [:]
        var o = 12
        func le32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        while o + 12 <= bytes.count {
            let size = le32(o + 4)
            var p = o + 12
            while p + 8 <= min(o + 8 + size, bytes.count) {
                let s = le32(p + 4)
                found[String(decoding: bytes[p..<(p + 4)], as: UTF8.self)] = (p + 8, s)
                p += 8 + s + (s & 1)
            }
            o += 8 + size + (size & 1)
        }
        shdr = found["shdr"] ?? (0, 0)
        smpl = found["smpl"] ?? (0, 0)
        ifil = found["ifil"]?.0
    }

    public init(path: String) throws {
        self.init([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// Sample headers, not counting the terminal one.
    public var sampleCount: Int { max(shdr.size / 46 - 1, 0) }

    /// The name of sample `index`.
    public func name(_ index: Int) -> String {
        let at = shdr.offset + index * 46
        return String(decoding: bytes[at..<(at + 20)].prefix { $0 != 0 }, as: UTF8.self)
    }

    /// The samples whose name's first word is one of `words` ("Harmonica").
    public func samples(named words: Set<String>) -> [Int] {
        (0..<sampleCount).filter { words.contains(String(name($0).split(separator: " ").first ?? "")) }
    }

    func field(_ index: Int, _ offset: Int) -> UInt32 {
        let at = shdr.offset + index * 46 + offset
        return UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }

    mutating func set(_ index: Int, _ offset: Int, _ value: UInt32) {
        let at = shdr.offset + index * 46 + offset
        for i in 0..<4 { bytes[at + i] = UInt8((value >> (8 * UInt32(i))) & 0xFF) }
    }

    /// Applies `damage` to the samples `indices`.
    public mutating func damage(_ indices: [Int], _ damage: Damage) {
        let words = UInt32(smpl.size / 2)
        for s in indices {
            let start = field(s, 20), end = field(s, 24)
            switch damage {
            case .startPastData: set(s, 20, words + 1000); set(s, 24, words + 5000)
            case .startEndSwapped: set(s, 20, end); set(s, 24, start)
            case .loopOutside: set(s, 28, words + 10); set(s, 32, words + 100_000)
            case .rate(let r): set(s, 36, r)
            case .rom: bytes[shdr.offset + s * 46 + 45] |= 0x80
            case .compressed(let magic):
                set(s, 20, start * 2); set(s, 24, end * 2)
                bytes[shdr.offset + s * 46 + 44] |= 0x10
                if let ifil { bytes[ifil] = 3; bytes[ifil + 1] = 0 }
                if magic { bytes.replaceSubrange((smpl.offset + Int(start) * 2)..<(smpl.offset + Int(start) * 2 + 4), with: Array("OggS".utf8)) }
            }
        }
    }

    /// Writes the bytes to `dir/name`; returns the path.
    public func write(to dir: URL, _ name: String) throws -> String {
        let url = dir.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }
}
