import Glibc

/// The names of a SoundFont's presets, by bank and program, read from its
/// preset headers (phdr) without loading the font: for note labels and stem
/// names ("Acoustic Grand Piano", "Standard Drums").
public struct SoundFontPresetNames: Sendable {
    private var names: [Int: String] = [:]

    /// The presets of `fonts`, a later font's preset over an earlier one's
    /// (as FluidSynth looks them up). Fonts that cannot be read add nothing.
    public init(fonts: [String]) {
        for path in fonts {
            guard let f = fopen(path, "rb") else { continue }
            defer { fclose(f) }
            guard fseeko(f, 0, SEEK_END) == 0 else { continue }
            let size = Int64(ftello(f))
            guard let body = FontFileView.hydra(f, fileSize: size), let chunks = PresetSubset.subChunks(body) else { continue }
            let phdr = chunks[0]
            let record = 38
            let count = phdr.count / record - 1   // the last record is the terminal EOP
            guard count > 0 else { continue }
            for i in 0..<count {
                let r = phdr.startIndex + i * record
                var nameBytes = phdr[r..<r + 20].prefix { $0 != 0 }
                while nameBytes.last == 0x20 { nameBytes = nameBytes.dropLast() }
                let program = Int(PresetSubset.u16(phdr, i * record + 20))
                let bank = Int(PresetSubset.u16(phdr, i * record + 22))
                let name = String(decoding: nameBytes, as: UTF8.self)
                names[bank * 128 + (program & 0x7F)] = name
            }
        }
    }

    /// Every preset, by bank then program.
    public var all: [(bank: Int, program: Int, name: String)] {
        names.keys.sorted().map { (bank: $0 / 128, program: $0 % 128, name: names[$0]!) }
    }

    /// The preset FluidSynth plays for `bank` and `program`: that one, else
    /// (as FluidSynth falls back) the same program in bank 0, or for drums
    /// (bank 128) the standard kit, program 0; nil when there is none.
    public func name(bank: Int, program: Int) -> String? {
        if let n = names[bank * 128 + program] { return n }
        if bank == 128 { return names[128 * 128] }
        return names[program]
    }
}
