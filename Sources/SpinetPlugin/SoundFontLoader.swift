import Glibc
import Synchronization
import SpinetEngine

/// The newest of a stream of byte records, passed from one writer thread to
/// one reader thread without a lock or an allocation (a triple buffer: the
/// writer fills its own buffer and swaps it with the middle one; the reader
/// swaps the middle one, when it is newer, with its own). Records the reader
/// did not take in time are replaced by newer ones.
final class LatestRecord: @unchecked Sendable {
    let capacity: Int
    private let storage: UnsafeMutablePointer<UInt8>
    /// The middle buffer's index, and `fresh` when the writer put it there since the reader last took one.
    private let middle = Atomic<Int>(1)
    private static let fresh = 4
    private var back = 2    // the writer's
    private var front = 0   // the reader's
    /// A second writer or reader at the same time is refused, not raced.
    private let writing = Atomic<Bool>(false)
    private let reading = Atomic<Bool>(false)

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: 3 * capacity)
        storage.initialize(repeating: 0, count: 3 * capacity)
    }

    deinit { storage.deallocate() }

    /// Fills the writer's buffer (`capacity` bytes) and publishes it; false
    /// (nothing published) when another thread is writing.
    func write(_ fill: (UnsafeMutablePointer<UInt8>) -> Void) -> Bool {
        guard !writing.exchange(true, ordering: .acquiring) else { return false }
        fill(storage + back * capacity)
        back = middle.exchange(back | Self.fresh, ordering: .acquiringAndReleasing) & 3
        writing.store(false, ordering: .releasing)
        return true
    }

    /// Reads the newest record, if one came since the last read.
    func read<T>(_ body: (UnsafePointer<UInt8>) -> T) -> T? {
        guard middle.load(ordering: .acquiring) & Self.fresh != 0,
              !reading.exchange(true, ordering: .acquiring) else { return nil }
        defer { reading.store(false, ordering: .releasing) }
        guard middle.load(ordering: .acquiring) & Self.fresh != 0 else { return nil }
        front = middle.exchange(front, ordering: .acquiringAndReleasing) & 3
        return body(UnsafePointer(storage + front * capacity))
    }
}

/// The plugin core's one SoundFont loader: a thread of the instance that
/// loads the fonts a host asks for (`request`, from any thread, the audio
/// thread too) through `PluginInstance.loadSoundFont`, the same call an LV2
/// host's worker makes, and reports each load (`takeResult`, and the
/// listener). The newest request wins: one asked for while another loads
/// is loaded next, and any between them are skipped. Between loads it does
/// the instance's upkeep when asked (`requestUpkeep`): the spare graph of
/// the next activation, and the release of the graphs put aside.
final class SoundFontLoader: @unchecked Sendable {
    /// The longest path a request carries (bytes, without the NUL).
    static let pathCapacity = 4095

    private let requests = LatestRecord(capacity: 2 + pathCapacity)
    private let results = LatestRecord(capacity: 4 + 2 * (2 + pathCapacity))
    /// Requests made, and the count of them the loader has dealt with.
    private let requested = Atomic<Int>(0)
    private let finished = Atomic<Int>(0)
    private let quit = Atomic<Bool>(false)
    private let upkeepRequested = Atomic<Bool>(false)
    private let wake: UnsafeMutablePointer<sem_t>
    private var thread: NativeThread?

    /// What the loader calls for a request: the status (0: loaded) and the font in use after it.
    typealias Load = @Sendable (String) -> (status: Int32, inUse: String)
    /// Called on the loader thread after a load's result can be taken.
    typealias Listener = @Sendable (Int32) -> Void

    private let load: Load
    /// What `requestUpkeep` has the thread do.
    private let upkeep: @Sendable () -> Void
    private let listener = Locked<Listener?>(nil)

    init(load: @escaping Load, upkeep: @escaping @Sendable () -> Void = {}) {
        wake = .allocate(capacity: 1)
        sem_init(wake, 0, 0)
        self.load = load
        self.upkeep = upkeep
        // (the thread holds the loader until `stop`, which its owner calls)
        thread = NativeThread(name: "spinet-fonts") { [self] in run() }
    }

