import CSndFile
import Glibc
import SpinetSupport

/// Container formats Spinet writes (through libsndfile).
public enum AudioFileFormat: String, CaseIterable, Sendable {
    case wav, flac, ogg, aiff, mp3

    /// The format a file name asks for by its extension, if any.
    public init?(pathExtension ext: String) {
        switch ext.lowercased() {
        case "wav", "wave": self = .wav
        case "flac": self = .flac
        case "ogg", "oga": self = .ogg
        case "aiff", "aif", "aifc": self = .aiff
        case "mp3": self = .mp3
        default: return nil
        }
    }

    /// Whether the sample format is meaningful for this container.
    var isLossy: Bool { self == .ogg || self == .mp3 }
}

/// Sample formats for `--bits`.
public enum SampleFormat: String, CaseIterable, Sendable {
    case int16 = "16", int24 = "24", float32 = "32f"
}

/// An error writing audio; `description` is one line.
public struct AudioFileError: Error, CustomStringConvertible, Sendable {
    public var description: String
}

/// Writes planar Float32 stereo to an audio file through libsndfile.
///
/// Integer formats are converted here, not in libsndfile: 16-bit output gets
/// TPDF dither (triangular, 2 LSB peak-to-peak, see `DitherNoise`); 24-bit
/// is rounded.
/// Input is expected within [-1, 1] (the engine's limiter guarantees it).
public final class AudioFileWriter {
    public let format: AudioFileFormat
    public let sampleFormat: SampleFormat
    public let sampleRate: Int
    private var file: OpaquePointer?
    private var pipe: PipeStream?
    private var virtualIO = PipeStream.callbacks
    private let description: String
    /// The file written by path (nil: a descriptor), for the Ogg serial rewrite.
    private let path: String?
    private var interleavedFloat: [Float] = []
    private var interleavedInt: [Int32] = []
    private var interleavedShort: [Int16] = []
    private var ditherState = DitherNoise.seed
    private let dither: DitherNoise
    public private(set) var framesWritten: Int64 = 0
    /// Frames converted but not yet handed to libsndfile (see `batchFrames`).
    private var pending = 0
    private let batchFrames: Int
    /// True when the reader of a pipe went away (not an error worth reporting).
    public var readerClosed: Bool { pipe?.brokenPipe ?? false }

    /// Checks a container / sample format / rate combination before any work.
    public static func validate(format: AudioFileFormat, sampleFormat: SampleFormat, sampleRate: Int) throws(AudioFileError) {
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = 2
        info.format = Self.sfFormat(format, sampleFormat)
        // libsndfile's MPEG encoder takes only the MPEG rates, but sf_format_check
        // lets any rate through and sf_open fails later: check here, before any work.
        if format == .mp3 && !mp3Rates.contains(sampleRate) {
            let usable = mp3Rates.filter { $0 >= 22050 }.map(String.init)
            throw AudioFileError(description: "MP3 cannot be written at \(sampleRate) Hz; use --rate "
                + usable.dropLast().joined(separator: ", ") + " or \(usable.last!), or .wav or .flac")
        }
        if sf_format_check(&info) == 0 {
            switch format {
            case .flac where sampleFormat == .float32:
                throw AudioFileError(description: "FLAC cannot store 32-bit float samples; use --bits 16 or --bits 24")
            case .mp3, .ogg:
                throw AudioFileError(description: "this libsndfile cannot write \(format.rawValue.uppercased()) at \(sampleRate) Hz; use .wav or .flac")
            case .wav, .flac, .aiff:
                throw AudioFileError(description: "\(format.rawValue.uppercased()) cannot store \(sampleFormat.rawValue)-bit samples at \(sampleRate) Hz")
            }
        }
    }

