import Glibc

/// How long the voices of a note sound in a SoundFont, read from its preset
/// data: which zones a key and velocity start (a layered pad starts two to
/// four voices per note, a plain piano one), how long each rings after the
/// key is released (the volume envelope's release), and how long it can
/// sound at all (an unlooped sample ends with its data; a voice whose
/// envelope decays to silence ends with its decay).
///
/// An offline render splits the channels between two synthesizers by this
/// cost; FluidSynth's work grows with the time its voices sound.
public struct VoiceCostModel: Sendable {
    /// One instrument zone reached through one preset zone.
    struct Voice: Sendable {
        var keys: ClosedRange<Int>, velocities: ClosedRange<Int>
        /// Seconds the voice rings after its key is released.
        var release: Double
        /// Longest the voice sounds at its root key, in seconds (nil: as
        /// long as the key is held), and that key.
        var longest: Double?, rootKey: Int
        /// The zone's exclusive class (0: none): a note of one class
        /// silences the channel's other voices of that class (open and
        /// closed hi-hat).
        var exclusiveClass: Int = 0
    }
    /// Per bank * 128 + program.
    var presets: [Int: [Voice]] = [:]

    /// Most instrument zones read in all. Each preset zone reads its
    /// instrument's zones anew, so a font whose presets name one large
    /// instrument over and over (a 15 KB file can: 900 preset zones times
    /// 900 instrument zones) would cost minutes and gigabytes here, where
    /// FluidSynth reads each instrument once. Real fonts read a few thousand
    /// (the bundled one 4,375, TimGM6mb 2,063; a font has at most 65,535
    /// instrument zones); past this the font gets no model, and a render
    /// splits its channels without one.
    static let largestZoneWalk = 1 << 18

    /// Reads the preset data of the font at `path`; nil if it cannot.
    public init?(path: String) {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        guard fseeko(f, 0, SEEK_END) == 0 else { return nil }
        let size = Int64(ftello(f))
        guard let hydra = FontFileView.hydra(f, fileSize: size), let chunks = PresetSubset.subChunks(hydra) else { return nil }
        self.init(chunks: chunks)
    }

    init?(chunks: [ArraySlice<UInt8>]) {
        let phdr = chunks[0], inst = chunks[4], shdr = chunks[8]
        let presetCount = phdr.count / PresetSubset.presetRecord - 1
        let instCount = inst.count / PresetSubset.instrumentRecord - 1
        guard presetCount > 0, instCount > 0,
              let p = PresetSubset.presetZones(chunks), let i = PresetSubset.instrumentZones(chunks) else { return nil }
        let samples = shdr.count / PresetSubset.sampleRecord

        /// The generators of zone `z`: [operator: amount].
        func generators(_ zones: PresetSubset.Zones, _ z: Int) -> [UInt16: UInt16] {
            var g: [UInt16: UInt16] = [:]
            for k in zones.firstGen[z]..<zones.firstGen[z + 1] {
                let at = k * PresetSubset.generatorRecord
                g[PresetSubset.u16(zones.gens, at)] = PresetSubset.u16(zones.gens, at + 2)
            }
            return g
        }
        /// The zones of item `n` that name their target (generator `target`
        /// below `limit`: a preset zone's instrument, an instrument zone's
        /// sample), each with the item's global zone (a first zone without
        /// one) merged in under its own generators.
        func zones(_ table: PresetSubset.Zones, _ n: Int, target: UInt16, limit: Int) -> [(target: Int, gens: [UInt16: UInt16])] {
            var global: [UInt16: UInt16] = [:]
            var out: [(target: Int, gens: [UInt16: UInt16])] = []
            for (k, z) in (table.firstBag[n]..<table.firstBag[n + 1]).enumerated() {
                let g = generators(table, z)
                guard let t = g[target].map(Int.init), t < limit else {
                    if k == 0 { global = g }
                    continue
                }
                out.append((t, global.merging(g) { $1 }))
            }
            return out
        }
        func range(_ amount: UInt16?) -> ClosedRange<Int> {
            guard let a = amount else { return 0...127 }
            let lo = Int(a & 0xFF), hi = Int(a >> 8)
            return lo <= hi ? lo...hi : hi...lo
        }
        func signed(_ a: UInt16?) -> Int? { a.map { Int(Int16(bitPattern: $0)) } }
        func seconds(_ timecents: Int) -> Double { pow(2, Double(max(min(timecents, 8000), -12000)) / 1200) }

        // Every preset zone that names an instrument reads its zones (counted
        // before any is read, so a font past the limit costs nothing more).
        var walk = 0
        for g in 0..<p.firstGen[p.firstGen.count - 1] where PresetSubset.u16(p.gens, g * PresetSubset.generatorRecord) == 41 {
            let instrument = Int(PresetSubset.u16(p.gens, g * PresetSubset.generatorRecord + 2))
            if instrument < instCount { walk += i.firstBag[instrument + 1] - i.firstBag[instrument] }
        }
        guard walk <= Self.largestZoneWalk else { return nil }

        for preset in 0..<presetCount {
            let header = preset * PresetSubset.presetRecord
            let program = Int(PresetSubset.u16(phdr, header + 20)), bank = Int(PresetSubset.u16(phdr, header + 22))
            var voices: [Voice] = []
            for (instrument, pg) in zones(p, preset, target: 41, limit: instCount) {
                let pKeys = range(pg[43]), pVels = range(pg[44])
                let releaseOffset = signed(pg[38]) ?? 0
                for (sample, ig) in zones(i, instrument, target: 53, limit: samples) {
                    let keys = range(ig[43]), vels = range(ig[44])
                    guard keys.overlaps(pKeys), vels.overlaps(pVels) else { continue }
                    let release = seconds((signed(ig[38]) ?? -12000) + releaseOffset)
                    let at = sample * PresetSubset.sampleRecord
                    let start = Int(PresetSubset.u32(shdr, at + 20)), end = Int(PresetSubset.u32(shdr, at + 24))
                    let rate = max(Int(PresetSubset.u32(shdr, at + 36)), 1)
                    let mode = Int(ig[54] ?? 0)
                    // (an SF3 sample's start and end count compressed bytes, not frames)
                    let compressed = PresetSubset.u16(shdr, at + 44) & 0x10 != 0
                    var longest: Double? = mode == 1 || mode == 3 || compressed ? nil : Double(max(end - start, 0)) / Double(rate)
                    // a silent sustain: the voice ends with its decay
                    if let sustain = signed(ig[37]), sustain >= 960 {
                        let decay = seconds(signed(ig[36]) ?? -12000)
                        longest = min(longest ?? decay, decay)
                    }
                    let root = signed(ig[58]).flatMap { (0...127).contains($0) ? $0 : nil }
                        ?? Int(shdr[shdr.startIndex + at + 40])
                    voices.append(Voice(keys: max(keys.lowerBound, pKeys.lowerBound)...min(keys.upperBound, pKeys.upperBound),
                                        velocities: max(vels.lowerBound, pVels.lowerBound)...min(vels.upperBound, pVels.upperBound),
                                        release: release, longest: longest, rootKey: root,
                                        exclusiveClass: Int(ig[57] ?? 0)))
                }
            }
            if presets[bank * 128 + program] == nil { presets[bank * 128 + program] = voices }
        }
    }