    /// Stops the thread (a load in hand finishes first). The owner calls it
    /// before letting go of the loader.
    func stop() {
        guard let thread else { return }
        quit.store(true, ordering: .releasing)
        sem_post(wake)
        // (the owner's last reference may go on this thread, in a load)
        if thread.isCurrent { thread.detach() } else { thread.join() }
        self.thread = nil
    }

    deinit {
        sem_destroy(wake)
        wake.deallocate()
    }

    func setListener(_ l: Listener?) { listener.withLock { $0 = l } }

    /// Asks for `path` (UTF-8 bytes, no NUL): copies it and wakes the
    /// loader. Lock- and allocation-free. False when the path is empty or
    /// longer than `pathCapacity`, or another thread is asking at the same moment.
    func request(_ path: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = path.baseAddress, !path.isEmpty, path.count <= Self.pathCapacity,
              !quit.load(ordering: .acquiring) else { return false }
        let written = requests.write { p in
            p[0] = UInt8(path.count >> 8)
            p[1] = UInt8(path.count & 0xFF)
            (p + 2).update(from: base, count: path.count)
        }
        guard written else { return false }
        requested.add(1, ordering: .acquiringAndReleasing)
        sem_post(wake)
        return true
    }

    /// Has the thread run `upkeep` once more, after any load in hand. Lock-
    /// and allocation-free (one semaphore post), from any thread.
    func requestUpkeep() {
        guard !quit.load(ordering: .acquiring), !upkeepRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sem_post(wake)
    }

    /// Waits until every request made before this call has been dealt with.
    func finishRequests() {
        let target = requested.load(ordering: .acquiring)
        while finished.load(ordering: .acquiring) < target {
            usleep(1000)
        }
    }

    /// The newest finished load since the last call (lock- and allocation-free
    /// when `body` is): its status (0: loaded), the path asked for and the
    /// font in use after it (the old one when it failed), as bytes.
    func takeResult<T>(_ body: (_ status: Int32, _ requested: UnsafeBufferPointer<UInt8>, _ inUse: UnsafeBufferPointer<UInt8>) -> T) -> T? {
        results.read { p in
            let status = Int32(bitPattern: UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3]))
            let a = Self.path(p + 4)
            let b = Self.path(p + 4 + 2 + Self.pathCapacity)
            return body(status, a, b)
        }
    }

    private static func path(_ p: UnsafePointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        let n = min(Int(p[0]) << 8 | Int(p[1]), pathCapacity)
        return UnsafeBufferPointer(start: p + 2, count: n)
    }

    private static func put(_ s: String, _ p: UnsafeMutablePointer<UInt8>) {
        let bytes = Array(s.utf8.prefix(pathCapacity))
        p[0] = UInt8(bytes.count >> 8)
        p[1] = UInt8(bytes.count & 0xFF)
        (p + 2).update(from: bytes, count: bytes.count)
    }

    private func run() {
        while true {
            while sem_wait(wake) != 0 && errno == EINTR {}
            if quit.load(ordering: .acquiring) { break }
            let target = requested.load(ordering: .acquiring)
            var last: Int32?
            while let path = requests.read({ p in String(decoding: Self.path(p), as: UTF8.self) }) {
                let (status, inUse) = load(path)
                _ = results.write { p in   // (this thread is its only writer)
                    let s = UInt32(bitPattern: status)
                    p[0] = UInt8(s >> 24); p[1] = UInt8(s >> 16 & 0xFF); p[2] = UInt8(s >> 8 & 0xFF); p[3] = UInt8(s & 0xFF)
                    Self.put(path, p + 4)
                    Self.put(inUse, p + 4 + 2 + Self.pathCapacity)
                }
                last = status
                if quit.load(ordering: .acquiring) { break }
            }
            finished.store(target, ordering: .releasing)
            if let last, !quit.load(ordering: .acquiring), let l = listener.withLock({ $0 }) { l(last) }
            if upkeepRequested.exchange(false, ordering: .acquiringAndReleasing), !quit.load(ordering: .acquiring) { upkeep() }
        }
        finished.store(requested.load(ordering: .acquiring), ordering: .releasing)
    }
}
