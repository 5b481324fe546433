import Foundation
import Glibc
import Testing
import SpinetFile
import SpinetTestSupport

/// The 16-bit dither the files of one render share, and the peak the
/// summary and the stems' clipping warning read.
@Suite("Audio file writer: shared dither, sample peak")
struct DitherAndPeakTests {
    func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("spinet-dither-\(getpid())-\(name)").path
    }

    /// A signal a few LSB loud (where dither decides the bytes), `seed` apart.
    func signal(_ frames: Int, seed: Float) -> ([Float], [Float]) {
        let l = (0..<frames).map { 4.3 / 32767 * sinf(Float($0) * 0.013 * seed) }
        let r = (0..<frames).map { -2.7 / 32767 * sinf(Float($0) * 0.021 + seed) }
        return (l, r)
    }

    func write(_ writer: AudioFileWriter, _ s: ([Float], [Float]), blocks: [Int]) throws {
        var at = 0
        for n in blocks {
            try s.0.withUnsafeBufferPointer { l in
                try s.1.withUnsafeBufferPointer { r in
                    try writer.write(left: l.baseAddress! + at, right: r.baseAddress! + at, frames: n)
                }
            }
            at += n
        }
    }

    /// A writer that gathers frames (`batchFrames`, an offline render's)
    /// writes the bytes one that writes every call does, in each sample
    /// format: calls smaller and larger than the first, one that fills the
    /// batch exactly, one past it, and the rest at `close`.
    @Test(arguments: [SampleFormat.int16, .int24, .float32])
    func aBatchingWriterWritesTheSameBytes(format: SampleFormat) throws {
        let blocks = [20, 1024, 1024, 1024, 4, 5000, 100, 1024, 3]
        let frames = blocks.reduce(0, +)
        let s = signal(frames, seed: 1.7)
        let loud = (s.0.map { $0 * 5000 }, s.1.map { $0 * 3000 })
        let plain = try AudioFileWriter(path: temporaryPath("plain-\(format.rawValue).wav"), format: .wav, sampleFormat: format, sampleRate: 48000)
        let batched = try AudioFileWriter(path: temporaryPath("batched-\(format.rawValue).wav"), format: .wav, sampleFormat: format,
                                          sampleRate: 48000, batchFrames: 2068)
        defer { for n in ["plain", "batched"] { unlink(temporaryPath("\(n)-\(format.rawValue).wav")) } }
        try write(plain, loud, blocks: blocks)
        try write(batched, loud, blocks: blocks)
        #expect(batched.framesWritten == Int64(frames))
        try plain.close()
        try batched.close()
        let a = FileManager.default.contents(atPath: temporaryPath("plain-\(format.rawValue).wav")) ?? Data()
        let b = FileManager.default.contents(atPath: temporaryPath("batched-\(format.rawValue).wav")) ?? Data()
        #expect(a.count >= 44 + frames * 4)
        #expect(a == b)
    }

    /// Files that share one `DitherNoise` (the mix and stems of a render)
    /// get the bytes each would get alone: in step, in blocks of other
    /// sizes, with other music.
    @Test func writersSharingTheDitherGetTheBytesTheyGetAlone() throws {
        let blocks = [512, 512, 100, 512, 7, 1000, 512]
        let frames = blocks.reduce(0, +)
        let a = signal(frames, seed: 1), b = signal(frames, seed: 2.5)
        let shared = DitherNoise()
        func open(_ name: String, _ dither: DitherNoise = DitherNoise()) throws -> AudioFileWriter {
            try AudioFileWriter(path: temporaryPath(name), format: .wav, sampleFormat: .int16, sampleRate: 48000, dither: dither)
        }
        let aloneA = try open("alone-a.wav"), aloneB = try open("alone-b.wav")
        try write(aloneA, a, blocks: blocks)
        try write(aloneB, b, blocks: blocks)
        let mix = try open("mix.wav", shared), stem = try open("stem.wav", shared)
        let other = try open("other.wav", shared), late = try open("late.wav", shared)
        var at = 0
        for n in blocks {   // in step, as a render writes them
            try write(mix, (Array(a.0[at..<at + n]), Array(a.1[at..<at + n])), blocks: [n])
            try write(stem, (Array(b.0[at..<at + n]), Array(b.1[at..<at + n])), blocks: [n])
            at += n
        }
        try write(other, a, blocks: [300, 1500, frames - 1800])   // other blocks: no block matches
        try write(late, a, blocks: blocks.reversed())   // the last block's length, from another state
        for w in [aloneA, aloneB, mix, stem, other, late] { try w.close() }
        func bytes(_ name: String) -> Data { FileManager.default.contents(atPath: temporaryPath(name)) ?? Data() }
        defer { for n in ["alone-a", "alone-b", "mix", "stem", "other", "late"] { unlink(temporaryPath(n + ".wav")) } }
        #expect(bytes("alone-a.wav").count == 44 + 4 * frames)
        #expect(bytes("mix.wav") == bytes("alone-a.wav"))
        #expect(bytes("stem.wav") == bytes("alone-b.wav"))
        #expect(bytes("other.wav") == bytes("alone-a.wav"))
        #expect(bytes("late.wav") == bytes("alone-a.wav"))
        #expect(bytes("alone-a.wav") != bytes("alone-b.wav"))
    }

    /// Eight frames at a time or one at a time, every sample gets the same
    /// 16 bits: over the range, past it, at half LSBs, and NaN and the
    /// infinities (clamped, as one sample at a time clamps them).
    @Test func theVectorLoopWritesWhatTheSampleLoopWrites() throws {
        var values: [Float] = [0, -0.0, 1, -1, 1.5, -1.5, .nan, .infinity, -.infinity, 0.5 / 32767, -0.5 / 32767,
                               1.5 / 32767, 32766.5 / 32767, -32767.5 / 32767, .leastNonzeroMagnitude]
        var rng = SplitMix64(seed: 7)
        while values.count < 203 { values.append(Float(Double(rng.next() % 2_000_001) / 1_000_000 - 1) * 1.01) }
        let right = values.reversed().map { $0 * 0.7 }
        let signal = (values, Array(right))
        let whole = try AudioFileWriter(path: temporaryPath("whole.wav"), format: .wav, sampleFormat: .int16, sampleRate: 48000)
        let single = try AudioFileWriter(path: temporaryPath("single.wav"), format: .wav, sampleFormat: .int16, sampleRate: 48000)
        try write(whole, signal, blocks: [values.count])
        try write(single, signal, blocks: [Int](repeating: 1, count: values.count))
        try whole.close()
        try single.close()
        defer { unlink(temporaryPath("whole.wav")); unlink(temporaryPath("single.wav")) }
        let a = FileManager.default.contents(atPath: temporaryPath("whole.wav")) ?? Data()
        let b = FileManager.default.contents(atPath: temporaryPath("single.wav")) ?? Data()
        #expect(a.count == 44 + 4 * values.count)
        #expect(a == b)
        let samples = a.dropFirst(44).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        // frame i's left sample is samples[2i]: 1.5, NaN and +inf at full scale, -1.5 and -inf at its negative end
        #expect(samples[8] == 32767 && samples[12] == 32767 && samples[14] == 32767)
        #expect(samples[10] == -32768 && samples[16] == -32768)
    }

    /// The dither is there: silence becomes -1, 0 and +1 LSB (triangular
    /// over ±1 LSB: |d| < 0.5 three times in four, so 0 three quarters of
    /// the time), and a third of an LSB survives on average.
    @Test func silenceIsDitheredTriangularly() throws {
        let frames = 48000
        let path = temporaryPath("tpdf.wav")
        defer { unlink(path) }
        let w = try AudioFileWriter(path: path, format: .wav, sampleFormat: .int16, sampleRate: 48000)
        try write(w, ([Float](repeating: 0, count: frames), [Float](repeating: 1.0 / 3 / 32767, count: frames)), blocks: [frames])
        try w.close()
        let data = FileManager.default.contents(atPath: path)!.dropFirst(44)
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let left = stride(from: 0, to: samples.count, by: 2).map { Int(samples[$0]) }
        let right = stride(from: 1, to: samples.count, by: 2).map { Int(samples[$0]) }
        #expect(Set(left) == [-1, 0, 1])
        let zeros = Double(left.filter { $0 == 0 }.count) / Double(frames)
        #expect(abs(zeros - 0.75) < 0.02, "\(zeros)")
        let mean = Double(right.reduce(0, +)) / Double(frames)
        #expect(abs(mean - 1.0 / 3) < 0.02, "\(mean)")
    }

    /// The vector peak equals the plain maximum of magnitudes, at every
    /// length (the vector loop and its tail), whatever the signs.
    @Test func thePeakIsTheLargestMagnitude() {
        var rng = SplitMix64(seed: 3)
        for frames in [0, 1, 7, 8, 9, 64, 333] {
            let l = (0..<frames).map { _ in Float.random(in: -1...1, using: &rng) }
            let r = (0..<frames).map { _ in Float.random(in: -2...2, using: &rng) }
            let expected = zip(l, r).reduce(Float(0.125)) { max($0, abs($1.0), abs($1.1)) }
            #expect(SamplePeak.update(0.125, left: l, right: r, frames: frames) == expected, "\(frames) frames")
        }
        // A negative sample is the peak; a NaN does not hide the others.
        var l = [Float](repeating: 0.1, count: 16), r = l
        l[11] = -0.9
        r[3] = .nan
        #expect(SamplePeak.update(0, left: l, right: r, frames: 16) == 0.9)
    }
}