    /// The voices of the preset FluidSynth would pick for `bank` and
    /// `program` (its fallbacks: bank 0, then program 0; drum kit 0) that a
    /// key and velocity start; nil if the font has none of those presets.
    func voices(bank: Int, program: Int, drum: Bool, key: Int, velocity: Int) -> [Voice]? {
        let candidates = drum ? [(128, program), (128, 0)] : [(bank, program), (0, program), (0, 0)]
        guard let voices = candidates.lazy.compactMap({ self.presets[$0.0 * 128 + $0.1] }).first else { return nil }
        return voices.filter { $0.keys.contains(key) && $0.velocities.contains(velocity) }
    }

    /// The keys of the preset FluidSynth would pick (as `voices`) that share
    /// an exclusive class, one set per class; a note on one silences the
    /// others' voices on the same channel, so they must share a synthesizer.
    public func exclusiveKeys(bank: Int, program: Int, drum: Bool) -> [Set<Int>] {
        let candidates = drum ? [(128, program), (128, 0)] : [(bank, program), (0, program), (0, 0)]
        guard let voices = candidates.lazy.compactMap({ self.presets[$0.0 * 128 + $0.1] }).first else { return [] }
        var classes: [Int: Set<Int>] = [:]
        for v in voices where v.exclusiveClass != 0 { classes[v.exclusiveClass, default: []].formUnion(v.keys) }
        return classes.keys.sorted().map { classes[$0]! }
    }

    /// How many voices a note starts (see `voices`).
    public func voiceCount(bank: Int, program: Int, drum: Bool, key: Int, velocity: Int) -> Int? {
        voices(bank: bank, program: program, drum: drum, key: key, velocity: velocity)?.count
    }

    /// Voice-seconds of one note held `held` seconds (note-on to release,
    /// pedal included): each voice sounds until its release ends, or its
    /// sample or decay does (see `voices`).
    public func cost(bank: Int, program: Int, drum: Bool, key: Int, velocity: Int, held: Double) -> Double? {
        guard let voices = voices(bank: bank, program: program, drum: drum, key: key, velocity: velocity) else { return nil }
        var total = 0.0
        for v in voices {
            var t = held + v.release
            if let longest = v.longest { t = min(t, longest * pow(2, Double(v.rootKey - key) / 12)) }
            total += t
        }
        return total
    }
}
