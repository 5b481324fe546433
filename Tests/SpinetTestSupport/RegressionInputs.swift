import Foundation

/// The files in `folder` (READMEs and hidden files aside), sorted, as
/// paths: the inputs a regression suite replays (`Regressions/...`, a
/// fuzzer's seed corpus).
public func regressionInputs(_ folder: URL) -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.sorted().map { folder.appendingPathComponent($0).path }
}

/// The inputs of a regression folder, then the seeds of the fuzzer named
/// `fuzzer` (Fuzz/corpus/FUZZER/): what each regression suite replays.
public func regressionInputs(_ folder: URL, fuzzer: String) -> [String] {
    regressionInputs(folder) + regressionInputs(SpinetCommand.repositoryRoot.appendingPathComponent("Fuzz/corpus/\(fuzzer)"))
}
