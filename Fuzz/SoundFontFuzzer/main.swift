// libFuzzer target for Spinet's own SoundFont 2 structure readers
// (SpinetSoundFont): FontFileView (finds the `pdta` list, serves a cut-down
// copy of the file to FluidSynth), PresetSubset (cuts the preset data down
// to some programs) and VoiceCostModel (reads what each note costs).
//
// Built by scripts/fuzz.sh against the SpinetSoundFont module (compiled under
// -sanitize=fuzzer,address with -enable-testing, for its internals).
//
// The readers take a path, so each input is written to one temporary file
// (in /dev/shm unless TMPDIR says otherwise; unlinked at once, reached as
// /proc/self/fd/N). The programs the subset keeps come from the input's last
// byte. Each input checks what the readers promise, and a failed promise is
// a crash:
// - a model's voices have finite, non-negative times, and a note's cost is
//   finite;
// - a cut is nine well-formed sub-chunks holding exactly the presets with
//   the wanted programs (plus program 0), in order, with the sample headers
//   untouched; cutting it again changes nothing; and the cost model read
//   from it gives every kept preset the same voices as the whole font's;
// - the view FluidSynth reads is the file itself when nothing is cut, and
//   otherwise the file with only its `pdta` list replaced by the cut (RIFF
//   size adjusted), which reads back as that cut; reads at any position
//   agree, and reading past the end fails.

import Glibc
@testable import SpinetSoundFont

/// A scratch file, unlinked at once and reached through /proc/self/fd.
final class ScratchFile {
    let fd: CInt
    let path: String
    init() {
        // in memory when it can (ten times the inputs per second of a disk)
        let dir = getenv("TMPDIR").map { String(cString: $0) } ?? (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp")
        var template = Array((dir + "/spinet-sf-fuzz-XXXXXX").utf8CString)
        fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        check(fd >= 0, "cannot create a scratch file in \(dir)")
        unlink(String(cString: template))
        path = "/proc/self/fd/\(fd)"
    }
    func write(_ bytes: [UInt8]) {
        check(ftruncate(fd, 0) == 0, "ftruncate")
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        check(n == bytes.count, "pwrite wrote \(n) of \(bytes.count)")
    }
}

nonisolated(unsafe) let fontFile = ScratchFile()
nonisolated(unsafe) let viewFile = ScratchFile()

@_cdecl("LLVMFuzzerTestOneInput")
public func soundFontFuzzInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    fontFile.write(bytes)
    let programs: Set<Int> = bytes.last.map { [Int($0) % 128] } ?? []

    let hydra = withFile(fontFile.path) { FontFileView.hydra($0, fileSize: Int64(size)) }
    let model = VoiceCostModel(path: fontFile.path)
    if let model {
        check(hydra != nil, "a cost model from a file without preset data")
        checkModel(model)
    }

    var cut: [UInt8]? = nil
    if let hydra {
        cut = PresetSubset.filter(pdta: hydra, programs: programs)
        if let cut { checkCut(cut, of: hydra, programs: programs) }
    }

    guard let view = FontFileView(path: fontFile.path, programs: programs) else {
        check(false, "FontFileView cannot open the scratch file")
        return 0
    }
    checkView(view, file: bytes, cut: cut)
    return 0
}

// MARK: The cost model

func checkModel(_ model: VoiceCostModel) {
    for (key, voices) in model.presets {
        for v in voices {
            check(v.keys.lowerBound <= v.keys.upperBound && v.velocities.lowerBound <= v.velocities.upperBound, "empty range in preset \(key)")
            check(v.release.isFinite && v.release > 0, "preset \(key): release \(v.release)")
            if let l = v.longest { check(l.isFinite && l >= 0, "preset \(key): longest \(l)") }
        }
    }
    // The lookups a render makes, on a few presets.
    for key in model.presets.keys.sorted().prefix(4) {
        let bank = key / 128, program = key % 128
        for note in [0, 60, 127] {
            if let c = model.cost(bank: bank, program: program, drum: bank == 128, key: note, velocity: 100, held: 0.5) {
                check(c.isFinite && c >= 0, "preset \(key) key \(note): cost \(c)")
            }
            _ = model.voiceCount(bank: bank, program: program, drum: false, key: note, velocity: 1)
        }
        _ = model.exclusiveKeys(bank: bank, program: program, drum: bank == 128)
    }
}

// MARK: The subset

func programNumbers(_ chunks: [ArraySlice<UInt8>]) -> [Int] {
    (0..<(chunks[0].count / PresetSubset.presetRecord - 1)).map { Int(PresetSubset.u16(chunks[0], $0 * PresetSubset.presetRecord + 20)) }
}

