import CEBUR128
import Glibc
import SpinetEngine

/// `--normalize LUFS`: the render brought to an integrated loudness (EBU
/// R128, measured by libebur128) with the limiter's ceiling kept.
///
/// The render is spooled as 32-bit float to an anonymous temporary file
/// while its loudness is measured. Then the spool is played back through the
/// gain and a fresh look-ahead limiter (the engine's, same ceiling and knee:
/// bit-transparent below the knee, so a quieter render is only scaled), and
/// measured again; where the limiter took loudness away, the gain is raised
/// by what is missing and the playback repeats (at most `maxPasses`). Only
/// the last playback goes to the output. Everything is deterministic.
///
/// Each playback is measured at the render's own level (the limiter's
/// output divided by the gain), and the gain added to what is measured.
/// Integrated loudness gates its 400 ms blocks at -70 LUFS: measured after
/// the gain, a quiet target (-60, -70) would gate away the blocks the gain
/// took below -70, read louder than it is (a mean of the blocks left) and
/// push the gain further down, pass after pass, as though the limiter had
/// taken loudness. Measured at the render's level, the gating is the
/// render's, a gain alone changes the loudness by exactly that gain, and
/// only what the limiter takes away shows as missing.
public final class LoudnessNormalizer {
    public let sampleRate: Int
    public let target: Double
    public let ceilingDBFS: Double
    /// How close the result must come to the target, in LU.
    public static let tolerance = 0.05
    static let maxPasses = 4
    static let chunk = 4096

    private let spool: UnsafeMutablePointer<FILE>
    /// Stems (`--stems`): one spool each; they get the mix's gain and, frame
    /// for frame, the gain its limiter applies, so they still add up to it.
    private var stemSpools: [UnsafeMutablePointer<FILE>] = []
    private var meter: UnsafeMutablePointer<ebur128_state>?
    private var interleaved: [Float] = []
    public private(set) var frames: Int64 = 0

    /// What the normalization did, for the summary line.
    public struct Result: Sendable {
        /// Integrated loudness of the render before, and of the output.
        public var measured: Double
        public var output: Double
        public var gainDB: Double
        /// Playbacks through the limiter it took.
        public var passes: Int
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// `shouldStop` said stop (a signal) during a playback.
    public struct Interrupted: Error, Sendable {}

    public init(sampleRate: Int, target: Double, ceilingDBFS: Double = -1, stems: Int = 0) throws(Failure) {
        self.sampleRate = sampleRate
        self.target = target
        self.ceilingDBFS = ceilingDBFS
        guard let f = tmpfile() else {
            throw Failure(description: "--normalize needs a temporary file: \(String(cString: strerror(errno))) (set TMPDIR to a directory with room)")
        }
        spool = f
        meter = ebur128_init(2, UInt(sampleRate), Int32(EBUR128_MODE_I.rawValue))
        guard meter != nil else { fclose(f); throw Failure(description: "--normalize: libebur128 could not start") }
        for _ in 0..<stems {
            guard let s = tmpfile() else {
                throw Failure(description: "--normalize needs temporary files: \(String(cString: strerror(errno))) (set TMPDIR to a directory with room)")
            }
            stemSpools.append(s)
        }
    }

    deinit {
        for s in stemSpools { fclose(s) }
        fclose(spool)
        if meter != nil { ebur128_destroy(&meter) }
    }

    /// Takes rendered frames (a render's sink).
    public func append(left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames n: Int) throws(Failure) {
        guard n > 0 else { return }
        if interleaved.count < 2 * n { interleaved = [Float](repeating: 0, count: 2 * n) }
        for i in 0..<n {
            interleaved[2 * i] = left[i]
            interleaved[2 * i + 1] = right[i]
        }
        let written = interleaved.withUnsafeBufferPointer { b -> Int in
            ebur128_add_frames_float(meter, b.baseAddress, n)
            return fwrite(b.baseAddress, MemoryLayout<Float>.size * 2, n, spool)
        }
        guard written == n else {
            throw Failure(description: "--normalize: writing the temporary file failed: \(String(cString: strerror(errno))) (set TMPDIR to a directory with room)")
        }
        frames += Int64(n)
    }

