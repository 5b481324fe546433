import FoundationEssentials
import Glibc
import SpinetSupport

/// Everything one render writes (the mix, each stem, the notes file; for a
/// batch also the report), checked together before any work and committed
/// together at the end.
///
/// - **Checked first** (`plan`): no target may be the same file (device and
///   inode) as a file the render reads (the MIDI files, the SoundFonts, the
///   preset, config and list files), and no two targets the same file
///   (compared by inode, and by their paths with symbolic links resolved
///   for names not made yet); a target that exists is refused unless
///   --force (or `replace`: what --skip-existing redoes); a name longer than
///   a file name can be is refused; standard output (`-`) may be named by
///   one target only.
/// - **Folders** are created next, in the order the targets were planned
///   (`makeFolders`, `begin`).
/// - **Written** to temporary files beside the targets (`OutputFile`), whose
///   names never pass NAME_MAX and which a signal removes, however many.
/// - **Committed** (`commit`) in one order, all or nothing: the stems first,
///   then the notes file, the mix last. The mix is the commit marker: a mix
///   in place means its stems and notes are complete, and a missing mix means
///   the input was not rendered (--skip-existing redoes it, and that redo
///   may replace the stems and notes a stopped commit left). A failure or a
///   stop request before the mix is renamed removes what was already renamed.
/// - Every write error is reported (an `AudioFileError`).
public final class OutputTransaction {
    /// What a target is; the order of the cases is the commit order.
    public enum Role: Int, Sendable, Comparable {
        case stem, notes, mix
        /// The batch's report, a log written line by line to its target
        /// (checked here with the others, but never renamed).
        case report

