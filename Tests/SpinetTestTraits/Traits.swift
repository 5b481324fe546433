// Swift Testing is there only when tests are built: `swift build` (the
// release build, `make demo`) compiles this target too, and gets an empty
// module.
#if canImport(Testing)
import Foundation
import Testing

/// Which tests a run leaves out, said on the tests themselves: by what a
/// test measures, not by a list of names in a script (a test renamed or
/// added keeps its trait; a list of names went stale).
///
/// `swift test` here cannot filter by tag (`--skip` matches names only), so
/// these are conditions read from the environment that the scripts set:
/// - `SPINET_SANITIZER` (`address` or `thread`): set by `scripts/sanitizers.sh`;
/// - `SPINET_SKIP_SLOW_TESTS`: set by `scripts/sanitizers.sh` too.
extension Trait where Self == ConditionTrait {
    /// The test counts the calling thread's allocations, locks or system
    /// calls (`RealtimeProbe`, `spinet-rtcheck`). Off under a sanitizer: the
    /// sanitizer owns malloc and the locks (the probe steps aside, so the
    /// test could prove nothing, and some hang), and its runtime makes
    /// system calls of its own.
    public static var realtimeProbe: Self {
        .disabled(if: SpinetTestEnvironment.sanitizer != nil,
                  "counts allocations, locks or system calls: meaningless under a sanitizer")
    }

    /// The test measures a process's peak memory. Off under a sanitizer,
    /// whose shadow memory is most of the resident set (700 MB for a render
    /// that takes 45 MB).
    public static var measuresMemory: Self {
        .disabled(if: SpinetTestEnvironment.sanitizer != nil,
                  "measures peak memory: a sanitizer's shadow memory is most of it")
    }

    /// The test takes minutes in a debug or sanitizer build (the plain run
    /// covers it). Off when `SPINET_SKIP_SLOW_TESTS` is set.
    public static var slow: Self {
        .disabled(if: SpinetTestEnvironment.skipSlowTests, "a slow test: SPINET_SKIP_SLOW_TESTS is set")
    }
}

/// What the environment says about this test run.
public enum SpinetTestEnvironment {
    /// The sanitizer the suite was built with, as `scripts/sanitizers.sh`
    /// says (`SPINET_SANITIZER`); nil in a plain run.
    public static var sanitizer: String? {
        guard let s = ProcessInfo.processInfo.environment["SPINET_SANITIZER"], !s.isEmpty else { return nil }
        return s
    }

    public static var skipSlowTests: Bool {
        ProcessInfo.processInfo.environment["SPINET_SKIP_SLOW_TESTS"].map { !$0.isEmpty } ?? false
    }
}
#endif
