import Glibc

/// What of a SoundFont can sound: its samples judged by the rules FluidSynth
/// 2.3 loads them by, and the presets that are left with nothing to play.
///
/// FluidSynth drops a sample whose header it cannot use (it only logs a
/// warning): one in ROM, one with unknown type flags, one whose start and
/// end are not inside the sample data in that order (`fluid_sample_validate`).
/// It repairs a loop outside its sample instead (`fluid_sample_sanitize_loop`);
/// such a sample still plays. It takes any sample rate, but a sample rate of
/// 0 or of gigahertz makes a voice that holds one value or runs through its
/// data in a frame: such a sample is counted unusable here, and so is an SF3
/// sample whose compressed data is not Ogg (FluidSynth hands it to
/// libsndfile, which fails to decode it, and then the whole font fails to
/// load). Spinet's loader drops those two kinds before FluidSynth sees them
/// (`disabled`), so what plays is what the diagnosis says.
///
/// A preset is unusable when none of its zones reaches a usable sample.
public struct SoundFontDiagnosis: Sendable {
    public struct Sample: Sendable, Equatable {
        public var index: Int
        public var name: String
        public var reason: String
    }
    public let path: String
    /// Sample headers in the font (not counting the terminal one).
    public let samples: Int
    public let unusableSamples: [Sample]
    /// Presets in the font, and the names of those with nothing to play.
    public let presets: Int
    public let silentPresets: [String]
    /// Usable samples whose loop FluidSynth repairs (moves inside the sample).
    public let repairedLoops: Int
    /// Samples FluidSynth would accept that Spinet's loader drops.
    public let disabled: Set<Int>

    /// Lowest and highest sample rate a usable sample may have: the SoundFont
    /// specification calls 0 illegal and below 400 Hz impractical; nothing is
    /// recorded at a megahertz.
    public static let sampleRates: ClosedRange<UInt32> = 400...1_000_000

    /// True when a sample is unusable or a loop is repaired.
    public var isDamaged: Bool { !unusableSamples.isEmpty || repairedLoops > 0 }
    /// True when the font has presets and none of them can sound.
    public var nothingUsable: Bool { presets > 0 && silentPresets.count == presets }

    /// Reads the font at `path`; nil when its structure is not one this
    /// checker follows (FluidSynth then decides alone, as before).
    /// `undecodable`: names of SF3 samples FluidSynth failed to decode
    /// (which fails the whole font); they are unusable, and dropped.
    public init?(path: String, undecodable: Set<String> = []) {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        guard fseeko(f, 0, SEEK_END) == 0 else { return nil }
        let size = Int64(ftello(f))
        guard let layout = Self.layout(f, fileSize: size), let hydra = FontFileView.hydra(f, fileSize: size),
              let chunks = PresetSubset.subChunks(hydra) else { return nil }
        self.init(path: path, chunks: chunks, sampleBytes: layout.smplSize, version: layout.version, undecodable: undecodable) { start, count in
            FontFileView.bytes(f, at: layout.smplOffset + Int64(start), count: count)
        }
    }