func checkCut(_ cut: [UInt8], of hydra: [UInt8], programs: Set<Int>) {
    guard let whole = PresetSubset.subChunks(hydra) else {
        check(false, "a cut of preset data without its nine sub-chunks")
        return
    }
    guard let chunks = PresetSubset.subChunks(cut) else {
        check(false, "the cut is not nine sub-chunks in order")
        return
    }
    check(chunks.map(\.count).reduce(0, +) + 9 * 8 == cut.count, "the cut has bytes after its sub-chunks")
    check(PresetSubset.presetZones(chunks) != nil && PresetSubset.instrumentZones(chunks) != nil, "the cut's zones are out of order")
    check(chunks[8].elementsEqual(whole[8]), "the cut changed the sample headers")
    let wanted = programs.union([0])
    let kept = programNumbers(chunks), all = programNumbers(whole)
    check(kept == all.filter { wanted.contains($0) }, "the cut kept programs \(kept) of \(all) for \(wanted.sorted())")
    check(PresetSubset.filter(pdta: cut, programs: programs) == nil, "cutting the cut again changed it")

    // Every kept preset costs what it costs in the whole font (when program
    // numbers are in range, so that bank * 128 + program names one preset).
    guard all.allSatisfy({ $0 < 128 }), let before = VoiceCostModel(chunks: whole) else { return }
    guard let after = VoiceCostModel(chunks: chunks) else {
        // a cut whose kept presets name no instrument has none: no model
        check(chunks[4].count / PresetSubset.instrumentRecord <= 1, "no cost model from the cut")
        return
    }
    check(Set(after.presets.keys) == Set(before.presets.keys.filter { wanted.contains($0 % 128) }), "the cut's cost model has other presets")
    for (key, voices) in after.presets {
        let original = before.presets[key] ?? []
        check(voices.count == original.count, "preset \(key): \(voices.count) voices after the cut, \(original.count) before")
        for (a, b) in zip(voices, original) {
            check(a.keys == b.keys && a.velocities == b.velocities && a.release == b.release && a.longest == b.longest
                  && a.rootKey == b.rootKey && a.exclusiveClass == b.exclusiveClass, "preset \(key): a voice changed in the cut")
        }
    }
}

// MARK: The view FluidSynth reads

func checkView(_ view: FontFileView, file: [UInt8], cut: [UInt8]?) {
    // Read it all, in pieces of varying size.
    var got: [UInt8] = []
    var piece = 1 + file.count % 7
    check(view.seek(0, origin: SEEK_SET), "seek to 0")
    while view.position < view.size {
        let n = Int(min(Int64(piece), view.size - view.position))
        var buf = [UInt8](repeating: 0, count: n)
        check(view.read(&buf, count: Int64(n)), "read \(n) at \(view.position) of \(view.size)")
        got += buf
        piece = piece * 3 % 4099 + 1
    }
    check(Int64(got.count) == view.size, "read \(got.count) of \(view.size)")
    var one: UInt8 = 0
    check(!view.read(&one, count: 1), "a read past the end")
    if view.size > 0 { check(view.seek(-1, origin: SEEK_END) && view.read(&one, count: 1) && one == got.last, "the last byte") }

    if view.segments.count == 1 {
        check(got == file, "the view of an uncut file is not the file")
    } else {
        guard let cut else {
            check(false, "the view cut a file that PresetSubset does not cut")
            return
        }
        check(got.count >= 12 && got[0..<4].elementsEqual("RIFF".utf8) && got[8..<12].elementsEqual("sfbk".utf8), "the view is not RIFF sfbk")
        let riff = { (b: [UInt8]) in Int64(PresetSubset.u32(b[...], 4)) }
        check(riff(got) - riff(file) == Int64(got.count - file.count), "the RIFF size moved by \(riff(got) - riff(file)), the file by \(got.count - file.count)")
        // Written out, the view holds the cut as its preset data, and the
        // bytes around it are the file's.
        viewFile.write(got)
        let reread = withFile(viewFile.path) { f -> (hydra: [UInt8]?, at: Int64?) in
            (FontFileView.hydra(f, fileSize: Int64(got.count)), FontFileView.locateHydra(f, fileSize: Int64(got.count))?.offset)
        }
        check(reread.hydra == cut, "the view's preset data is not the cut")
        if let at = reread.at.map(Int.init) {
            check(got[12..<at].elementsEqual(file[12..<at]), "the view changed what comes before the preset data")
            let end = at + 12 + cut.count, tail = got.count - end
            check(tail >= 0 && got[end...].elementsEqual(file[(file.count - tail)...]), "the view changed what comes after the preset data")
        }
    }

    // Reads at other positions agree with the whole.
    var at = Int64(file.count % 13)
    for _ in 0..<8 where view.size > 0 {
        at = (at * 31 + 7) % view.size
        let n = Int(min(Int64(1 + at % 97), view.size - at))
        var buf = [UInt8](repeating: 0, count: n)
        check(view.seek(at, origin: SEEK_SET) && view.read(&buf, count: Int64(n)), "read \(n) at \(at)")
        check(buf[...] == got[Int(at)..<Int(at) + n], "read at \(at) differs")
    }
}

// MARK: Helpers

func withFile<T>(_ path: String, _ body: (UnsafeMutablePointer<FILE>) -> T) -> T {
    guard let f = fopen(path, "rb") else { fatalError("cannot open \(path)") }
    defer { fclose(f) }
    return body(f)
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
