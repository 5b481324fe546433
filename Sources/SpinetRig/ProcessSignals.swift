import Glibc
import SpinetFile
import Synchronization

/// The signals a Spinet executable answers, and the flags their handlers set.
///
/// Process-global on purpose: a POSIX signal is delivered to the process,
/// and its handler is a C function with no context pointer, so what it sets
/// can only be a global (here, atomics; the handler is async-signal-safe).
/// Only executables install these handlers (`spinet render`, `spinet play`, a
/// JACK command); an LV2 or CLAP plugin never does (the host owns its
/// signals) and never reads these flags: `LiveSession` polls them only in
/// `run`, which plugins do not use.
public enum ProcessSignals {
    /// Set by a stopping signal; the render loop and the live session poll it.
    public static let stopRequested = Atomic<Bool>(false)
    /// The first stopping signal received, 0 before any.
    public static let firstStop = Atomic<Int32>(0)
    /// Set by SIGHUP under `spinet play`: reload the SoundFont.
    public static let reloadRequested = Atomic<Bool>(false)
    /// While set (`stoppingAtOnce`), a stopping signal ends the process at
    /// once: it removes every temporary file, says "interrupted" and exits
    /// with 128 + the signal. For a read that may wait for a writer (an input
    /// from a FIFO or standard input), which a restarted read would do forever.
    public static let stopImmediately = Atomic<Bool>(false)

    /// A stop was asked for before `stoppingAtOnce` began.
    public struct Stopped: Error {}

    /// Runs `body` (a read that may block) so that a stopping signal ends the
    /// process at once rather than wait for the read to end.
    public static func stoppingAtOnce<T>(_ body: () throws -> T) throws -> T {
        stopImmediately.store(true, ordering: .relaxed)
        defer { stopImmediately.store(false, ordering: .relaxed) }
        if stopRequested.load(ordering: .relaxed) { throw Stopped() }
        return try body()
    }
    /// The line the handler writes then (made before any signal can come).
    nonisolated(unsafe) private static var immediateMessage = UnsafeMutableBufferPointer<UInt8>(start: nil, count: 0)

    /// The signals that stop Spinet: each asks the work to stop and clean up
    /// (a render removes its temporary files; play fades out), and the exit
    /// status is 128 + the signal's number. SIGHUP is left out for `spinet
    /// play`, where it reloads the SoundFont.
    public static let stopping: [(signal: Int32, name: String)] = [
        (SIGINT, "SIGINT"), (SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP"), (SIGQUIT, "SIGQUIT"),
        (SIGUSR1, "SIGUSR1"), (SIGUSR2, "SIGUSR2"), (SIGALRM, "SIGALRM"),
    ]

    /// 128 + the first stopping signal (SIGINT 130, SIGTERM 143, SIGQUIT 131).
    public static func exitStatus() -> Int32 {
        let s = firstStop.load(ordering: .relaxed)
        return 128 + (s == 0 ? SIGINT : s)
    }

    /// "interrupted", naming the signal unless it was Ctrl-C.
    public static func interruptDescription() -> String {
        let s = firstStop.load(ordering: .relaxed)
        guard s != 0, s != SIGINT, let name = stopping.first(where: { $0.signal == s })?.name else { return "interrupted" }
        return "interrupted by \(name)"
    }

    /// Each stopping signal (`stopping`; SIGHUP too unless `hangUp` is
    /// false) asks the work to stop: the render loop removes its temporary
    /// file, play fades out. A second one removes every temporary file and
    /// exits at once. The handler is async-signal-safe: atomics, unlink, _exit.
    /// (SIGQUIT left to the Swift runtime would print a crash report and let
    /// the work go on.)
    public static func installStopHandlers(hangUp: Bool = true) {
        signal(SIGPIPE, SIG_IGN)
        // Globals are initialized on first use: do it here, not in the handler.
        _ = stopRequested.load(ordering: .relaxed)
        _ = firstStop.load(ordering: .relaxed)
        _ = stopImmediately.load(ordering: .relaxed)
        if immediateMessage.baseAddress == nil {
            let text = Array("spinet: interrupted; no output written\n".utf8)
            immediateMessage = .allocate(capacity: text.count)
            _ = immediateMessage.initialize(from: text)
        }
        let signals = stopping.map(\.signal).filter { hangUp || $0 != SIGHUP }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { sig in
            _ = ProcessSignals.firstStop.compareExchange(expected: 0, desired: sig, ordering: .relaxed)
            if ProcessSignals.stopImmediately.load(ordering: .relaxed) {
                OutputFile.unlinkPendingFromSignalHandler()
                let message = ProcessSignals.immediateMessage
                _ = write(STDERR_FILENO, message.baseAddress, message.count)
                _exit(128 + ProcessSignals.firstStop.load(ordering: .relaxed))
            }
            if ProcessSignals.stopRequested.exchange(true, ordering: .relaxed) {
                OutputFile.unlinkPendingFromSignalHandler()
                _exit(128 + ProcessSignals.firstStop.load(ordering: .relaxed))
            }
        }
        // One handler at a time; a write to a pipe is restarted, not failed with EINTR.
        sigemptyset(&action.sa_mask)
        for s in signals { sigaddset(&action.sa_mask, s) }
        action.sa_flags = SA_RESTART
        // A process inherits its parent's blocked-signal mask; a launcher that
        // blocks SIGINT must not make Ctrl-C (or `kill -INT`) do nothing here.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for s in signals {
            sigaction(s, &action, nil)
            sigaddset(&unblock, s)
        }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// SIGHUP reloads the SoundFont (`reloadRequested`), even if the
    /// launcher blocked it.
    public static func installReloadHandler() {
        _ = reloadRequested.load(ordering: .relaxed)
        signal(SIGHUP, { _ in ProcessSignals.reloadRequested.store(true, ordering: .relaxed) })
        var hangUp = sigset_t()
        sigemptyset(&hangUp)
        sigaddset(&hangUp, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &hangUp, nil)   // even if the launcher blocked it
    }
}
