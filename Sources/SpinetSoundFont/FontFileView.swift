import CFluidSynth
import Glibc
import SpinetEngine

/// What FluidSynth reads when a SoundFont unit loads a font through its own
/// loader: the file with its preset data cut down to a `PresetSubset`, or
/// the file as it is when there is nothing to cut or the cut is not safe.
///
/// Everything before the `pdta` list (the INFO list and the samples) is read
/// from the file at its own offsets, so FluidSynth's sample cache, keyed on
/// the path and the sample data's offset, shares the samples with every
/// other synthesizer that loaded the font.
final class FontFileView {
    enum Source { case file(offset: Int64), bytes([UInt8]) }
    struct Segment { var start: Int64; var length: Int64; var source: Source }

    let file: UnsafeMutablePointer<FILE>
    let segments: [Segment]
    let size: Int64
    var position: Int64 = 0

    /// The programs the next load keeps (nil: the whole font). Set and read
    /// only under `SoundFontUnit.creation`, around `fluid_synth_sfload`.
    nonisolated(unsafe) static var pendingPrograms: Set<Int>?
    /// The samples (indices into the sample headers) the next load drops:
    /// ones FluidSynth would accept but cannot play (see
    /// `SoundFontDiagnosis.disabled`). Set and read as `pendingPrograms`.
    nonisolated(unsafe) static var pendingDisabled: Set<Int> = []

    /// Largest preset data read into memory to cut down (FluidR3_GM's is 0.2 MB).
    static let largestHydra: Int64 = 64 << 20

    init?(path: String, programs: Set<Int>?, disabled: Set<Int> = []) {
        guard let f = fopen(path, "rb") else { return nil }
        guard fseeko(f, 0, SEEK_END) == 0 else { fclose(f); return nil }
        let fileSize = Int64(ftello(f))
        file = f
        if programs != nil || !disabled.isEmpty,
           let cut = Self.cut(f, fileSize: fileSize, programs: programs, disabled: disabled) {
            segments = cut
        } else {
            segments = [Segment(start: 0, length: fileSize, source: .file(offset: 0))]
        }
        size = segments.last.map { $0.start + $0.length } ?? 0
    }

    deinit { fclose(file) }

    /// Where the `pdta` list starts, its size field and where the next
    /// chunk starts; nil if the file is not a RIFF sfbk file with one.
    static func locateHydra(_ f: UnsafeMutablePointer<FILE>, fileSize: Int64) -> (offset: Int64, size: Int64, end: Int64)? {
        guard let header = bytes(f, at: 0, count: 12), header[0..<4] == Array("RIFF".utf8)[...],
              header[8..<12] == Array("sfbk".utf8)[...] else { return nil }
        var offset: Int64 = 12
        while offset + 12 <= fileSize {
            guard let list = bytes(f, at: offset, count: 12) else { return nil }
            let size = Int64(PresetSubset.u32(list[...], 4))
            let end = offset + 8 + size + (size & 1)
            if list[0..<4] == Array("LIST".utf8)[...] && list[8..<12] == Array("pdta".utf8)[...] {
                guard size >= 4, size <= largestHydra, offset + 8 + size <= fileSize else { return nil }
                return (offset, size, end)
            }
            offset = end
        }
        return nil
    }

    /// The body of the file's `pdta` list (after the tag), or nil.
    static func hydra(_ f: UnsafeMutablePointer<FILE>, fileSize: Int64) -> [UInt8]? {
        guard let at = locateHydra(f, fileSize: fileSize) else { return nil }
        return bytes(f, at: at.offset + 12, count: Int(at.size - 4))
    }

