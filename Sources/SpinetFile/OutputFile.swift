import FoundationEssentials
import Glibc
import SpinetSupport
import Synchronization

/// A file the render reads (the MIDI file, a SoundFont, the preset or
/// config file): the output may never be the same file.
public struct FileInUse: Sendable {
    public var path: String
    /// What it is, for the error: "the MIDI file being rendered", "a SoundFont in use", ...
    public var role: String
    public init(path: String, role: String) {
        self.path = path
        self.role = role
    }
}

/// Where a render goes, and how it gets there without damaging anything else:
///
/// - a regular file (or a new name): a temporary file beside it, renamed
///   over it only when the render has finished — so a failed or interrupted
///   render never leaves a partial file. Without `force` the rename refuses
///   to replace a file that appeared during the render; with it, the
///   replaced file's mode is kept. A symbolic link is followed: the file it
///   points to is written, the link stays.
/// - an existing character device or FIFO (`/dev/null`, a named pipe):
///   written through, as `> /dev/null` does — never replaced, no temporary
///   file, `force` not needed. A non-seekable one takes a WAV stream only.
/// - standard output (`-`).
///
/// Sockets, block devices and other special files are refused, and so is
/// the same file (device and inode) as a file the render reads.
public final class OutputFile {
    public enum Kind: Sendable, Equatable {
        case standardOutput
        /// A regular file, through a temporary file and a rename.
        case file
        /// An existing character device or FIFO, written in place.
        case writeThrough
    }

    /// The output as the user named it (every message names this).
    public let target: String
    public let kind: Kind
    public var isStandardOutput: Bool { kind == .standardOutput }
    /// The path libsndfile writes to: the temporary file, the target itself
    /// (write-through), or "-" for standard output.
    public let writePath: String
    /// The descriptor to write into (standard output, or the opened device
    /// or FIFO); nil for a file, written at `writePath`.
    public let fileDescriptor: Int32?
    /// False for a pipe, FIFO or terminal: only a WAV stream can go there.
    public let isSeekable: Bool
    /// The name the output goes by in messages: the target, or "standard output".
    public var displayName: String { isStandardOutput ? "standard output" : target }
    /// Where the temporary file is renamed to: the target, symbolic links resolved.
    private let destination: String
    private let force: Bool
    private var finished = false
    /// Whether this object opened `fileDescriptor` (and closes it).
    private let ownsDescriptor: Bool
    /// Where the signal handler finds `writePath` (nil: not registered).
    private var pendingSlot: Int?

    /// What a target is, checked before any work (see `check`).
    public struct Check: Sendable {
        public enum State: Sendable, Equatable {
            /// Nothing there yet.
            case absent
            /// A regular file: replaced only with --force.
            case existingFile
            /// A character device or FIFO, written through.
            case device(fifo: Bool)
        }
        public var state: State
        /// The target with symbolic links followed (for a file).
        public var destination: String
    }

    /// Classifies `target` and refuses what may not be written: a directory,
    /// a socket, a block device or other special file, an unresolvable link,
    /// or the same file as one in `inUse`. It does not look at --force.
    public static func check(_ target: String, inUse: [FileInUse] = []) throws(AudioFileError) -> Check {
        var st = stat()
        if stat(target, &st) == 0 {
            switch st.st_mode & S_IFMT {
            case S_IFREG:
                try refuseSameFile(target, st, inUse)
                var resolved = target
                var lst = stat()
                if lstat(target, &lst) == 0 && (lst.st_mode & S_IFMT) == S_IFLNK, let real = realpath(target, nil) {
                    resolved = String(cString: real)
                    free(real)
                }
                return Check(state: .existingFile, destination: resolved)
            case S_IFCHR: return Check(state: .device(fifo: false), destination: target)
            case S_IFIFO: return Check(state: .device(fifo: true), destination: target)
            case S_IFDIR: throw AudioFileError(description: "\(target) is a directory; name an output file with -o")
            case S_IFSOCK: throw AudioFileError(description: "\(target) is a socket; Spinet does not write into sockets or replace them; choose another -o (or -o - and a pipe)")
            case S_IFBLK: throw AudioFileError(description: "\(target) is a block device; Spinet does not write to or replace a disk; choose another -o")
            default: throw AudioFileError(description: "\(target) is not a regular file; Spinet does not replace it; choose another -o")
            }
        }
        let why = errno
        guard why == ENOENT else {
            if why == ELOOP { throw AudioFileError(description: "\(target): too many levels of symbolic links; choose another -o") }
            throw AudioFileError(description: "cannot write \(target): \(String(cString: strerror(why)))")
        }
        // Nothing there; a dangling symbolic link names the file to create.
        return Check(state: .absent, destination: try followDanglingLinks(target))
    }

    /// The path a chain of links ending nowhere points to (`target` itself when it is no link).
    private static func followDanglingLinks(_ target: String) throws(AudioFileError) -> String {
        var path = target
        for _ in 0..<40 {
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFLNK else { return path }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(path, &buffer, Int(PATH_MAX))
            guard n > 0 else { return path }
            let link = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            path = link.hasPrefix("/") ? link : URL(fileURLWithPath: path).deletingLastPathComponent().path + "/" + link
        }
        throw AudioFileError(description: "\(target): too many levels of symbolic links; choose another -o")
    }

    /// Refuses an output that is the same file (st_dev and st_ino) as one the render reads.
    private static func refuseSameFile(_ target: String, _ st: stat, _ inUse: [FileInUse]) throws(AudioFileError) {
        for file in inUse {
            var other = stat()
            if stat(file.path, &other) == 0 && other.st_dev == st.st_dev && other.st_ino == st.st_ino {
                let also = file.path == target ? "" : " (\(file.path))"
                throw AudioFileError(description: "\(target) is \(file.role)\(also); the render would replace it; choose another -o")
            }
        }
    }

