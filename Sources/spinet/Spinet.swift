import ArgumentParser
import Glibc
import SpinetSupport
import SpinetRig

@main
struct Spinet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spinet",
        abstract: "A MIDI-driven software synthesizer for Linux.",
        version: "0.1.0",
        subcommands: [Render.self, Play.self, Ports.self, Bench.self]
    )

    /// ArgumentParser's own `main`, except that its error messages (which
    /// echo the value given: a 100,000-digit number) are clipped like ours.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                if !message.isEmpty { print(message) }
            } else if !message.isEmpty {
                printError(message)
            }
            Glibc.exit(code.rawValue)
        }
    }
}

/// Prints one line to standard error.
func printError(_ line: String) {
    writeStandardError(clippingEchoes(line) + "\n")
}

/// Runs `body`; an error it throws becomes a `Failure` whose message is the
/// error's one-line description (`prefix` first). A `Failure` passes as it is.
/// Every error type Spinet's modules throw (`SoundFontError`, `ALSAError`,
/// `RigError`, `ConfigError`, ...) describes itself in one line.
func orFailure<T>(_ prefix: String = "", _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let f as Failure {
        throw f
    } catch let e as RigError {
        throw Failure(e.description.isEmpty ? "" : prefix + e.description, status: e.exitStatus)
    } catch {
        throw Failure(prefix + String(describing: error))
    }
}

/// A failure the user can act on: printed as one line, exit status 1.
struct Failure: Error {
    var message: String
    var status: Int32 = 1
    init(_ message: String, status: Int32 = 1) {
        self.message = message
        self.status = status
    }
}

extension ParsableCommand {
    /// An error stays one line: a line break or other control character it
    /// echoes (a key named "x\ny" in a JSON file) is shown escaped.
    static func oneLine(_ message: String) -> String {
        escapingControlCharacters(message)
    }

    /// Runs `body`, turning a `Failure` into its one line and exit status.
    func reportingFailures(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let f as Failure {
            if !f.message.isEmpty { printError("spinet: " + Self.oneLine(f.message)) }
            throw ExitCode(f.status)
        }
    }
}