    /// Takes a stem's rendered frames (the same frames the mix took last).
    public func appendStem(_ stem: Int, left: UnsafePointer<Float>, right: UnsafePointer<Float>, frames n: Int) throws(Failure) {
        guard n > 0 else { return }
        var buffer = [Float](repeating: 0, count: 2 * n)
        for i in 0..<n {
            buffer[2 * i] = left[i]
            buffer[2 * i + 1] = right[i]
        }
        let written = buffer.withUnsafeBufferPointer { fwrite($0.baseAddress, MemoryLayout<Float>.size * 2, n, stemSpools[stem]) }
        guard written == n else {
            throw Failure(description: "--normalize: writing the temporary file failed: \(String(cString: strerror(errno))) (set TMPDIR to a directory with room)")
        }
    }

    public typealias StemSink = (Int, UnsafePointer<Float>, UnsafePointer<Float>, Int) throws -> Void

    /// Integrated loudness of what was appended (-inf for silence).
    public var measuredLoudness: Double {
        var out = -Double.infinity
        _ = ebur128_loudness_global(meter, &out)
        return out
    }

    public typealias Sink = (UnsafePointer<Float>, UnsafePointer<Float>, Int) throws -> Void

    /// Plays the spool back at the target loudness into `sink`.
    /// `stemSink` gets each stem's frames, as many as the mix's, with the
    /// same gain and, frame for frame, the same limiter gain.
    /// `shouldStop` is asked every chunk: a stop throws `Interrupted`.
    public func finish(sink: Sink, stemSink: StemSink? = nil, shouldStop: () -> Bool = { false }) throws -> Result {
        let measured = measuredLoudness
        guard measured.isFinite else {
            throw Failure(description: "--normalize: the render has no loudness to measure (it is silent or shorter than 0.4 s)")
        }
        var gain = target - measured
        var output = measured
        var passes = 0
        // Measuring passes: only the loudness is kept.
        while passes < Self.maxPasses - 1 {
            passes += 1
            output = try play(gainDB: gain, sink: nil, shouldStop: shouldStop)
            let missing = target - output
            if abs(missing) <= Self.tolerance { break }
            gain += missing
        }
        // The pass that writes.
        passes += 1
        let noStems: StemSink = { _, _, _, _ in }
        output = try withoutActuallyEscaping(sink) { sink in
            try withoutActuallyEscaping(stemSink ?? noStems) { stems in
                try play(gainDB: gain, sink: sink, stemSink: stemSink == nil ? nil : stems, shouldStop: shouldStop)
            }
        }
        return Result(measured: measured, output: output, gainDB: gain, passes: passes)
    }