    /// The sample rates MPEG audio (layer III) allows.
    static let mp3Rates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000]

    /// Sizes in a WAV or AIFF header are 32 bits: past this many bytes of
    /// samples (less room for the header chunks) they wrap around.
    public static let classicSizeLimit: Int64 = Int64(UInt32.max) - 65536

    /// How a render of at most `maxFrames` frames is stored. WAV switches to
    /// RF64 (64-bit sizes, read by broadcast and audio tools) when its data
    /// can pass 4 GB, and stays plain WAV otherwise; AIFF has no such variant
    /// and is refused (`name` is the output, for the error). Returns true for RF64.
    public static func needsRF64(format: AudioFileFormat, sampleFormat: SampleFormat, maxFrames: Int64,
                                 name: String) throws(AudioFileError) -> Bool {
        guard format == .wav || format == .aiff else { return false }
        let bytesPerSample: Int64 = sampleFormat == .int16 ? 2 : sampleFormat == .int24 ? 3 : 4
        let (bytes, overflow) = maxFrames.multipliedReportingOverflow(by: 2 * bytesPerSample)
        guard overflow || bytes > classicSizeLimit else { return false }
        if format == .wav { return true }
        let gb = overflow ? "more than 4" : formatted("%.1f", Double(bytes) / 1e9)
        throw AudioFileError(description: "\(name): AIFF cannot hold more than 4 GB, and this render can reach \(gb) GB; use .wav (written as RF64) or .flac")
    }

    static func sfFormat(_ format: AudioFileFormat, _ sampleFormat: SampleFormat) -> Int32 {
        let sub: Int32
        switch sampleFormat {
        case .int16: sub = Int32(SF_FORMAT_PCM_16)
        case .int24: sub = Int32(SF_FORMAT_PCM_24)
        case .float32: sub = Int32(SF_FORMAT_FLOAT)
        }
        switch format {
        case .wav: return Int32(SF_FORMAT_WAV) | sub
        case .aiff: return Int32(SF_FORMAT_AIFF) | sub
        case .flac: return Int32(SF_FORMAT_FLAC) | sub
        case .ogg: return Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_VORBIS)
        case .mp3: return Int32(SF_FORMAT_MPEG) | Int32(SF_FORMAT_MPEG_LAYER_III)
        }
    }

    /// Opens `path` for writing, or the open `fileDescriptor` (standard
    /// output, a device, a FIFO) when given. `name` is what errors call the
    /// output (the file the user named, not a temporary file); `rf64` writes
    /// a WAV as RF64 (see `needsRF64`; not for a stream). The files of one
    /// render share their `dither` (see `DitherNoise`). `batchFrames`
    /// gathers that many frames before handing them to libsndfile: an
    /// offline render's files get a few large writes instead of one per
    /// block (each block's write of a few kilobytes, off the page
    /// boundaries, had the kernel clear and fill every page twice: a
    /// seventh of a stems render went there); 0 writes each call's frames
    /// at once (recording, a pipe).
    public init(path: String, fileDescriptor: Int32? = nil, format: AudioFileFormat, sampleFormat: SampleFormat, sampleRate: Int,
                rf64: Bool = false, name: String? = nil, dither: DitherNoise = DitherNoise(),
                batchFrames: Int = 0) throws(AudioFileError) {
        try Self.validate(format: format, sampleFormat: sampleFormat, sampleRate: sampleRate)
        self.dither = dither
        self.format = format
        self.sampleFormat = format.isLossy ? .float32 : sampleFormat
        self.sampleRate = sampleRate
        description = name ?? (fileDescriptor == nil ? path : "standard output")
        self.path = fileDescriptor == nil ? path : nil
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = 2
        info.format = Self.sfFormat(format, sampleFormat)
        if let fd = fileDescriptor, lseek(fd, 0, SEEK_CUR) < 0 {
            // A pipe: libsndfile cannot seek back to finish the header, so stream it.
            guard format == .wav else {
                throw AudioFileError(description: "only WAV can be streamed to a pipe; use --format wav with -o -")
            }
            let p = PipeStream(fd: fd)
            pipe = p
            file = sf_open_virtual(&virtualIO, Int32(SFM_WRITE), &info, Unmanaged.passUnretained(p).toOpaque())
        } else if let fd = fileDescriptor {
            if rf64 && format == .wav { info.format = Int32(SF_FORMAT_RF64) | (info.format & Int32(SF_FORMAT_SUBMASK)) }
            file = sf_open_fd(fd, Int32(SFM_WRITE), &info, 0)
        } else {
            if rf64 && format == .wav { info.format = Int32(SF_FORMAT_RF64) | (info.format & Int32(SF_FORMAT_SUBMASK)) }
            file = sf_open(path, Int32(SFM_WRITE), &info)
        }
        guard file != nil else {
            throw AudioFileError(description: "cannot write \(description): \(String(cString: sf_strerror(nil)))")
        }
        // a listener at the other end of a pipe gets each block as it comes
        self.batchFrames = pipe == nil ? max(0, batchFrames) : 0
        // Spinet's floats are already within [-1, 1]; keep libsndfile from rescaling.
        _ = sf_command(file, Int32(SFC_SET_NORM_FLOAT), nil, Int32(SF_TRUE))
        _ = sf_command(file, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        // libsndfile's PEAK chunk (float files) carries the time of writing,
        // which would make two renders of the same input differ.
        _ = sf_command(file, Int32(SFC_SET_ADD_PEAK_CHUNK), nil, Int32(SF_FALSE))
        if format == .flac {
            var level = 0.5
            _ = sf_command(file, Int32(SFC_SET_COMPRESSION_LEVEL), &level, Int32(MemoryLayout<Double>.size))
        }
        if format.isLossy {
            var quality = 0.4   // about 160 kbit/s stereo for Vorbis
            _ = sf_command(file, Int32(SFC_SET_VBR_ENCODING_QUALITY), &quality, Int32(MemoryLayout<Double>.size))
        }
    }

    deinit {
        if let file { sf_close(file) }
    }

    /// Appends `frames` frames (handed to libsndfile once `batchFrames`
    /// have gathered; `close` writes the rest).
    public func write(left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) throws(AudioFileError) {
        guard frames > 0, file != nil else { return }
        // (grown keeping the frames gathered so far: a call may bring more
        // frames than the first one did)
        let n = 2 * (pending + frames), room = 2 * (batchFrames + frames)
        let at = 2 * pending
        switch sampleFormat {
        case .float32:
            Self.grow(&interleavedFloat, to: n, room: room)
            interleavedFloat.withUnsafeMutableBufferPointer { out in
                let p = out.baseAddress! + at
                for i in 0..<frames {
                    p[2 * i] = left[i]
                    p[2 * i + 1] = right[i]
                }
            }
        case .int16:
            Self.grow(&interleavedShort, to: n, room: room)
            let d = dither.next(2 * frames, after: &ditherState)
            interleavedShort.withUnsafeMutableBufferPointer { out in
                let p = out.baseAddress! + at
                var i = 0
                while i + 8 <= frames {
                    let dither = UnsafeRawPointer(d + 2 * i).loadUnaligned(as: SIMD16<Float>.self)
                    let l = Self.ditherTo16(UnsafeRawPointer(left + i).loadUnaligned(as: SIMD8<Float>.self), dither.evenHalf)
                    let r = Self.ditherTo16(UnsafeRawPointer(right + i).loadUnaligned(as: SIMD8<Float>.self), dither.oddHalf)
                    // a frame's two samples side by side (little-endian: left first)
                    let pairs = (SIMD8<UInt32>(truncatingIfNeeded: l) & 0xFFFF) | (SIMD8<UInt32>(truncatingIfNeeded: r) &<< 16)
                    UnsafeMutableRawPointer(p + 2 * i).storeBytes(of: pairs, as: SIMD8<UInt32>.self)
                    i += 8
                }
                while i < frames {
                    p[2 * i] = Self.ditherTo16(left[i], d[2 * i])
                    p[2 * i + 1] = Self.ditherTo16(right[i], d[2 * i + 1])
                    i += 1
                }
            }
        case .int24:
            Self.grow(&interleavedInt, to: n, room: room)
            interleavedInt.withUnsafeMutableBufferPointer { out in
                let p = out.baseAddress! + at
                for i in 0..<frames {
                    p[2 * i] = Self.to24(left[i])
                    p[2 * i + 1] = Self.to24(right[i])
                }
            }
        }
        pending += frames
        framesWritten += Int64(frames)
        if pending >= batchFrames { try writePending() }
    }

    /// Makes `buffer` hold at least `n` values (`room` when it grows),
    /// keeping the ones it holds.
    private static func grow<T: Numeric>(_ buffer: inout [T], to n: Int, room: Int) {
        if buffer.count < n { buffer += [T](repeating: 0, count: max(n, room) - buffer.count) }
    }

    /// Hands the gathered frames to libsndfile.
    private func writePending() throws(AudioFileError) {
        guard pending > 0, let file else { return }
        let frames = pending
        pending = 0
        let written: Int
        switch sampleFormat {
        case .float32:
            written = Int(interleavedFloat.withUnsafeBufferPointer { sf_writef_float(file, $0.baseAddress, sf_count_t(frames)) })
        case .int16:
            written = Int(interleavedShort.withUnsafeBufferPointer { sf_writef_short(file, $0.baseAddress, sf_count_t(frames)) })
        case .int24:
            written = Int(interleavedInt.withUnsafeBufferPointer { sf_writef_int(file, $0.baseAddress, sf_count_t(frames)) })
        }
        if written != frames {
            let reason = String(cString: sf_strerror(file))
            let sys = errno != 0 ? String(cString: strerror(errno)) : reason
            throw AudioFileError(description: "writing \(description) failed: \(sys == "No Error." ? reason : sys)")
        }
    }

    /// TPDF dither `d` (see `DitherNoise`) and rounding to 16 bits.
    @inline(__always) static func ditherTo16(_ x: Float, _ d: Float) -> Int16 {
        let v = max(-32768, min(32767, x * 32767 + d))
        return Int16(roundedToEven(v))
    }

    /// `ditherTo16` on eight samples, to the bit (NaN becomes 32767, as
    /// `min` makes it): once `magic` is added, a whole number in ±2^15 is
    /// the low bits of the float's pattern.
    @inline(__always) static func ditherTo16(_ x: SIMD8<Float>, _ d: SIMD8<Float>) -> SIMD8<Int32> {
        var v = x * 32767 + d
        v.replace(with: 32767, where: .!(v .< 32767))
        v.replace(with: -32768, where: .!(v .>= -32768))
        let t = v + 12_582_912
        return unsafeBitCast(t, to: SIMD8<Int32>.self) &- 0x4B40_0000
    }

    /// `x.rounded(.toNearestOrEven)` for |x| < 2^22, without the libm call
    /// the baseline x86-64 target makes for it: adding and subtracting
    /// 1.5 · 2^23 leaves the nearest integer (ties to even, the default
    /// rounding mode), in two additions the loop can keep in registers.
    @inline(__always) static func roundedToEven(_ x: Float) -> Float {
        let magic: Float = 12_582_912
        return (x + magic) - magic
    }

    @inline(__always) static func to24(_ x: Float) -> Int32 {
        let v = (Double(x) * 8_388_607).rounded()
        // libsndfile takes the top 24 bits of a 32-bit int
        return Int32(max(-8_388_608, min(8_388_607, v))) << 8
    }

    /// Finishes the file (headers, encoder flush). Errors here mean the file is incomplete.
    public func close() throws(AudioFileError) {
        guard let f = file else { return }
        try writePending()
        file = nil
        sf_write_sync(f)
        if sf_close(f) != 0 {
            throw AudioFileError(description: "finishing \(description) failed: \(String(cString: strerror(errno)))")
        }
        // libsndfile gives each Ogg stream a random serial number; a fixed
        // one keeps renders byte-identical (a descriptor cannot be read back).
        if format == .ogg, let path {
            do {
                try OggPages.normalizeSerial(path: path)
            } catch {
                throw AudioFileError(description: "finishing \(description) failed: \(error.description)")
            }
        }
    }
}

