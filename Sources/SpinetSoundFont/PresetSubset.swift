/// The part of a SoundFont 2 file's preset data (its `pdta` list: preset,
/// instrument and sample headers) that a known set of program numbers can
/// reach.
///
/// FluidSynth parses every preset of a font into every synthesizer that
/// loads it, and keeps each instrument zone as a full generator table:
/// FluidR3_GM costs ~13 MB of heap per synthesizer that way, and an offline
/// render runs two. A MIDI file names its programs in advance, so a render
/// can load only the presets with those program numbers (in every bank),
/// and the instruments they use. Every lookup FluidSynth then makes for one
/// of those programs finds what it would find in the whole font: its
/// fallbacks for a missing preset go to another bank of the same program,
/// or to program 0, so program 0 is always kept.
///
/// The sample headers and sample data stay as they are, so FluidSynth's
/// sample cache still shares one copy of the samples between synthesizers.
public enum PresetSubset {
    /// The generator that names a preset zone's instrument.
    static let instrumentGenerator: UInt16 = 41
    static let presetRecord = 38, instrumentRecord = 22, bagRecord = 4, modulatorRecord = 10, generatorRecord = 4, sampleRecord = 46
    static let order = ["phdr", "pbag", "pmod", "pgen", "inst", "ibag", "imod", "igen", "shdr"]

    /// The body of a `pdta` list (after the 'pdta' tag) holding only the
    /// presets whose program number is in `programs` (plus program 0) and
    /// the instruments they use; nil when that would change nothing, keep
    /// nothing, or the data is not laid out exactly as the SoundFont 2
    /// specification says (then the font is loaded whole, as always).
    public static func filter(pdta: [UInt8], programs: Set<Int>) -> [UInt8]? {
        guard let chunks = subChunks(pdta) else { return nil }
        let phdr = chunks[0], pbag = chunks[1], pmod = chunks[2], pgen = chunks[3]
        let inst = chunks[4], ibag = chunks[5], imod = chunks[6], igen = chunks[7], shdr = chunks[8]
        guard phdr.count % presetRecord == 0, inst.count % instrumentRecord == 0,
              pbag.count % bagRecord == 0, ibag.count % bagRecord == 0,
              pmod.count % modulatorRecord == 0, imod.count % modulatorRecord == 0,
              pgen.count % generatorRecord == 0, igen.count % generatorRecord == 0 else { return nil }
        let presets = phdr.count / presetRecord - 1, instruments = inst.count / instrumentRecord - 1
        guard presets > 0, instruments >= 0 else { return nil }

        let wanted = programs.union([0])
        var keep: [Int] = []
        for p in 0..<presets where wanted.contains(Int(u16(phdr, p * presetRecord + 20))) { keep.append(p) }
        guard !keep.isEmpty, keep.count < presets else { return nil }

        // Presets: the kept ones' zones, renumbered; note the instruments they name.
        guard let presetZones = presetZones(chunks) else { return nil }
        for g in 0..<(pgen.count / generatorRecord - 1) where u16(pgen, g * generatorRecord) == instrumentGenerator {
            // a reference FluidSynth refuses: let it load the whole font and say so
            guard Int(u16(pgen, g * generatorRecord + 2)) < instruments else { return nil }
        }
        var usedInstrument = [Bool](repeating: false, count: instruments)
        for g in presetZones.generators(of: keep) where u16(pgen, g * generatorRecord) == instrumentGenerator {
            usedInstrument[Int(u16(pgen, g * generatorRecord + 2))] = true
        }
        var newIndex = [Int](repeating: -1, count: instruments)
        var keptInstruments: [Int] = []
        for i in 0..<instruments where usedInstrument[i] {
            newIndex[i] = keptInstruments.count
            keptInstruments.append(i)
        }
        guard let instrumentZones = instrumentZones(chunks) else { return nil }

        let p = presetZones.extract(keep) { gen in
            u16(gen, 0) == instrumentGenerator ? UInt16(newIndex[Int(u16(gen, 2))]) : nil
        }
        let i = instrumentZones.extract(keptInstruments) { _ in nil }

        var out: [UInt8] = []
        out.reserveCapacity(pdta.count)
        for (id, body) in zip(order, [p.headers, p.bags, p.mods, p.gens, i.headers, i.bags, i.mods, i.gens, Array(shdr)]) {
            out += Array(id.utf8)
            appendU32(&out, UInt32(body.count))
            out += body
        }
        return out
    }

    /// The nine sub-chunks of a `pdta` body, in the specification's order.
    static func subChunks(_ data: [UInt8]) -> [ArraySlice<UInt8>]? {
        var chunks: [ArraySlice<UInt8>] = []
        var offset = 0
        for id in order {
            guard offset + 8 <= data.count, Array(data[offset..<offset + 4]) == Array(id.utf8) else { return nil }
            let size = Int(u32(data[...], offset + 4))
            guard size <= data.count - offset - 8, size % 2 == 0 else { return nil }
            chunks.append(data[offset + 8..<offset + 8 + size])
            offset += 8 + size
        }
        return chunks
    }

    /// The preset level of `subChunks`' nine chunks (phdr, pbag, pmod, pgen).
    static func presetZones(_ chunks: [ArraySlice<UInt8>]) -> Zones? {
        Zones(headers: chunks[0], record: presetRecord, bagField: 24, bags: chunks[1], mods: chunks[2], gens: chunks[3],
              count: chunks[0].count / presetRecord - 1)
    }

