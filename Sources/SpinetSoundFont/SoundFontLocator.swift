import FoundationEssentials
import Glibc

/// Finds the SoundFont to use when none is given.
///
/// Order: `$SPINET_SOUNDFONT`; the font Spinet ships (`SoundFonts/sf_GMbank.sf2`
/// found beside the executable or in a parent directory of it, or under
/// `share/spinet/` of an installed prefix); then the system's General MIDI
/// font, `/usr/share/sounds/sf2/default-GM.sf2`.
public enum SoundFontLocator {
    public static let bundledName = "sf_GMbank.sf2"
    public static let systemDefault = "/usr/share/sounds/sf2/default-GM.sf2"

    public static func candidates(environment: [String: String] = ProcessInfo.processInfo.environment,
                                  executable: String = executablePath()) -> [String] {
        var list: [String] = []
        if let env = environment["SPINET_SOUNDFONT"], !env.isEmpty { list.append(env) }
        var dir = URL(fileURLWithPath: executable).deletingLastPathComponent()
        for _ in 0..<6 {
            list.append(dir.appendingPathComponent("SoundFonts/\(bundledName)").path)
            list.append(dir.appendingPathComponent("share/spinet/SoundFonts/\(bundledName)").path)
            let parent = dir.deletingLastPathComponent()
            if parent.path == dir.path { break }
            dir = parent
        }
        list.append(systemDefault)
        return list
    }

    /// The first candidate that exists, or nil.
    public static func defaultSoundFont() -> String? {
        candidates().first(where: isReadableFontFile)
    }

    /// Whether `path` could be a font to load: a regular file (or a link to
    /// one) this process may read. A directory is readable too, but no
    /// font: a saved state naming "/" must not count as finding its font.
    public static func isReadableFontFile(_ path: String) -> Bool {
        var st = stat()
        guard !path.isEmpty, stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return false }
        return access(path, R_OK) == 0
    }

    public static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
