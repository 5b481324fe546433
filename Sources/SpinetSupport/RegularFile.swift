#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files Spinet reads whole by name (SoundFonts, preset and config files)
/// must be regular files: opening a FIFO blocks until a writer comes, and a
/// device such as /dev/zero never ends.
public enum RegularFile {
    /// nil when `path` is a regular file (symbolic links followed) or does
    /// not exist (the caller's own open reports that); otherwise one line:
    /// "PATH is not a regular file (a FIFO); `hint`".
    public static func problem(_ path: String, hint: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0, let kind = kind(st.st_mode) else { return nil }
        return "\(path) is not a regular file (\(kind)); \(hint)"
    }

    /// What a file of this mode is, for a message; nil for a regular file.
    static func kind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFDIR: return "a directory"
        case S_IFSOCK: return "a socket"
        default: return "not a file"
        }
    }

    /// True when `path` exists and is a regular file (symbolic links followed).
    public static func isRegular(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// Why `read(_:limit:streams:)` read nothing.
    public enum ReadError: Error, Equatable, Sendable {
        /// open() or read() failed: the errno text ("No such file or directory").
        case system(String, errno: Int32)
        /// Not a regular file (and streams were not asked for), or a directory:
        /// "a FIFO", "a directory"...
        case notRegular(String)
        /// Longer than the limit (in bytes), found without reading past it.
        case tooLarge(limit: Int)
    }

    /// The bytes of the file at `path` (`-`: standard input, when `streams`),
    /// read whole with a bound: a regular file larger than `limit` is refused
    /// from its size, before any of it is read; a FIFO, a device or standard
    /// input (only when `streams`; otherwise refused without blocking) is
    /// read up to `limit + 1` bytes and refused there. So a 1 GB file or
    /// /dev/zero costs no more memory than `limit`.
    public static func read(_ path: String, limit: Int, streams: Bool = false) throws(ReadError) -> [UInt8] {
        let fd: Int32
        if path == "-" && streams {
            fd = STDIN_FILENO
        } else {
            // O_NONBLOCK: opening a FIFO without a writer must not block
            // before it is known to be one (cleared below for reading).
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            guard fd >= 0 else { throw .system(String(cString: strerror(errno)), errno: errno) }
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .system(String(cString: strerror(errno)), errno: errno) }
        let regular = (st.st_mode & S_IFMT) == S_IFREG
        if !regular, let kind = kind(st.st_mode), !streams || (st.st_mode & S_IFMT) == S_IFDIR {
            throw .notRegular(kind)
        }
        if regular && Int(st.st_size) > limit { throw .tooLarge(limit: limit) }
        if fd != STDIN_FILENO {
            let flags = fcntl(fd, F_GETFL)
            if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(regular ? Int(st.st_size) : 0)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let want = min(chunk.count, limit + 1 - bytes.count)
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, want) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .system(String(cString: strerror(errno)), errno: errno) }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > limit { throw .tooLarge(limit: limit) }
        }
        return bytes
    }
}

/// Settings files (the config file, preset files) and settings texts (a
/// plugin's saved state): JSON a person edits, a few KB in practice. Each is
/// refused past `maxBytes`, before it is read or parsed.
public enum SettingsText {
    public static let maxBytes = 4 << 20

    /// "4 MB", for messages.
    public static var limitText: String { megabytes(maxBytes) }

    /// "larger than 4 MB, the limit for a settings file", for a text of
    /// `byteCount` bytes; nil when it is within the limit.
    public static func sizeProblem(byteCount: Int) -> String? {
        byteCount > maxBytes ? "larger than \(limitText), the limit for a settings file" : nil
    }

    /// A whole settings file, read with the bound; `what` begins every
    /// message ("config PATH", "PATH"), `hint` says what the file should be.
    public static func readFile(_ path: String, what: String, hint: String) throws(Failure) -> [UInt8] {
        let bytes: [UInt8]
        do { bytes = try RegularFile.read(path, limit: maxBytes) } catch {
            switch error {
            case .system(_, errno: ENOENT): throw Failure("\(what): no such file")
            case .system(_, errno: EACCES): throw Failure("\(what): permission denied")
            case .system(let text, _): throw Failure("\(what): cannot be read (\(text))")
            case .notRegular(let kind): throw Failure("\(what) is not a regular file (\(kind)); \(hint)")
            case .tooLarge: throw Failure("\(what): \(sizeProblem(byteCount: maxBytes + 1)!)")
            }
        }
        return bytes
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ d: String) { description = d }
    }
}

/// `bytes` as "4 MB" (whole megabytes) or "512 KB".
public func megabytes(_ bytes: Int) -> String {
    bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MB" : "\(bytes >> 10) KB"
}

/// The bytes without a leading UTF-8 byte order mark (EF BB BF), which some
/// editors write at the start of a text file.
public func droppingByteOrderMark<C: Collection>(_ bytes: C) -> C.SubSequence where C.Element == UInt8 {
    bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
}
