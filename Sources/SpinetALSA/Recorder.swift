import Glibc
import Synchronization
import SpinetEngine
import SpinetFile

/// A single-producer single-consumer ring of stereo frames, allocated once:
/// the render thread copies each block in, a writer thread takes it out.
///
/// A full ring never blocks the render thread: the frames that do not fit
/// are counted as lost. Memory ordering as in `EventQueue`: the producer
/// fills the frames, then publishes the new tail (release); the consumer
/// reads the tail (acquire) before the frames and publishes its head
/// (release) before the producer reuses them.
public final class RecordRing: @unchecked Sendable {
    public let capacity: Int
    private let mask: Int
    private let left: UnsafeMutablePointer<Float>
    private let right: UnsafeMutablePointer<Float>
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)
    private let lost = Atomic<Int>(0)

    /// - Parameter capacity: frames, rounded up to a power of two.
    public init(capacity: Int) {
        var c = 1
        while c < max(capacity, 2) { c <<= 1 }
        self.capacity = c
        mask = c - 1
        left = .allocate(capacity: c)
        left.initialize(repeating: 0, count: c)
        right = .allocate(capacity: c)
        right.initialize(repeating: 0, count: c)
    }

    deinit {
        left.deallocate()
        right.deallocate()
    }

    /// Frames that did not fit (the writer fell behind).
    public var lostFrames: Int { lost.load(ordering: .relaxed) }

    /// Frames waiting for the writer.
    public var available: Int { tail.load(ordering: .acquiring) &- head.load(ordering: .acquiring) }

    /// Render thread. Copies as many of `frames` frames as fit; counts the
    /// rest as lost. Returns the frames copied.
    @discardableResult
    public func write(left l: UnsafePointer<Float>, right r: UnsafePointer<Float>, frames: Int) -> Int {
        let t = tail.load(ordering: .relaxed)
        let free = capacity - (t &- head.load(ordering: .acquiring))
        let n = min(frames, free)
        if n < frames { lost.add(frames - n, ordering: .relaxed) }
        guard n > 0 else { return 0 }
        let start = t & mask
        let first = min(n, capacity - start)
        (left + start).update(from: l, count: first)
        (right + start).update(from: r, count: first)
        if n > first {
            left.update(from: l + first, count: n - first)
            right.update(from: r + first, count: n - first)
        }
        tail.store(t &+ n, ordering: .releasing)
        return n
    }

    /// Writer thread. Moves up to `maxFrames` frames out; returns how many.
    public func read(left l: UnsafeMutablePointer<Float>, right r: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
        let h = head.load(ordering: .relaxed)
        let n = min(maxFrames, tail.load(ordering: .acquiring) &- h)
        guard n > 0 else { return 0 }
        let start = h & mask
        let first = min(n, capacity - start)
        l.update(from: left + start, count: first)
        r.update(from: right + start, count: first)
        if n > first {
            (l + first).update(from: left, count: n - first)
            (r + first).update(from: right, count: n - first)
        }
        head.store(h &+ n, ordering: .releasing)
        return n
    }
}

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
    private let failure = Mutex<AudioFileError?>(nil)
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