    /// The checker proper: `chunks` are the nine `pdta` sub-chunks,
    /// `sampleBytes` the size of the `smpl` chunk, `version` the font's major
    /// version (3: SF3), `read` reads bytes of the sample data.
    init?(path: String, chunks: [ArraySlice<UInt8>], sampleBytes: Int64, version: Int, undecodable: Set<String> = [],
          read: (_ offset: Int64, _ count: Int) -> [UInt8]?) {
        self.path = path
        let phdr = chunks[0], inst = chunks[4], shdr = chunks[8]
        guard phdr.count % PresetSubset.presetRecord == 0, inst.count % PresetSubset.instrumentRecord == 0,
              shdr.count % PresetSubset.sampleRecord == 0 else { return nil }
        let sampleCount = max(shdr.count / PresetSubset.sampleRecord - 1, 0)
        samples = sampleCount
        var unusable: [Sample] = []
        var usable = [Bool](repeating: false, count: sampleCount)
        var disabled = Set<Int>()
        var repaired = 0
        for s in 0..<sampleCount {
            let at = s * PresetSubset.sampleRecord
            let name = Self.name(shdr, at, 20)
            let start = PresetSubset.u32(shdr, at + 20), end = PresetSubset.u32(shdr, at + 24)
            let loopStart = PresetSubset.u32(shdr, at + 28), loopEnd = PresetSubset.u32(shdr, at + 32)
            let rate = PresetSubset.u32(shdr, at + 36)
            let type = PresetSubset.u16(shdr, at + 44)
            var verdict = Self.judge(start: start, end: end, loopStart: loopStart, loopEnd: loopEnd, rate: rate, type: type,
                                     sampleBytes: sampleBytes, version: version, read: read)
            // FluidSynth names a sample by its field up to the first zero byte
            let rawName = String(decoding: shdr[(shdr.startIndex + at)..<(shdr.startIndex + at + 20)].prefix { $0 != 0 }, as: UTF8.self)
            if type & 0x10 != 0, verdict == .usable(loopRepaired: false), undecodable.contains(rawName) {
                verdict = .unusable("compressed data that does not decode", spinetDrops: true)
            }
            switch verdict {
            case .usable(let loopRepaired):
                usable[s] = true
                if loopRepaired { repaired += 1 }
            case .unusable(let reason, let spinetDrops):
                unusable.append(Sample(index: s, name: name, reason: reason))
                if spinetDrops { disabled.insert(s) }
            }
        }
        unusableSamples = unusable
        self.disabled = disabled
        repairedLoops = repaired

        let presetCount = max(phdr.count / PresetSubset.presetRecord - 1, 0)
        let instCount = max(inst.count / PresetSubset.instrumentRecord - 1, 0)
        presets = presetCount
        guard let p = PresetSubset.presetZones(chunks), let i = PresetSubset.instrumentZones(chunks) else { return nil }
        /// The targets (generator `target`) the zones of item `n` name.
        func targets(_ zones: PresetSubset.Zones, _ n: Int, _ target: UInt16) -> [Int] {
            var out: [Int] = []
            for z in zones.firstBag[n]..<zones.firstBag[n + 1] {
                for k in zones.firstGen[z]..<zones.firstGen[z + 1] {
                    let g = k * PresetSubset.generatorRecord
                    if PresetSubset.u16(zones.gens, g) == target { out.append(Int(PresetSubset.u16(zones.gens, g + 2))) }
                }
            }
            return out
        }
        let instrumentSounds = (0..<instCount).map { n in
            targets(i, n, 53).contains { $0 < sampleCount && usable[$0] }
        }
        var silent: [String] = []
        for n in 0..<presetCount where !targets(p, n, 41).contains(where: { $0 < instCount && instrumentSounds[$0] }) {
            silent.append(Self.name(phdr, n * PresetSubset.presetRecord, 20))
        }
        silentPresets = silent
    }

    enum Verdict: Equatable {
        case usable(loopRepaired: Bool)
        case unusable(String, spinetDrops: Bool)
    }

    /// One sample header, judged as FluidSynth 2.3 imports it (see the type's comment).
    static func judge(start: UInt32, end: UInt32, loopStart: UInt32, loopEnd: UInt32, rate: UInt32, type: UInt16,
                      sampleBytes: Int64, version: Int, read: (Int64, Int) -> [UInt8]?) -> Verdict {
        let rom: UInt16 = 0x8000, vorbis: UInt16 = 0x10
        if type & rom != 0 { return .unusable("a ROM sample", spinetDrops: false) }
        if type & ~(0x1 | 0x2 | 0x4 | 0x8 | vorbis | rom) != 0 {
            return .unusable("unknown sample type \(type)", spinetDrops: false)
        }
        let compressed = type & vorbis != 0
        // FluidSynth counts words in SF2 data, bytes in compressed SF3 data,
        // and takes the end as the last point (end - 1).
        if !compressed && sampleBytes % 2 != 0 { return .unusable("the sample data has an odd size", spinetDrops: false) }
        let limit = compressed ? sampleBytes : sampleBytes / 2
        let last = end > 0 ? Int64(end) - 1 : 0
        if last > limit {
            return .unusable(Int64(start) >= limit ? "starts past the sample data" : "ends past the sample data", spinetDrops: false)
        }
        if start > end { return .unusable("start after end", spinetDrops: false) }
        if Int64(start) >= last { return .unusable("empty (start at end)", spinetDrops: false) }
        if !sampleRates.contains(rate) { return .unusable("sample rate \(rate) Hz", spinetDrops: true) }
        if compressed {
            guard version >= 3, read(Int64(start), 4) == Array("OggS".utf8) else {
                return .unusable("compressed data that is not Ogg Vorbis", spinetDrops: true)
            }
            return .usable(loopRepaired: false)    // its loop counts decoded frames
        }
        // fluid_sample_sanitize_loop, with the loop's points in words of the whole data
        var ls = Int64(loopStart), le = Int64(loopEnd)
        var repaired = false
        if ls > le { swap(&ls, &le); repaired = true }
        if ls < Int64(start) || ls > limit { repaired = true }
        if le < Int64(start) || le > limit { repaired = true }
        return .usable(loopRepaired: repaired)
    }