    /// Checks the target before any work: what `check` refuses; an existing
    /// file without `force`; a format other than WAV into something that
    /// cannot seek (a pipe, FIFO or terminal). A device or FIFO is opened
    /// here (opening a FIFO waits for its reader, as `>` does); for a file,
    /// a temporary file is made beside the destination.
    public init(target: String, force: Bool, format: AudioFileFormat? = nil, inUse: [FileInUse] = []) throws(AudioFileError) {
        self.target = target
        self.force = force
        if target == "-" {
            kind = .standardOutput
            writePath = "-"
            destination = "-"
            fileDescriptor = STDOUT_FILENO
            ownsDescriptor = false
            isSeekable = lseek(STDOUT_FILENO, 0, SEEK_CUR) >= 0
            var st = stat()
            if fstat(STDOUT_FILENO, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG {
                try Self.refuseSameFile("standard output", st, inUse)
            }
            if let format, format != .wav, !isSeekable {
                throw AudioFileError(description: "only WAV can be streamed to a pipe; use --format wav with -o -")
            }
            return
        }
        let check = try Self.check(target, inUse: inUse)
        switch check.state {
        case .device(let fifo):
            if fifo, let format, format != .wav {
                throw AudioFileError(description: "\(target) is a FIFO, which cannot seek: only WAV can be streamed into it; use --format wav")
            }
            let fd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            if fd < 0 {
                throw AudioFileError(description: "cannot write \(target): \(String(cString: strerror(errno)))")
            }
            // What was opened must still be a device or FIFO, never a file put there meanwhile.
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFCHR || (st.st_mode & S_IFMT) == S_IFIFO else {
                Glibc.close(fd)
                throw AudioFileError(description: "\(target) changed while it was being opened; nothing written")
            }
            let seekable = lseek(fd, 0, SEEK_CUR) >= 0
            if let format, format != .wav, !seekable {
                Glibc.close(fd)
                throw AudioFileError(description: "\(target) cannot seek: only WAV can be streamed into it; use --format wav")
            }
            kind = .writeThrough
            writePath = target
            destination = target
            fileDescriptor = fd
            ownsDescriptor = true
            isSeekable = seekable
            return
        case .existingFile:
            if !force {
                throw AudioFileError(description: "\(target) already exists; pass --force to overwrite it")
            }
        case .absent:
            break
        }
        kind = .file
        fileDescriptor = nil
        ownsDescriptor = false
        isSeekable = true
        destination = check.destination
        let url = URL(fileURLWithPath: destination)
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
        Glibc.close(fd)
        writePath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        pendingSlot = PendingPaths.claim(writePath)
    }

    deinit {
        if !finished { discard() }
        if ownsDescriptor, let fd = fileDescriptor { Glibc.close(fd) }
    }

    /// Moves the finished file into place. Without --force it never replaces
    /// anything: a file that appeared at the destination during the render
    /// stays, and the render is discarded. With --force it replaces only a
    /// regular file, and keeps that file's mode (and owner, where allowed).
    public func commit() throws(AudioFileError) {
        guard kind == .file, !finished else { return }
        finished = true
        PendingPaths.release(pendingSlot)
        var existing = stat()
        let exists = lstat(destination, &existing) == 0
        if exists && force {
            guard (existing.st_mode & S_IFMT) == S_IFREG else {
                unlink(writePath)
                throw AudioFileError(description: "\(target) became something other than a regular file during the render; not replaced, no output written")
            }
            _ = chown(writePath, existing.st_uid, existing.st_gid)
            chmod(writePath, existing.st_mode & 0o777)
        } else {
            // The usual permissions of a new file (mkstemp makes it 0600).
            let mask = umask(0); umask(mask)
            chmod(writePath, 0o666 & ~mask)
        }
        if force {
            if rename(writePath, destination) != 0 {
                let why = String(cString: strerror(errno))
                unlink(writePath)
                throw AudioFileError(description: "cannot move the render into \(target): \(why)")
            }
            return
        }
        let why = Self.renameNoReplace(writePath, destination)
        if why == 0 { return }
        unlink(writePath)
        if why == EEXIST {
            throw AudioFileError(description: "\(target) appeared during the render; it was left as it is and the render discarded (pass --force to replace it)")
        }
        throw AudioFileError(description: "cannot move the render into \(target): \(String(cString: strerror(why)))")
    }

    /// Removes the temporary file.
    public func discard() {
        guard kind == .file, !finished else { return }
        finished = true
        unlink(writePath)
        PendingPaths.release(pendingSlot)
    }

    /// Renames `from` to `to` only if `to` does not exist: renameat2 with
    /// RENAME_NOREPLACE, or where the file system lacks it, a hard link and
    /// an unlink (link fails when the name exists). Returns 0 or an errno.
    static func renameNoReplace(_ from: String, _ to: String) -> Int32 {
        if let renameat2 = renameat2Function {
            if renameat2(AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */) == 0 { return 0 }
            let why = errno
            guard why == EINVAL || why == ENOSYS || why == EOPNOTSUPP else { return why }
        }
        if link(from, to) == 0 {
            unlink(from)
            return 0
        }
        return errno
    }

    private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>?, Int32, UnsafePointer<CChar>?, UInt32) -> Int32
    /// glibc's renameat2 (2.28 and later), which the Glibc module does not export.
    nonisolated(unsafe) private static let renameat2Function: RenameAt2? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "renameat2") else { return nil }
        return unsafeBitCast(symbol, to: RenameAt2.self)
    }()

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
