import SpinetSettings
import SpinetSoundFont

extension SpinetConfig {
    /// Why the SoundFont `font`, named in this file's "soundfonts", cannot be
    /// loaded (nil: it can be), as one line naming the file and the key:
    /// `config PATH: "soundfonts": FONT: REASON`. The checks are those of every
    /// font load (`SoundFontUnit.check`: there, a regular file, readable, a
    /// SoundFont, whole); `spinet render`, `spinet play` and the plugins' start
    /// all say a config font's problem this way, since the fix is in the file.
    public func fontProblem(_ font: String) -> String? {
        do { try SoundFontUnit.check(font) } catch {
            return "\(label("soundfonts")) \(font): \(error.reason)"
        }
        return nil
    }
}