    /// A zero-padded name field.
    static func name(_ d: ArraySlice<UInt8>, _ at: Int, _ length: Int) -> String {
        let field = d[(d.startIndex + at)..<(d.startIndex + at + length)]
        let bytes = field.prefix { $0 != 0 }.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }
        let text = String(decoding: bytes, as: UTF8.self).trimmingTrailingSpaces
        return text.isEmpty ? "(unnamed)" : text
    }

    /// The font's major version (ifil) and where its sample data (smpl) is.
    static func layout(_ f: UnsafeMutablePointer<FILE>, fileSize: Int64) -> (version: Int, smplOffset: Int64, smplSize: Int64)? {
        guard let header = FontFileView.bytes(f, at: 0, count: 12), header[0..<4] == Array("RIFF".utf8)[...],
              header[8..<12] == Array("sfbk".utf8)[...] else { return nil }
        var version = 2
        var smpl: (Int64, Int64)?
        var offset: Int64 = 12
        while offset + 12 <= fileSize {
            guard let list = FontFileView.bytes(f, at: offset, count: 12) else { return nil }
            let size = Int64(PresetSubset.u32(list[...], 4))
            let end = min(offset + 8 + size, fileSize)
            if list[0..<4] == Array("LIST".utf8)[...] {
                var sub = offset + 12
                while sub + 8 <= end {
                    guard let head = FontFileView.bytes(f, at: sub, count: 8) else { break }
                    let subSize = Int64(PresetSubset.u32(head[...], 4))
                    let tag = String(decoding: head[0..<4], as: UTF8.self)
                    if tag == "ifil", subSize >= 2, let v = FontFileView.bytes(f, at: sub + 8, count: 2) {
                        version = Int(PresetSubset.u16(v[...], 0))
                    }
                    if tag == "smpl" { smpl = (sub + 8, min(subSize, fileSize - sub - 8)) }
                    sub += 8 + subSize + (subSize & 1)
                }
            }
            offset += 8 + size + (size & 1)
        }
        guard let smpl else { return nil }
        return (version, smpl.0, smpl.1)
    }

    // MARK: What Spinet prints

    /// The one line (without the "spinet: warning: " prefix) for a damaged
    /// font; nil for a sound one.
    public var warning: String? {
        guard isDamaged else { return nil }
        var parts: [String] = []
        if !unusableSamples.isEmpty {
            parts.append("\(unusableSamples.count) of \(samples) samples are unusable (\(Self.list(unusableSamples.map { "\($0.name): \($0.reason)" })))")
            parts.append(silentPresets.isEmpty
                ? "every preset still sounds"
                : "\(silentPresets.count) of \(presets) presets \(silentPresets.count == 1 ? "has" : "have") nothing to play (\(Self.list(silentPresets)))")
        }
        if repairedLoops > 0 {
            parts.append("\(repairedLoops) sample loop\(repairedLoops == 1 ? " lies" : "s lie") outside \(repairedLoops == 1 ? "its" : "their") sample and \(repairedLoops == 1 ? "was" : "were") moved inside")
        }
        let fix = unusableSamples.isEmpty ? "they may click; repair the font or pass another with --soundfont"
                                          : "playing the rest; repair the font or pass another with --soundfont"
        return "SoundFont \(path) is damaged: " + parts.joined(separator: ", ") + "; " + fix
    }

    /// The reason (after "SoundFont PATH: ") a font where nothing is usable is refused.
    public var refusal: String {
        let why = unusableSamples.isEmpty
            ? "none reaches a sample (damaged preset or instrument data)"
            : "\(unusableSamples.count) of \(samples) samples are unusable (\(Self.list(unusableSamples.map { "\($0.name): \($0.reason)" })))"
        return "none of its \(presets) presets can sound: \(why); the file is damaged, pass another with --soundfont"
    }

    /// The first three, and how many more.
    static func list(_ items: [String]) -> String {
        let shown = items.prefix(3).joined(separator: ", ")
        return items.count > 3 ? shown + " and \(items.count - 3) more" : shown
    }
}

private extension String {
    var trimmingTrailingSpaces: String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