/// The largest sample magnitude of a stereo block, eight frames at a time.
public enum SamplePeak {
    /// max(`peak`, |left[i]|, |right[i]|) over the `frames` frames.
    /// (Compares and selects on whole vectors: `pointwiseMax` goes lane by
    /// lane through a library call, which made this a tenth of a stems render.)
    @inline(__always)
    public static func update(_ peak: Float, left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames: Int) -> Float {
        var m = SIMD8<Float>(repeating: peak)
        var i = 0
        while i + 8 <= frames {
            let a = magnitude(UnsafeRawPointer(left + i).loadUnaligned(as: SIMD8<Float>.self))
            let b = magnitude(UnsafeRawPointer(right + i).loadUnaligned(as: SIMD8<Float>.self))
            m.replace(with: a, where: a .> m)
            m.replace(with: b, where: b .> m)
            i += 8
        }
        var result = m.max()
        while i < frames {
            result = Swift.max(result, Swift.max(Swift.abs(left[i]), Swift.abs(right[i])))
            i += 1
        }
        return result
    }

    /// |x| per lane: the sign bits cleared.
    @inline(__always) private static func magnitude(_ x: SIMD8<Float>) -> SIMD8<Float> {
        unsafeBitCast(unsafeBitCast(x, to: SIMD8<UInt32>.self) & 0x7FFF_FFFF, to: SIMD8<Float>.self)
    }
}
