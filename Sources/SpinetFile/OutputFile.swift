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

/// The files a render reads, indexed by device and inode: a batch's
/// thousands of inputs are looked up once per output, not scanned.
public struct FilesInUse: Sendable {
    struct Inode: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
        init(_ st: stat) {
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
        }
    }
    private var byInode: [Inode: FileInUse] = [:]

    /// Each file that exists now (a missing one cannot be replaced by an output).
    public init(_ files: [FileInUse]) {
        for file in files {
            var st = stat()
            if stat(file.path, &st) == 0, byInode[Inode(st)] == nil { byInode[Inode(st)] = file }
        }
    }

    /// The file in use that `st` describes, if any.
    public func file(_ st: stat) -> FileInUse? { byInode[Inode(st)] }
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
    private var pendingSlot: UnsafeMutablePointer<PendingPaths.Node>?

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
    public static func check(_ target: String, inUse: [FileInUse] = [], option: String = "-o") throws(AudioFileError) -> Check {
        try check(target, inUse: FilesInUse(inUse), option: option)
    }

    /// `check`, against files in use already indexed (a batch's inputs).
    public static func check(_ target: String, inUse: FilesInUse, option: String = "-o") throws(AudioFileError) -> Check {
        var st = stat()
        if stat(target, &st) == 0 {
            switch st.st_mode & S_IFMT {
            case S_IFREG:
                try refuseSameFile(target, st, inUse, option: option)
                var resolved = target
                var lst = stat()
                if lstat(target, &lst) == 0 && (lst.st_mode & S_IFMT) == S_IFLNK, let real = realpath(target, nil) {
                    resolved = String(cString: real)
                    free(real)
                }
                return Check(state: .existingFile, destination: resolved)
            case S_IFCHR: return Check(state: .device(fifo: false), destination: target)
            case S_IFIFO: return Check(state: .device(fifo: true), destination: target)
            case S_IFDIR: throw AudioFileError(description: "\(target) is a directory; name an output file with \(option)")
            case S_IFSOCK: throw AudioFileError(description: "\(target) is a socket; Spinet does not write into sockets or replace them; choose another \(option)")
            case S_IFBLK: throw AudioFileError(description: "\(target) is a block device; Spinet does not write to or replace a disk; choose another \(option)")
            default: throw AudioFileError(description: "\(target) is not a regular file; Spinet does not replace it; choose another \(option)")
            }
        }
        let why = errno
        guard why == ENOENT else {
            if why == ELOOP { throw AudioFileError(description: "\(target): too many levels of symbolic links; choose another \(option)") }
            throw AudioFileError(description: "cannot write \(target): \(String(cString: strerror(why)))")
        }
        // Nothing there; a dangling symbolic link names the file to create.
        return Check(state: .absent, destination: try followDanglingLinks(target, option: option))
    }

    /// The path a chain of links ending nowhere points to (`target` itself when it is no link).
    private static func followDanglingLinks(_ target: String, option: String) throws(AudioFileError) -> String {
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
        throw AudioFileError(description: "\(target): too many levels of symbolic links; choose another \(option)")
    }

    /// Refuses an output that is the same file (st_dev and st_ino) as one the render reads.
    static func refuseSameFile(_ target: String, _ st: stat, _ inUse: FilesInUse, option: String = "-o") throws(AudioFileError) {
        if let file = inUse.file(st) {
            let also = file.path == target ? "" : " (\(file.path))"
            throw AudioFileError(description: "\(target) is \(file.role)\(also); the render would replace it; choose another \(option)")
        }
    }

    /// Checks the target before any work: what `check` refuses; an existing
    /// file without `force`; a format other than WAV into something that
    /// cannot seek (a pipe, FIFO or terminal). A device or FIFO is opened
    /// here (opening a FIFO waits for its reader, as `>` does); for a file,
    /// a temporary file is made beside the destination.
    public convenience init(target: String, force: Bool, format: AudioFileFormat? = nil, inUse: [FileInUse] = []) throws(AudioFileError) {
        try self.init(target: target, force: force, format: format, inUse: FilesInUse(inUse))
    }

    /// `init`, against files in use already indexed; `option` names the
    /// target in messages (-o, --notes, --stems).
    public init(target: String, force: Bool, format: AudioFileFormat? = nil, inUse: FilesInUse, option: String = "-o") throws(AudioFileError) {
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
                try Self.refuseSameFile("standard output", st, inUse, option: option)
            }
            if let format, format != .wav, !isSeekable {
                throw AudioFileError(description: "only WAV can be streamed to a pipe; use --format wav with \(option) -")
            }
            return
        }
        let check = try Self.check(target, inUse: inUse, option: option)
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
        var template = Array("\(dir)/\(Self.temporaryName(base))".utf8CString)
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

    /// The longest file name (NAME_MAX on Linux file systems).
    public static let nameMax = 255

    /// The temporary file's name beside `base`: `.BASE.spinet-XXXXXX`, BASE
    /// cut (on a character boundary) so the name never passes `nameMax`
    /// bytes whatever the length of the final name.
    public static func temporaryName(_ base: String) -> String {
        let suffix = ".spinet-XXXXXX"
        let room = nameMax - 1 - suffix.utf8.count
        var kept = Substring(base)
        while kept.utf8.count > room { kept.removeLast() }
        return "." + kept + suffix
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

    /// How many temporary files are pending now (none has a fixed limit).
    public static var pendingCount: Int { PendingPaths.count }

    /// Async-signal-safe: unlinks every temporary file still pending.
    public static func unlinkPendingFromSignalHandler() {
        PendingPaths.unlinkAll()
    }
}

