// libFuzzer target for the config file reader (SpinetSettings/SpinetConfig.swift)
// and the channel specs of `--channel`, `--mute` and `--solo` and of the
// config's "channels", "mute" and "solo" (SpinetSettings/ChannelAssignment.swift).
//
// Built by scripts/fuzz.sh against the SpinetSupport and SpinetSettings modules
// (compiled under -sanitize=fuzzer,address with -enable-testing).
//
// The input is a config file. Its lines are also given one by one to the
// channel spec parsers, as a command line gives them, with 1 to 16 ports
// (from the input's size). Each input checks what the readers promise, and
// a failed promise is a crash:
// - a config error is one message starting with "config PATH: ";
// - a config read names its path, and its channel specs either parse or
//   fail with a message;
// - a parsed spec names at least one channel, every one of them on the
//   ports there are (0 ..< ports * 16), and a synth preset is never "".

import FoundationEssentials
import SpinetSupport
@testable import SpinetSettings

@_cdecl("LLVMFuzzerTestOneInput")
public func configFuzzInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buffer = UnsafeBufferPointer(start: data, count: size)
    let ports = 1 + size % 16

    do {
        let config = try SpinetConfig.parse(Data(buffer), path: "fuzz.json")
        check(config.path == "fuzz.json", "a config without its path")
        for spec in config.channels.prefix(64) { checkAssignment(spec, ports: 16) }
        for spec in (config.mute + config.solo).prefix(64) { checkList(spec, ports: 16) }
    } catch {
        check(error.description.utf8.starts(with: "config fuzz.json: ".utf8), "a config error not naming the file: \(error.description.prefix(200))")
    }

    let text = String(decoding: buffer, as: UTF8.self)
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(64) {
        checkAssignment(String(line), ports: ports)
        checkList(String(line), ports: ports)
    }
    return 0
}

func checkAssignment(_ spec: String, ports: Int) {
    do {
        let a = try ChannelAssignment(parsing: spec, ports: ports)
        check(!a.channels.isEmpty && a.channels.allSatisfy { (0..<ports * 16).contains($0) }, "--channel \(spec): channels \(a.channels) with \(ports) ports")
        if case .synth(let preset?) = a.instrument { check(!preset.isEmpty, "--channel \(spec): an empty preset name") }
    } catch {
        check(error.description.utf8.starts(with: "--channel ".utf8), "a --channel error not naming the option: \(error.description.prefix(200))")
    }
}

func checkList(_ spec: String, ports: Int) {
    do {
        let channels = try ChannelAssignment.channelList(spec, ports: ports, option: "--mute")
        check(!channels.isEmpty && channels.allSatisfy { (0..<ports * 16).contains($0) }, "--mute \(spec): channels \(channels) with \(ports) ports")
    } catch {
        check(error.description.utf8.starts(with: "--mute ".utf8), "a --mute error not naming the option: \(error.description.prefix(200))")
    }
}

// (Messages are compared as UTF-8: a name that starts with a combining mark
// joins the space before it into one Character, and hasPrefix would miss.)
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
