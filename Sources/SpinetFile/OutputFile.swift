import Foundation
import Glibc

/// Where a render goes: a temporary file beside the target, renamed over it
/// only when the render has finished — so a failed or interrupted render
/// never leaves a partial file — or standard output.
public final class OutputFile {
    public let target: String
    public let isStandardOutput: Bool
    /// The path libsndfile writes to (the temporary file), or "-" for stdout.
    public let writePath: String
    private var finished = false

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
        var st = stat()
        if stat(target, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR {
                throw AudioFileError(description: "\(target) is a directory; name an output file with -o")
            }
            if !force {
                throw AudioFileError(description: "\(target) already exists; pass --force to overwrite it")
            }
        }
        let url = URL(fileURLWithPath: target)
        let dir = url.deletingLastPathComponent().path
        let base = url.lastPathComponent
        var isDir: ObjCBool = false
        if !FileManager.default.fileExists(atPath: dir, isDirectory: &isDir) || !isDir.boolValue {
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
        OutputFile.register(writePath)
    }

    deinit {
        if !finished { discard() }
    }

    /// Moves the finished file into place.
    public func commit() throws(AudioFileError) {
        guard !isStandardOutput, !finished else { return }
        finished = true
        OutputFile.unregister(writePath)
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
        OutputFile.unregister(writePath)
    }

    // Temporary files still open, so a signal handler can remove them.
    nonisolated(unsafe) private static var pending: [UnsafeMutablePointer<CChar>] = []

    private static func register(_ path: String) {
        pending.append(strdup(path))
    }

    private static func unregister(_ path: String) {
        pending.removeAll { p in
            if String(cString: p) == path { free(p); return true }
            return false
        }
    }

    /// Async-signal-safe: unlinks every temporary file still pending.
    public static func unlinkPendingFromSignalHandler() {
        for p in pending { unlink(p) }
    }
}
