import Glibc

/// What libraries print on their own while FluidSynth loads a font: GLib's
/// `** CRITICAL **` lines from libinstpatch (FluidSynth's DLS loader, tried
/// when its SoundFont loader gives up on a damaged font) and mpg123's
/// "Illegal Audio-MPEG-Header" lines (libsndfile probing damaged SF3 sample
/// data). They write straight to file descriptor 2; Spinet's one line about
/// the font says what they would. `capturing` sends fd 2 to a temporary file
/// for the length of a load and passes on every other line afterwards.
enum LibraryNoise {
    /// Runs `body` with standard error captured; returns its result and the
    /// lines written meanwhile that are not library noise, with their
    /// newlines (the caller prints them). Without a temporary file, nothing
    /// is captured.
    static func capturing<T>(_ body: () -> T) -> (result: T, others: [String]) {
        fflush(nil)
        guard let file = tmpfile() else { return (body(), []) }
        defer { fclose(file) }
        let saved = dup(STDERR_FILENO)
        guard saved >= 0 else { return (body(), []) }
        guard dup2(fileno(file), STDERR_FILENO) >= 0 else { close(saved); return (body(), []) }
        let result = body()
        fflush(nil)
        dup2(saved, STDERR_FILENO)
        close(saved)
        return (result, kept(text(of: file)))
    }

    /// `text` without its noise lines; every other byte as it was written
    /// (a status line drawn meanwhile has no newline).
    static func kept(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { String($0) + "\n" }
        if let last = lines.last { lines[lines.count - 1] = String(last.dropLast()) }
        // (GLib puts an empty line before each of its messages)
        return lines.filter { !$0.allSatisfy(\.isWhitespace) && !isNoise($0) }
    }

    /// Lines GLib (libinstpatch) and mpg123 print about damaged data.
    static func isNoise(_ line: String) -> Bool {
        line.contains("CRITICAL **") || line.contains("-WARNING **") || line.contains("libmpg123")
            || line.contains("Illegal Audio-MPEG-Header") || line.hasPrefix("Note: ") || line.contains("mpg123")
    }

    /// Prints what was kept where it was meant to go.
    static func pass(_ lines: [String]) {
        for line in lines {
            let bytes = Array(line.utf8)
            _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }

    private static func text(of file: UnsafeMutablePointer<FILE>) -> String {
        rewind(file)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
            if bytes.count > 1 << 20 { break }     // a megabyte of complaints is plenty
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