    /// One playback of the spool through the gain and the limiter; returns
    /// its loudness: measured at the render's level, plus the gain (see the type).
    private func play(gainDB: Double, sink: Sink?, stemSink: StemSink? = nil, shouldStop: () -> Bool) throws -> Double {
        guard fseeko(spool, 0, SEEK_SET) == 0 else {
            throw Failure(description: "--normalize: cannot read the temporary file back")
        }
        let stemCount = stemSink == nil ? 0 : stemSpools.count
        for s in 0..<stemCount where fseeko(stemSpools[s], 0, SEEK_SET) != 0 {
            throw Failure(description: "--normalize: cannot read the temporary file back")
        }
        var limiter = Limiter(sampleRate: Double(sampleRate), ceilingDBFS: ceilingDBFS)
        var state = ebur128_init(2, UInt(sampleRate), Int32(EBUR128_MODE_I.rawValue))
        defer { ebur128_destroy(&state) }
        let g = Float(pow(10, gainDB / 20))
        let n = Self.chunk
        var raw = [Float](repeating: 0, count: 2 * n)
        var left = [Float](repeating: 0, count: n), right = [Float](repeating: 0, count: n)
        var out = [Float](repeating: 0, count: 2 * n)
        var remaining = frames
        var skip = limiter.lookahead          // the limiter delays by its look-ahead
        var flush = limiter.lookahead         // zeros that push the last frames out
        // stems: the limiter's gain per frame, and each stem's look-ahead delay line
        let lookahead = limiter.lookahead
        var gains = [Float](repeating: 1, count: n)
        var stemDelay = [Float](repeating: 0, count: 2 * lookahead * stemCount)
        var stemLeft = [Float](repeating: 0, count: n), stemRight = [Float](repeating: 0, count: n)
        var stemPosition = 0
        let unscale = 1 / g
        while remaining > 0 || flush > 0 {
            if shouldStop() { throw Interrupted() }
            var m: Int
            let reading = remaining > 0
            if remaining > 0 {
                m = Int(min(Int64(n), remaining))
                let got = raw.withUnsafeMutableBufferPointer { fread($0.baseAddress, MemoryLayout<Float>.size * 2, m, spool) }
                guard got == m else { throw Failure(description: "--normalize: the temporary file was cut short") }
                for i in 0..<m { left[i] = raw[2 * i] * g; right[i] = raw[2 * i + 1] * g }
                remaining -= Int64(m)
            } else {
                m = min(n, flush)
                for i in 0..<m { left[i] = 0; right[i] = 0 }
                flush -= m
            }
            left.withUnsafeMutableBufferPointer { l in
                right.withUnsafeMutableBufferPointer { r in
                    gains.withUnsafeMutableBufferPointer { gb in
                        limiter.process(left: l.baseAddress!, right: r.baseAddress!, frames: m, gains: stemCount > 0 ? gb.baseAddress! : nil)
                    }
                }
            }
            let drop = min(skip, m)
            skip -= drop
            let k = m - drop
            if let stemSink {
                for s in 0..<stemCount {
                    if reading {
                        let got = raw.withUnsafeMutableBufferPointer { fread($0.baseAddress, MemoryLayout<Float>.size * 2, m, stemSpools[s]) }
                        guard got == m else { throw Failure(description: "--normalize: the temporary file was cut short") }
                    } else {
                        for i in 0..<(2 * m) { raw[i] = 0 }
                    }
                    var p = stemPosition
                    let base = 2 * lookahead * s
                    for i in 0..<m {
                        stemLeft[i] = stemDelay[base + p] * gains[i]
                        stemRight[i] = stemDelay[base + lookahead + p] * gains[i]
                        stemDelay[base + p] = raw[2 * i] * g
                        stemDelay[base + lookahead + p] = raw[2 * i + 1] * g
                        p = p + 1 == lookahead ? 0 : p + 1
                    }
                    if k > 0 {
                        try stemLeft.withUnsafeBufferPointer { l in
                            try stemRight.withUnsafeBufferPointer { r in try stemSink(s, l.baseAddress! + drop, r.baseAddress! + drop, k) }
                        }
                    }
                }
                stemPosition = (stemPosition + m) % lookahead
            }
            guard k > 0 else { continue }
            for i in 0..<k { out[2 * i] = left[drop + i] * unscale; out[2 * i + 1] = right[drop + i] * unscale }
            out.withUnsafeBufferPointer { _ = ebur128_add_frames_float(state, $0.baseAddress, k) }
            if let sink {
                try left.withUnsafeBufferPointer { l in
                    try right.withUnsafeBufferPointer { r in try sink(l.baseAddress! + drop, r.baseAddress! + drop, k) }
                }
            }
        }
        var loudness = -Double.infinity
        _ = ebur128_loudness_global(state, &loudness)
        return loudness + gainDB
    }
}
