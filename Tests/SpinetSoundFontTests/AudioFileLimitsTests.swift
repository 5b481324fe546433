import CSndFile
import Foundation
import Glibc
import Testing
import SpinetFile

/// The 4 GB limit of WAV and AIFF headers, and the Ogg stream serial.
@Suite("Audio file writer: sizes past 4 GB, Ogg serial")
struct AudioFileLimitsTests {
    /// The decision from the longest the render can be: plain WAV up to the
    /// limit (so ordinary renders keep their bytes), RF64 past it, AIFF refused.
    @Test func theLengthBoundDecidesRF64OrRefusesAIFF() throws {
        let hour: Int64 = 3600
        // 16-bit stereo at 48 kHz: 192,000 bytes a second, the limit near 6.2 hours.
        #expect(try !AudioFileWriter.needsRF64(format: .wav, sampleFormat: .int16, maxFrames: 6 * hour * 48000, name: "x.wav"))
        #expect(try AudioFileWriter.needsRF64(format: .wav, sampleFormat: .int16, maxFrames: 63 * hour * 48000 / 10, name: "x.wav"))
        // 32-bit float: 3.2 hours is past it (the render that read back as 336 s).
        #expect(try AudioFileWriter.needsRF64(format: .wav, sampleFormat: .float32, maxFrames: 32 * hour * 48000 / 10, name: "x.wav"))
        #expect(try !AudioFileWriter.needsRF64(format: .wav, sampleFormat: .float32, maxFrames: 3 * hour * 48000, name: "x.wav"))
        #expect(try AudioFileWriter.needsRF64(format: .wav, sampleFormat: .int24, maxFrames: Int64.max / 2, name: "x.wav"))
        // The byte limit itself.
        let limitFrames = AudioFileWriter.classicSizeLimit / 4
        #expect(try !AudioFileWriter.needsRF64(format: .wav, sampleFormat: .int16, maxFrames: limitFrames, name: "x.wav"))
        #expect(try AudioFileWriter.needsRF64(format: .wav, sampleFormat: .int16, maxFrames: limitFrames + 1, name: "x.wav"))
        // Formats without the limit never switch.
        for format in [AudioFileFormat.flac, .ogg, .mp3] {
            #expect(try !AudioFileWriter.needsRF64(format: format, sampleFormat: .int16, maxFrames: 24 * hour * 192000, name: "x"))
        }
        // AIFF: fine below, one line naming the output and the fix above.
        #expect(try !AudioFileWriter.needsRF64(format: .aiff, sampleFormat: .int16, maxFrames: 6 * hour * 48000, name: "x.aiff"))
        do {
            _ = try AudioFileWriter.needsRF64(format: .aiff, sampleFormat: .float32, maxFrames: 32 * hour * 48000 / 10, name: "x.aiff")
            Issue.record("a 3.2-hour float AIFF was not refused")
        } catch {
            #expect(error.description.contains("x.aiff") && error.description.contains("4 GB") && error.description.contains(".wav"), "\(error)")
        }
    }

    func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("spinet-limits-\(getpid())-\(name)").path
    }

    /// Writes `frames` frames of a quiet sine (in chunks) and closes the file.
    func writeTone(_ writer: AudioFileWriter, frames: Int) throws {
        let chunk = 65536
        var left = [Float](repeating: 0, count: chunk), right = left
        var done = 0
        while done < frames {
            let n = min(chunk, frames - done)
            for i in 0..<n {
                left[i] = 0.25 * sinf(Float(done + i) * 0.05)
                right[i] = -left[i]
            }
            try writer.write(left: left, right: right, frames: n)
            done += n
        }
        try writer.close()
    }

    /// What libsndfile reads back: the container and the frame count.
    func readBack(_ path: String) -> (type: Int32, frames: Int64)? {
        var info = SF_INFO()
        guard let f = sf_open(path, Int32(SFM_READ), &info) else { return nil }
        sf_close(f)
        return (info.format & Int32(SF_FORMAT_TYPEMASK), Int64(info.frames))
    }

    @Test(arguments: [SampleFormat.int16, .float32])
    func anRF64FileReadsBackWithItsFrameCount(sampleFormat: SampleFormat) throws {
        let path = temporaryPath("rf64-\(sampleFormat.rawValue).wav")
        defer { unlink(path) }
        let writer = try AudioFileWriter(path: path, format: .wav, sampleFormat: sampleFormat, sampleRate: 48000, rf64: true, name: "x.wav")
        try writeTone(writer, frames: 123_457)
        let back = try #require(readBack(path))
        #expect(back.type == Int32(SF_FORMAT_RF64))
        #expect(back.frames == 123_457)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).prefix(4) == Data("RF64".utf8))
    }

    /// Two Ogg files of the same audio are the same bytes, and libsndfile
    /// (through libogg, which checks every page's CRC) reads them back whole.
    @Test func oggFilesOfTheSameAudioAreIdenticalAndValid() throws {
        var files: [Data] = []
        for i in 0..<2 {
            let path = temporaryPath("serial-\(i).ogg")
            defer { unlink(path) }
            let writer = try AudioFileWriter(path: path, format: .ogg, sampleFormat: .int16, sampleRate: 48000)
            try writeTone(writer, frames: 96000)
            let back = try #require(readBack(path))
            #expect(back.type == Int32(SF_FORMAT_OGG) && back.frames == 96000, "\(back)")
            files.append(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        #expect(files[0].count > 1000 && files[0] == files[1])
    }

    /// A real WAV past 4 GB (16-bit, 6.3 hours at 48 kHz; about 4.4 GB of
    /// disk for a minute or two). Only with SPINET_LONG_TESTS=1.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SPINET_LONG_TESTS"] == "1", "set SPINET_LONG_TESTS=1"))
    func aWAVPast4GBIsWrittenAsRF64AndReadsBackWhole() throws {
        let frames = Int(63 * 3600 * 48000 / 10)
        let path = temporaryPath("long.wav")
        defer { unlink(path) }
        let rf64 = try AudioFileWriter.needsRF64(format: .wav, sampleFormat: .int16, maxFrames: Int64(frames), name: "long.wav")
        #expect(rf64)
        let writer = try AudioFileWriter(path: path, format: .wav, sampleFormat: .int16, sampleRate: 48000, rf64: rf64, name: "long.wav")
        try writeTone(writer, frames: frames)
        let back = try #require(readBack(path))
        #expect(back.type == Int32(SF_FORMAT_RF64) && back.frames == Int64(frames), "\(back)")
    }
}