    /// The instrument level of `subChunks`' nine chunks (inst, ibag, imod, igen).
    static func instrumentZones(_ chunks: [ArraySlice<UInt8>]) -> Zones? {
        Zones(headers: chunks[4], record: instrumentRecord, bagField: 20, bags: chunks[5], mods: chunks[6], gens: chunks[7],
              count: chunks[4].count / instrumentRecord - 1)
    }

    /// One level (presets or instruments) of headers -> bags -> modulators
    /// and generators, checked to be monotonic and in range.
    struct Zones {
        let headers: ArraySlice<UInt8>, bags: ArraySlice<UInt8>, mods: ArraySlice<UInt8>, gens: ArraySlice<UInt8>
        let record: Int
        /// Where a header record holds the index of its first bag.
        let bagField: Int
        /// Per header (and the terminal one): its first bag.
        let firstBag: [Int]
        /// Per bag (and the terminal one): its first modulator and generator.
        let firstMod: [Int], firstGen: [Int]

        init?(headers: ArraySlice<UInt8>, record: Int, bagField: Int, bags: ArraySlice<UInt8>, mods: ArraySlice<UInt8>, gens: ArraySlice<UInt8>, count: Int) {
            self.headers = headers; self.bags = bags; self.mods = mods; self.gens = gens
            self.record = record; self.bagField = bagField
            let bagCount = bags.count / PresetSubset.bagRecord - 1
            let modCount = mods.count / PresetSubset.modulatorRecord - 1
            let genCount = gens.count / PresetSubset.generatorRecord - 1
            guard bagCount >= 0, modCount >= 0, genCount >= 0 else { return nil }
            firstBag = (0...count).map { Int(PresetSubset.u16(headers, $0 * record + bagField)) }
            firstGen = (0...bagCount).map { Int(PresetSubset.u16(bags, $0 * PresetSubset.bagRecord)) }
            firstMod = (0...bagCount).map { Int(PresetSubset.u16(bags, $0 * PresetSubset.bagRecord + 2)) }
            guard firstBag.first == 0, firstBag.last == bagCount, zip(firstBag, firstBag.dropFirst()).allSatisfy({ $0 <= $1 }),
                  firstGen.first == 0, firstGen.last == genCount, zip(firstGen, firstGen.dropFirst()).allSatisfy({ $0 <= $1 }),
                  firstMod.first == 0, firstMod.last == modCount, zip(firstMod, firstMod.dropFirst()).allSatisfy({ $0 <= $1 })
            else { return nil }
        }

        /// The indices of the generators in the zones of `items`.
        func generators(of items: [Int]) -> [Int] {
            items.flatMap { firstGen[firstBag[$0]]..<firstGen[firstBag[$0 + 1]] }
        }

        /// The four sub-chunks holding only `items`, in order, each with a
        /// terminal record; `rewrite` may give a generator a new amount.
        func extract(_ items: [Int], rewrite: (ArraySlice<UInt8>) -> UInt16?) -> (headers: [UInt8], bags: [UInt8], mods: [UInt8], gens: [UInt8]) {
            var h: [UInt8] = [], b: [UInt8] = [], m: [UInt8] = [], g: [UInt8] = []
            func bag() {
                PresetSubset.appendU16(&b, UInt16(g.count / PresetSubset.generatorRecord))
                PresetSubset.appendU16(&b, UInt16(m.count / PresetSubset.modulatorRecord))
            }
            for item in items {
                var header = Array(headers[headers.startIndex + item * record..<headers.startIndex + (item + 1) * record])
                header.replaceSubrange(bagField..<bagField + 2, with: PresetSubset.le16(UInt16(b.count / PresetSubset.bagRecord)))
                h += header
                for z in firstBag[item]..<firstBag[item + 1] {
                    bag()
                    let mod = PresetSubset.modulatorRecord
                    m += mods[mods.startIndex + firstMod[z] * mod..<mods.startIndex + firstMod[z + 1] * mod]
                    for k in firstGen[z]..<firstGen[z + 1] {
                        let at = gens.startIndex + k * PresetSubset.generatorRecord
                        let gen = gens[at..<at + PresetSubset.generatorRecord]
                        if let amount = rewrite(gen) {
                            g += gen.prefix(2)
                            PresetSubset.appendU16(&g, amount)
                        } else {
                            g += gen
                        }
                    }
                }
            }
            // Terminal records: the header's names the end of the bags, the
            // bag's the end of the modulators and generators.
            var terminal = Array(headers.suffix(record))
            terminal.replaceSubrange(bagField..<bagField + 2, with: PresetSubset.le16(UInt16(b.count / PresetSubset.bagRecord)))
            bag()
            h += terminal
            m += [UInt8](repeating: 0, count: PresetSubset.modulatorRecord)
            g += [UInt8](repeating: 0, count: PresetSubset.generatorRecord)
            return (h, b, m, g)
        }
    }

    static func u16(_ d: ArraySlice<UInt8>, _ at: Int) -> UInt16 {
        UInt16(d[d.startIndex + at]) | UInt16(d[d.startIndex + at + 1]) << 8
    }
    static func u32(_ d: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        UInt32(u16(d, at)) | UInt32(u16(d, at + 2)) << 16
    }
    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func appendU16(_ d: inout [UInt8], _ v: UInt16) { d += le16(v) }
    static func appendU32(_ d: inout [UInt8], _ v: UInt32) {
        appendU16(&d, UInt16(v & 0xFFFF))
        appendU16(&d, UInt16(v >> 16))
    }
}
