#if canImport(Glibc)
import Glibc
#endif

// Small text helpers, so that Spinet's modules need only FoundationEssentials
// (see NativeThread in SpinetEngine for why Foundation is left out).

extension StringProtocol {
    /// The text without spaces and tabs at either end.
    public var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return String(self[first...last])
    }
}

/// `path` with a leading `~` (the home directory) or `~user` expanded, as a
/// shell would; any other path unchanged.
public func expandingTilde(_ path: String, home: String? = nil) -> String {
    guard path.hasPrefix("~") else { return path }
    let slash = path.firstIndex(of: "/") ?? path.endIndex
    let user = path[path.index(after: path.startIndex)..<slash]
    let directory: String?
    if user.isEmpty {
        directory = home ?? getenv("HOME").map { String(cString: $0) } ?? passwdHome(of: nil)
    } else {
        directory = passwdHome(of: String(user))
    }
    guard let directory, !directory.isEmpty else { return path }
    return directory + path[slash...]
}

private func passwdHome(of user: String?) -> String? {
    let entry = user.map { getpwnam($0) } ?? getpwuid(getuid())
    guard let entry, let dir = entry.pointee.pw_dir else { return nil }
    return String(cString: dir)
}

/// printf-style formatting of numbers: `formatted("%5.1f%%", 12.34)` is
/// " 12.3%". Only numeric conversions: integers of any width as `%ld`
/// (`%3ld`, `%-4ld`), floating point as `%f`, `%e`, `%g` with their flags,
/// width and precision. Strings go in by interpolation around the call.
public func formatted(_ format: String, _ arguments: any FormatArgument...) -> String {
    let words = arguments.map(\.formatWord)
    return withVaList(words) { list in
        var buffer = [CChar](repeating: 0, count: 128)
        // A va_list is consumed by one call: format into a buffer big enough for
        // any short line first, and only when it was not, once more at full size.
        let needed = Int(buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, list) })
        if needed < buffer.count { return text(buffer) }
        return withVaList(words) { again in
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, again) }
            return text(buffer)
        }
    }
}

/// A number `formatted` takes: integers go in as a 64-bit `long` (so `%ld`
/// reads every width correctly, signed or not), floating point as a double.
public protocol FormatArgument {
    var formatWord: any CVarArg { get }
}
extension Int: FormatArgument { public var formatWord: any CVarArg { self } }
extension Int32: FormatArgument { public var formatWord: any CVarArg { Int(self) } }
extension Int64: FormatArgument { public var formatWord: any CVarArg { Int(self) } }
extension UInt32: FormatArgument { public var formatWord: any CVarArg { Int(self) } }
extension Double: FormatArgument { public var formatWord: any CVarArg { self } }
extension Float: FormatArgument { public var formatWord: any CVarArg { Double(self) } }

/// The text before the first NUL of a C buffer.
private func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

extension String {
    /// The text followed by spaces up to `width` characters (unchanged if
    /// it is already that long).
    public func padded(to width: Int) -> String {
        let n = count
        return n >= width ? self : self + String(repeating: " ", count: width - n)
    }
}

/// `path` without its last component ("a/b/c" -> "a/b", "/a" -> "/",
/// "name" -> ""), as `dirname` would give it but "" for no directory.
public func parentPath(_ path: String) -> String {
    var p = Substring(path)
    while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
    guard let slash = p.lastIndex(of: "/") else { return "" }
    if slash == p.startIndex { return "/" }
    return String(p[..<slash])
}

/// Whether `path` names a directory (following symbolic links); nil when
/// nothing is there.
public func isDirectory(_ path: String) -> Bool? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    return (st.st_mode & S_IFMT) == S_IFDIR
}

/// Writes all of `bytes` to `fd`, again after a short write or EINTR.
/// Returns 0, or the errno of the write that failed (ENOSPC on a full disk).
@discardableResult
public func writeFully(_ fd: Int32, _ bytes: [UInt8]) -> Int32 {
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
        if n > 0 { done += n } else if n < 0 && errno == EINTR { continue } else { return n < 0 ? errno : EIO }
    }
    return 0
}

/// Writes `text` to standard error, all of it (unbuffered: status lines
/// and errors appear at once).
public func writeStandardError(_ text: String) {
    writeFully(STDERR_FILENO, Array(text.utf8))
}

/// `message` with every control character it echoes (a key named "x\ny" in
/// a JSON file) shown escaped (`\n`, `\r`, `\t`, `\x1b`, `\u2028`), so it
/// stays one line: the control characters are `isControlCharacter`'s, as
/// for every text Spinet writes.
public func escapingControlCharacters(_ message: String) -> String {
    guard message.unicodeScalars.contains(where: isControlCharacter) else { return message }
    var out = ""
    for u in message.unicodeScalars {
        switch u {
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if isControlCharacter(u) { out += u.value > 0xFF ? formatted("\\u%04lx", Int(u.value)) : formatted("\\x%02lx", Int(u.value)) }
            else { out.unicodeScalars.append(u) }
        }
    }
    return out
}

/// `line` with every overlong run of non-space characters cut to its start
/// and end, and the whole line to at most about `maxLength` bytes: an error
/// that echoes what it was given (a 200 MB preset name, a 100,000-digit
/// number) stays one readable line.
public func clippingEchoes(_ line: String, longestWord: Int = 160, maxLength: Int = 2000) -> String {
    let bytes = line.utf8
    if bytes.count <= longestWord { return line }
    var out: [UInt8] = []
    var wordStart = bytes.startIndex
    var truncated = false
    func append(_ word: Substring.UTF8View) {
        let n = word.count
        if n > longestWord {
            let keep = longestWord / 2
            // cut on character boundaries: a clipped name stays valid UTF-8
            let text = Substring(word)
            out += Array(text.prefix(keep).utf8) + Array("…".utf8) + Array(text.suffix(keep / 4).utf8)
            out += Array(formatted(" (%ld bytes)", n).utf8)
        } else {
            out += word
        }
    }
    var i = bytes.startIndex
    while i < bytes.endIndex {
        let b = bytes[i]
        if b == 0x20 || b == 0x0A {
            append(line[wordStart..<i].utf8)
            out.append(b)
            wordStart = bytes.index(after: i)
            if out.count > maxLength { truncated = true; break }
        }
        i = bytes.index(after: i)
    }
    if !truncated && wordStart < bytes.endIndex { append(line[wordStart...].utf8) }
    if out.count > maxLength || truncated {
        let head = String(decoding: out.prefix(maxLength), as: UTF8.self)
        return head + formatted("… (%ld bytes in all)", bytes.count)
    }
    return String(decoding: out, as: UTF8.self)
}
