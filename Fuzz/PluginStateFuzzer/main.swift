// libFuzzer target for the plugins' saved state reader
// (SpinetPlugin/PluginSettings.swift, `PluginSettings(json:)`): what LV2's
// state restore and CLAP's state load give a project's saved text to.
//
// Built by scripts/fuzz.sh against the SpinetSupport and SpinetPlugin modules
// (and the modules SpinetPlugin depends on, compiled under
// -sanitize=fuzzer,address with -enable-testing).
//
// The input is the saved text, up to its first NUL byte (the C API takes a C
// string); bytes that are not UTF-8 are read as U+FFFD. With an odd last byte
// the state is restored with a SoundFont override, as a host that moved the
// font passes one. Each input checks what the reader promises, and a failed
// promise is a crash (a trap in the reader is one too: the host would go down):
// - a refused state is one line for the host's log: no control character,
//   at most about 2 KB however long the value it echoes;
// - a restored state's parameters are within their ranges, and its font is
//   the override when one was given, unless the state names another place
//   that holds a readable regular file (a moved project);
// - a restored state written out again (`json()`) reads back as the same
//   settings, and that text is a fixed point.

import SpinetSupport
import SpinetSoundFont
@testable import SpinetPlugin

@_cdecl("LLVMFuzzerTestOneInput")
public func pluginStateFuzzInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buffer = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    let override = size > 0 && buffer[size - 1] & 1 == 1 ? "/fuzz/moved.sf2" : nil

    let settings: PluginSettings
    do {
        settings = try PluginSettings(json: text, soundFontOverride: override)
    } catch {
        let line = error.description
        check(!line.isEmpty, "a refusal without a reason")
        check(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "a refusal that is not one line: \(line.prefix(200))")
        check(line.utf8.count < 2200, "a refusal of \(line.utf8.count) bytes: \(line.prefix(200))")
        return 0
    }
    // The override (which never exists here) is taken unless another place
    // the state names holds a font file: never a directory or nothing.
    if let override {
        check(settings.soundFont == override || SoundFontLocator.isReadableFontFile(settings.soundFont),
              "neither the override nor a font file was taken: \(settings.soundFont.prefix(200))")
    }
    check(settings.parameters.count == PluginParameter.allCases.count, "\(settings.parameters.count) parameters")
    for p in PluginParameter.allCases {
        let v = settings.parameters[p.rawValue]
        check(p.range.contains(v), "parameter \(p.symbol) restored as \(v), outside \(p.range)")
    }
    let written = settings.json()
    do {
        let again = try PluginSettings(json: written)
        check(again == settings, "a restored state changed when saved and restored again: \(written.prefix(300))")
        check(again.json() == written, "a saved state is not a fixed point: \(written.prefix(300))")
    } catch {
        check(false, "a saved state does not restore (\(error.description.prefix(200))): \(written.prefix(300))")
    }
    return 0
}

// (Messages are compared as UTF-8, as the other targets do.)
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