    static func bytes(_ f: UnsafeMutablePointer<FILE>, at offset: Int64, count: Int) -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: count)
        guard count > 0, fseeko(f, Int(offset), SEEK_SET) == 0, fread(&buf, 1, count, f) == count else { return nil }
        return buf
    }

    /// The segments of the cut-down file (only `programs`, when given; the
    /// `disabled` samples marked as ROM samples, which FluidSynth skips), or
    /// nil to read the file as it is.
    static func cut(_ f: UnsafeMutablePointer<FILE>, fileSize: Int64, programs: Set<Int>?, disabled: Set<Int> = []) -> [Segment]? {
        guard let header = bytes(f, at: 0, count: 12), let at = locateHydra(f, fileSize: fileSize),
              var body = bytes(f, at: at.offset + 12, count: Int(at.size - 4)) else { return nil }
        if !disabled.isEmpty {
            guard let shdr = PresetSubset.subChunks(body)?[8].indices else { return nil }
            for s in disabled where (s + 1) * PresetSubset.sampleRecord <= shdr.count {
                body[shdr.lowerBound + s * PresetSubset.sampleRecord + 45] |= 0x80     // sfSampleType |= ROM (0x8000)
            }
        }
        let subset: [UInt8]
        if let programs, let cut = PresetSubset.filter(pdta: body, programs: programs) {
            subset = cut
        } else if !disabled.isEmpty {
            subset = body
        } else {
            return nil
        }
        let riffSize = Int64(PresetSubset.u32(header[...], 4))
        var newList = Array("LIST".utf8)
        PresetSubset.appendU32(&newList, UInt32(4 + subset.count))
        newList += Array("pdta".utf8) + subset
        let tailStart = min(at.end, fileSize)
        let newRiffSize = riffSize + Int64(newList.count) - (tailStart - at.offset)
        guard newRiffSize > 0, newRiffSize <= Int64(UInt32.max) else { return nil }
        var newHeader = Array(header[0..<4])
        PresetSubset.appendU32(&newHeader, UInt32(newRiffSize))
        newHeader += header[8..<12]
        var segments = [
            Segment(start: 0, length: 12, source: .bytes(newHeader)),
            Segment(start: 12, length: at.offset - 12, source: .file(offset: 12)),
            Segment(start: at.offset, length: Int64(newList.count), source: .bytes(newList)),
        ]
        if tailStart < fileSize {
            segments.append(Segment(start: at.offset + Int64(newList.count), length: fileSize - tailStart, source: .file(offset: tailStart)))
        }
        return segments
    }

    /// FluidSynth decodes an SF3 font's samples in OpenMP tasks that share
    /// one handle; where OpenMP runs threads (a test process, a plugin
    /// host: `spinet` itself runs its regions inline) reads, seeks and tells
    /// come from several threads at once.
    private let handleLock = PThreadLock()

    /// Reads exactly `count` bytes at the current position, or fails.
    func read(_ buffer: UnsafeMutableRawPointer, count: Int64) -> Bool {
        handleLock.withLock { readLocked(buffer, count: count) }
    }

    /// The position, for FluidSynth's `ftell`.
    var currentPosition: Int64 { handleLock.withLock { position } }

    private func readLocked(_ buffer: UnsafeMutableRawPointer, count: Int64) -> Bool {
        guard count >= 0, position >= 0, count <= size - position else { return false }
        var done: Int64 = 0
        for s in segments where done < count {
            let at = position + done
            guard at >= s.start && at < s.start + s.length else { continue }
            let n = min(count - done, s.start + s.length - at)
            switch s.source {
            case .bytes(let b):
                b.withUnsafeBytes { src in
                    (buffer + Int(done)).copyMemory(from: src.baseAddress! + Int(at - s.start), byteCount: Int(n))
                }
            case .file(let offset):
                guard fseeko(file, Int(offset + at - s.start), SEEK_SET) == 0,
                      fread(buffer + Int(done), 1, Int(n), file) == Int(n) else { return false }
            }
            done += n
        }
        position += done
        return done == count
    }

    func seek(_ offset: Int64, origin: Int32) -> Bool {
        handleLock.withLock { seekLocked(offset, origin: origin) }
    }

    private func seekLocked(_ offset: Int64, origin: Int32) -> Bool {
        let base: Int64
        switch origin {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = position
        case SEEK_END: base = size
        default: return false
        }
        guard base + offset >= 0 else { return false }
        position = base + offset
        return true
    }

    /// Gives `loader` (a FluidSynth SoundFont 2 loader) callbacks that read
    /// fonts through a view: cut down to `pendingPrograms` when set, without
    /// `pendingDisabled`'s samples.
    static func install(on loader: OpaquePointer) {
        fluid_sfloader_set_callbacks(loader, { name in
            guard let name else { return nil }
            guard let view = FontFileView(path: String(cString: name), programs: FontFileView.pendingPrograms,
                                          disabled: FontFileView.pendingDisabled) else { return nil }
            return Unmanaged.passRetained(view).toOpaque()
        }, { buffer, count, handle in
            guard let buffer, let handle else { return FLUID_FAILED }
            return Unmanaged<FontFileView>.fromOpaque(handle).takeUnretainedValue().read(buffer, count: count) ? FLUID_OK : FLUID_FAILED
        }, { handle, offset, origin in
            guard let handle else { return FLUID_FAILED }
            return Unmanaged<FontFileView>.fromOpaque(handle).takeUnretainedValue().seek(offset, origin: origin) ? FLUID_OK : FLUID_FAILED
        }, { handle in
            guard let handle else { return fluid_long_long_t(FLUID_FAILED) }
            return Unmanaged<FontFileView>.fromOpaque(handle).takeUnretainedValue().currentPosition
        }, { handle in
            guard let handle else { return FLUID_FAILED }
            Unmanaged<FontFileView>.fromOpaque(handle).release()
            return FLUID_OK
        })
    }
}
