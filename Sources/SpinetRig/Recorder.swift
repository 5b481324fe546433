import Glibc
import Synchronization
import SpinetEngine
import SpinetFile
import SpinetHost

/// `--record FILE`: the output of the engine, as it is played, to a file.
///
/// The render thread only copies each block into `ring`; a writer thread
/// encodes what it finds there through `AudioFileWriter` into a temporary
/// file beside the target (`OutputFile`), renamed into place by `finish`, so
/// the file is complete and valid after Ctrl-C and never half-written.
public final class Recorder: @unchecked Sendable {
    public let ring: RecordRing
    public let target: String
    private let output: OutputFile
    private let writer: AudioFileWriter
    private let stopRequested = Atomic<Bool>(false)
    private let failure = Locked<AudioFileError?>(nil)
    private var thread: NativeThread?
    private let chunk = 4096

    /// Opens the temporary file. `ringSeconds` of audio may wait for the writer.
    public init(target: String, force: Bool, format: AudioFileFormat, sampleFormat: SampleFormat,
                sampleRate: Int, ringSeconds: Double = 4) throws(AudioFileError) {
        precondition(target != "-", "record to a file, not standard output")
        try AudioFileWriter.validate(format: format, sampleFormat: sampleFormat, sampleRate: sampleRate)
        output = try OutputFile(target: target, force: force)
        do {
            writer = try AudioFileWriter(path: output.writePath, format: format, sampleFormat: sampleFormat, sampleRate: sampleRate)
        } catch {
            output.discard()
            throw error
        }
        self.target = target
        ring = RecordRing(capacity: Int(Double(sampleRate) * ringSeconds))
    }

    /// Starts the writer thread.
    public func start() {
        thread = NativeThread(name: "spinet-record") { [self] in self.writeLoop() }
    }

    private func writeLoop() {
        let l = UnsafeMutablePointer<Float>.allocate(capacity: chunk)
        let r = UnsafeMutablePointer<Float>.allocate(capacity: chunk)
        defer { l.deallocate(); r.deallocate() }
        while true {
            let stopping = stopRequested.load(ordering: .acquiring)
            let n = ring.read(left: l, right: r, maxFrames: chunk)
            if n > 0 {
                do {
                    try writer.write(left: l, right: r, frames: n)
                } catch {
                    failure.withLock { $0 = error }
                    return
                }
                continue
            }
            if stopping { return }
            usleep(20_000)
        }
    }

    /// Frames written to the file so far.
    public var framesWritten: Int64 { writer.framesWritten }

    /// After the render thread has stopped: writes what is left, finishes
    /// the file and moves it into place. Returns the frames written.
    @discardableResult
    public func finish() throws(AudioFileError) -> Int64 {
        stopRequested.store(true, ordering: .releasing)
        thread?.join()
        thread = nil
        if let e = failure.withLock({ $0 }) {
            output.discard()
            throw e
        }
        do {
            try writer.close()
            try output.commit()
        } catch {
            output.discard()
            throw error
        }
        return writer.framesWritten
    }
}
