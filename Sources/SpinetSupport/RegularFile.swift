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
        guard stat(path, &st) == 0 else { return nil }
        let kind: String
        switch st.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: kind = "a FIFO"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        case S_IFDIR: kind = "a directory"
        case S_IFSOCK: kind = "a socket"
        default: kind = "not a file"
        }
        return "\(path) is not a regular file (\(kind)); \(hint)"
    }

    /// True when `path` exists and is a regular file (symbolic links followed).
    public static func isRegular(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }
}
