import Foundation
import Testing
import SpinetTestSupport
import SpinetFile
import SpinetSettings

// Replays every config file that ever broke the config reader or the
// channel spec parsers (Regressions/config/, see Regressions/README.md) and
// ConfigFuzzer's seeds (Fuzz/corpus/ConfigFuzzer/), with the fuzz target's
// checks: a config reads or fails with one message naming it; each channel
// spec in it, and each line given as a command-line spec, names channels on
// the ports there are or fails with a message naming the option.

private let configInputs = regressionInputs(regressionsFolder.appendingPathComponent("config"), fuzzer: "ConfigFuzzer")

@Suite("Config regressions")
struct ConfigRegressionTests {
    @Test func theSeedsAreFound() {
        #expect(configInputs.count >= 5, "\(repositoryRoot.path)")
    }

    @Test(arguments: configInputs)
    func readsOrFailsWithOneMessage(path: String) throws {
        let name = URL(fileURLWithPath: path).lastPathComponent
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let ports = 1 + data.count % 16
        var specs: [(spec: String, ports: Int, list: Bool)] = []
        do {
            let config = try SpinetConfig.parse(data, path: name)
            #expect(config.path == name)
            specs += config.channels.map { ($0, 16, false) } + (config.mute + config.solo).map { ($0, 16, true) }
        } catch {
            #expect(error.description.utf8.starts(with: "config \(name): ".utf8), "\(error.description)")
        }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            specs += [(String(line), ports, false), (String(line), ports, true)]
        }
        for (spec, ports, list) in specs {
            let channels: [Int]
            do {
                channels = list ? try ChannelAssignment.channelList(spec, ports: ports, option: "--mute")
                                : try ChannelAssignment(parsing: spec, ports: ports).channels
            } catch {
                #expect(error.description.utf8.starts(with: (list ? "--mute " : "--channel ").utf8), "\(error.description)")
                continue
            }
            #expect(!channels.isEmpty && channels.allSatisfy { (0..<ports * 16).contains($0) }, "\(name): \(spec) gave \(channels)")
        }
    }
}
