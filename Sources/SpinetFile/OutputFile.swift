import FoundationEssentials
import Glibc
import SpinetSupport
import Synchronization

/// Where a render goes: a temporary file beside the target, renamed over it
/// only when the render has finished — so a failed or interrupted render
/// never leaves a partial file — or standard output.
public final class OutputFile {
    public let target: String
    public let isStandardOutput: Bool
    /// The path libsndfile writes to (the temporary file), or "-" for stdout.
    public let writePath: String
    private var finished = false
    /// Where the signal handler finds `writePath` (nil: not registered).
    private var pendingSlot: Int?

    /// Checks the target before any work: refuses to overwrite without
    /// `force`, and makes sure the directory takes a new file.
    public init(target: String, force: Bool) throws(AudioFileError) {
        self.target = target
        if target == "-" {
            isStandardOutput = true
            writePath = "-"
            return
        }
        isStandardOutput = false
        if let directory = isDirectory(target) {
            if directory {
                throw AudioFileError(description: "\(target) is a directory; name an output file with -o")
            }
            if !force {
                throw AudioFileError(description: "\(target) already exists; pass --force to overwrite it")
            }
        }
        let url = URL(fileURLWithPath: target)
        let dir = url.deletingLastPathComponent().path
        let base = url.lastPathComponent
        if isDirectory(dir) != true {
            throw AudioFileError(description: "cannot write \(target): directory \(dir) does not exist")
        }
        // mkstemp both proves the directory is writable and reserves a unique name.
        var template = Array("\(dir)/.\(base).spinet-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 {
            throw AudioFileError(description: "cannot write \(target): \(String(cString: strerror(errno))) in \(dir)")
        }
        close(fd)
        writePath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        pendingSlot = PendingPaths.claim(writePath)
    }

    deinit {
        if !finished { discard() }
    }

    /// Moves the finished file into place.
    public func commit() throws(AudioFileError) {
        guard !isStandardOutput, !finished else { return }
        finished = true
        PendingPaths.release(pendingSlot)
        // Keep the usual permissions of a new file (mkstemp makes it 0600).
        let mask = umask(0); umask(mask)
        chmod(writePath, 0o666 & ~mask)
        if rename(writePath, target) != 0 {
            let why = String(cString: strerror(errno))
            unlink(writePath)
            throw AudioFileError(description: "cannot move the render into \(target): \(why)")
        }
    }

    /// Removes the temporary file.
    public func discard() {
        guard !isStandardOutput, !finished else { return }
        finished = true
        unlink(writePath)
        PendingPaths.release(pendingSlot)
    }

    /// How many temporary files at once the signal handler can remove.
    public static let maxPending = PendingPaths.slots

    /// Async-signal-safe: unlinks every temporary file still pending.
    public static func unlinkPendingFromSignalHandler() {
        PendingPaths.unlinkAll()
    }
}

/// The paths of temporary files not yet committed or discarded, in a fixed
/// table a signal handler can read: a bitmask of slots in use and one
/// PATH_MAX buffer per slot, allocated once and never moved or freed. A path
/// is copied in before its bit is set and its bit is cleared before the slot
/// is reused, so the handler never reads a half-written path. More renders
/// at once than there are slots go unregistered (their normal cleanup still
/// runs); `spinet render --jobs` is capped at that number.
enum PendingPaths {
    static let slots = 64
    static let slotBytes = Int(PATH_MAX)
    /// Slots holding a path the handler may unlink.
    private static let published = Atomic<UInt64>(0)
    /// Slots taken (a superset of `published`): claimed before the copy.
    private static let taken = Atomic<UInt64>(0)
    nonisolated(unsafe) private static let buffers: UnsafeMutablePointer<CChar> = {
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: slots * slotBytes)
        p.initialize(repeating: 0, count: slots * slotBytes)
        return p
    }()

    /// Records `path`; returns its slot, or nil when the table is full or the path too long.
    static func claim(_ path: String) -> Int? {
        let bytes = Array(path.utf8CString)
        guard bytes.count <= slotBytes else { return nil }
        let base = buffers
        while true {
            let current = taken.load(ordering: .acquiring)
            guard current != UInt64.max else { return nil }
            let slot = (~current).trailingZeroBitCount
            let (exchanged, _) = taken.compareExchange(expected: current, desired: current | (1 << slot), ordering: .acquiringAndReleasing)
            guard exchanged else { continue }
            bytes.withUnsafeBufferPointer { (base + slot * slotBytes).update(from: $0.baseAddress!, count: $0.count) }
            published.bitwiseOr(1 << slot, ordering: .releasing)
            return slot
        }
    }

    static func release(_ slot: Int?) {
        guard let slot else { return }
        published.bitwiseAnd(~(1 << slot), ordering: .releasing)
        taken.bitwiseAnd(~(1 << slot), ordering: .releasing)
    }

    /// Async-signal-safe (no allocation, no lock): unlinks every published path.
    static func unlinkAll() {
        let mask = published.load(ordering: .acquiring)
        guard mask != 0 else { return }
        for slot in 0..<slots where mask & (1 << slot) != 0 {
            unlink(buffers + slot * slotBytes)
        }
    }
}