        public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }
    }

    /// One planned target.
    public struct Target: Sendable {
        public var path: String
        /// The option that named it (-o, --notes, --stems, --report), for messages.
        public var option: String
        public var role: Role
        public var format: AudioFileFormat?
        /// Replace an existing file even without --force.
        public var replace: Bool
        public var isStandardOutput: Bool { path == "-" }
    }

    /// A stop was asked for (a signal) before the commit was done: nothing committed.
    public struct Interrupted: Error, Sendable {}

    public let force: Bool
    public let inUse: FilesInUse
    public private(set) var targets: [Target] = []
    /// The files made by `begin`, by target (nil: not begun, or the report).
    private var files: [OutputFile?] = []
    private var byPath: [String: Int] = [:]
    private var byInode: [FilesInUse.Inode: Int] = [:]
    private var finished = false

    public init(force: Bool, inUse: FilesInUse) {
        self.force = force
        self.inUse = inUse
    }

    public convenience init(force: Bool, inUse: [FileInUse]) {
        self.init(force: force, inUse: FilesInUse(inUse))
    }

    /// Checks `path` as one more target (see the type's description) and
    /// records it; nothing is created. Returns its index.
    @discardableResult
    public func plan(_ path: String, option: String, role: Role, format: AudioFileFormat? = nil,
                     replace: Bool = false) throws(AudioFileError) -> Int {
        do {
            return try planOne(path, option: option, role: role, format: format, replace: replace)
        } catch where option != "-o" && !error.description.hasPrefix(option) {
            throw AudioFileError(description: "\(option): " + error.description)
        }
    }

    private func planOne(_ path: String, option: String, role: Role, format: AudioFileFormat?, replace: Bool) throws(AudioFileError) -> Int {
        let target = Target(path: path, option: option, role: role, format: format, replace: replace)
        if path == "-" {
            if let other = targets.first(where: \.isStandardOutput) {
                throw AudioFileError(description: "\(other.option) - and \(option) - would both write to standard output; name a file for one of them")
            }
            var st = stat()
            if fstat(STDOUT_FILENO, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG {
                try OutputFile.refuseSameFile("standard output", st, inUse, option: option)
                try claim(target, key: nil, inode: FilesInUse.Inode(st))
            } else {
                try claim(target, key: nil, inode: nil)
            }
            return targets.count - 1
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        if name.utf8.count > OutputFile.nameMax {
            throw AudioFileError(description: "\(option) \(path): the file name is \(name.utf8.count) bytes; a file name can have at most \(OutputFile.nameMax); choose a shorter \(option)")
        }
        let check = try OutputFile.check(path, inUse: inUse, option: option)
        var inode: FilesInUse.Inode?
        switch check.state {
        case .device:
            // written through, never replaced: several outputs may share /dev/null
            try claim(target, key: nil, inode: nil)
            return targets.count - 1
        case .existingFile:
            if !(force || replace) {
                throw AudioFileError(description: "\(path) already exists; pass --force to overwrite it")
            }
            var st = stat()
            if stat(path, &st) == 0 { inode = FilesInUse.Inode(st) }
        case .absent:
            break
        }
        try claim(target, key: Self.canonicalPath(check.destination), inode: inode)
        return targets.count - 1
    }

    /// Records `target`, refusing one that is the same file as a target planned before.
    private func claim(_ target: Target, key: String?, inode: FilesInUse.Inode?) throws(AudioFileError) {
        let index = targets.count
        if let key, let other = byPath[key] { throw sameFile(target, targets[other]) }
        if let inode, let other = byInode[inode] { throw sameFile(target, targets[other]) }
        if let key { byPath[key] = index }
        if let inode { byInode[inode] = index }
        targets.append(target)
        files.append(nil)
    }

    private func sameFile(_ a: Target, _ b: Target) -> AudioFileError {
        let what = a.path == b.path ? "\(a.path)" : "\(a.path) and \(b.path)"
        return AudioFileError(description: "\(b.option) and \(a.option) both name \(what), the same file; each output needs its own file")
    }

    /// `path` absolute, with "." and ".." and the symbolic links of its
    /// longest existing prefix resolved: two names of one file not made yet
    /// give one key.
    static func canonicalPath(_ path: String) -> String {
        var absolute = path
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let cwd = getcwd(&buffer, buffer.count).map { String(cString: $0) } ?? "."
            absolute = cwd + "/" + path
        }
        var parts: [Substring] = []
        for part in absolute.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { _ = parts.popLast(); continue }
            parts.append(part)
        }
        // the longest prefix that exists, with its links resolved
        for keep in stride(from: parts.count, through: 0, by: -1) {
            let prefix = "/" + parts[0..<keep].joined(separator: "/")
            if let real = realpath(prefix, nil) {
                let head = String(cString: real)
                free(real)
                let rest = parts[keep...].joined(separator: "/")
                return rest.isEmpty ? head : (head == "/" ? "/" : head + "/") + rest
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Creates the folders of the targets planned so far, in their order (`mkdir -p`).
    public func makeFolders() throws(AudioFileError) {
        for target in targets where !target.isStandardOutput {
            let parent = parentPath(target.path)
            if !parent.isEmpty { try Self.makeFolder(parent) }
        }
    }

    /// `mkdir -p`, with the reason in one line when it fails.
    public static func makeFolder(_ path: String) throws(AudioFileError) {
        var st = stat()
        if stat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR { return }
            throw AudioFileError(description: "cannot create the output directory \(path): a file of that name is there")
        }
        let parent = parentPath(path)
        if !parent.isEmpty && parent != path { try makeFolder(parent) }
        if mkdir(path, 0o777) != 0 && errno != EEXIST {
            throw AudioFileError(description: "cannot create the output directory \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Creates the folders and the temporary files of the targets planned
    /// since the last `begin` (the report excepted). On an error nothing of
    /// this transaction is left.
    public func begin() throws(AudioFileError) {
        do {
            try makeFolders()
            for (i, target) in targets.enumerated() where files[i] == nil && target.role != .report {
                files[i] = try OutputFile(target: target.path, force: force || target.replace, format: target.format,
                                          inUse: inUse, option: target.option)
            }
        } catch {
            discard()
            throw error
        }
    }

    /// The file made for the target at `index` (after `begin`).
    public func file(_ index: Int) -> OutputFile { files[index]! }

    /// The first file of `role` (after `begin`), if one was planned.
    public func file(_ role: Role) -> OutputFile? {
        targets.firstIndex { $0.role == role }.flatMap { files[$0] }
    }

    /// The files of `role`, in the order planned.
    public func files(_ role: Role) -> [OutputFile] {
        targets.indices.filter { targets[$0].role == role }.compactMap { files[$0] }
    }

    /// Renames every temporary file into place: the stems, then the notes,
    /// the mix last (the commit marker, see the type). `shouldStop` is asked
    /// before each rename; when it says stop, or a rename fails, what was
    /// renamed is removed again and the rest discarded: nothing is committed.
    public func commit(shouldStop: () -> Bool = { false }) throws {
        guard !finished else { return }
        let order = targets.indices.filter { files[$0] != nil }.sorted { (targets[$0].role, $0) < (targets[$1].role, $1) }
        var renamed: [String] = []
        do {
            for i in order {
                if shouldStop() { throw Interrupted() }
                let file = files[i]!
                try file.commit()
                if file.kind == .file { renamed.append(file.target) }
            }
        } catch {
            for path in renamed { unlink(path) }   // never some outputs without the rest
            discard()
            throw error
        }
        finished = true
    }

    /// Removes every temporary file; nothing is committed.
    public func discard() {
        finished = true
        for file in files { file?.discard() }
    }

    deinit {
        if !finished { discard() }
    }
}

extension OutputFile {
    /// Writes a whole small text (the notes) into the file: its temporary
    /// file, or the device or standard output it writes through. Every
    /// error is reported.
    public func writeText(_ text: String) throws(AudioFileError) {
        let bytes = Array(text.utf8)
        let fd = fileDescriptor ?? open(writePath, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard fd >= 0 else {
            throw AudioFileError(description: "cannot write \(displayName): \(String(cString: strerror(errno)))")
        }
        var why = writeFully(fd, bytes)
        if fileDescriptor == nil {
            if why == 0 && fsync(fd) != 0 && errno != EINVAL { why = errno }
            if close(fd) != 0 && why == 0 { why = errno }
        }
        if why != 0 {
            throw AudioFileError(description: "writing \(displayName) failed: \(String(cString: strerror(why)))")
        }
    }
}