/// The paths of temporary files not yet committed or discarded, where a
/// signal handler can read them: a list of nodes that only grows, each with
/// its own path buffer and state. A node is allocated (off the signal path)
/// when every node is in use, pushed onto the list with a compare-and-swap,
/// and never moved or freed; a released node is reused. A path is copied in
/// before its node is published and unpublished before the node is reused,
/// so the handler never reads a half-written path. There is no fixed limit:
/// as many temporary files as are open at once (stems x notes x jobs) are
/// all removed by a signal.
enum PendingPaths {
    /// One temporary file's entry. `state`: 0 free, 1 being filled, 2 published.
    struct Node: ~Copyable {
        let state = Atomic<Int>(0)
        /// The node pushed before this one (set before this one is published, never changed).
        var next: UnsafeMutablePointer<Node>?
        /// PATH_MAX bytes, NUL-terminated.
        let path: UnsafeMutablePointer<CChar>
    }
    static let pathBytes = Int(PATH_MAX)
    /// The last node pushed (its address), 0 for none.
    private static let head = Atomic<UInt>(0)

    private static func node(_ address: UInt) -> UnsafeMutablePointer<Node>? {
        UnsafeMutablePointer<Node>(bitPattern: address)
    }

    /// Records `path`; returns its node, or nil when the path is too long for unlink.
    static func claim(_ path: String) -> UnsafeMutablePointer<Node>? {
        let bytes = Array(path.utf8CString)
        guard bytes.count <= pathBytes else { return nil }
        var taken: UnsafeMutablePointer<Node>?
        var p = node(head.load(ordering: .acquiring))
        while let n = p {
            if n.pointee.state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged { taken = n; break }
            p = n.pointee.next
        }
        if taken == nil {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: pathBytes)
            buffer.initialize(repeating: 0, count: pathBytes)
            let n = UnsafeMutablePointer<Node>.allocate(capacity: 1)
            n.initialize(to: Node(next: nil, path: buffer))
            n.pointee.state.store(1, ordering: .relaxed)
            while true {
                let current = head.load(ordering: .acquiring)
                n.pointee.next = node(current)
                if head.compareExchange(expected: current, desired: UInt(bitPattern: n), ordering: .acquiringAndReleasing).exchanged { break }
            }
            taken = n
        }
        let n = taken!
        bytes.withUnsafeBufferPointer { n.pointee.path.update(from: $0.baseAddress!, count: $0.count) }
        n.pointee.state.store(2, ordering: .releasing)
        return n
    }

    static func release(_ entry: UnsafeMutablePointer<Node>?) {
        entry?.pointee.state.store(0, ordering: .releasing)
    }

    /// How many temporary files are recorded now (for tests).
    static var count: Int {
        var total = 0
        var p = node(head.load(ordering: .acquiring))
        while let n = p {
            if n.pointee.state.load(ordering: .acquiring) == 2 { total += 1 }
            p = n.pointee.next
        }
        return total
    }

    /// Async-signal-safe (no allocation, no lock): unlinks every published path.
    static func unlinkAll() {
        var p = node(head.load(ordering: .acquiring))
        while let n = p {
            if n.pointee.state.load(ordering: .acquiring) == 2 { unlink(n.pointee.path) }
            p = n.pointee.next
        }
    }
}
