import SpinetSupport
import Testing

@Suite("Text helpers")
struct TextTests {
    @Test func formattedMatchesPrintf() {
        #expect(formatted("%5.1f%%", 12.34) == " 12.3%")
        #expect(formatted("%3ld|%-4ld|%04.1f", 7, 42, 3.14159) == "  7|42  |03.1")
        #expect(formatted("%.0f voices, %.2f ns", 4378.4, 6.189) == "4378 voices, 6.19 ns")
        #expect(formatted("%ld", Int32(-5)) == "-5")
        #expect(formatted("%ld", Int.max) == "9223372036854775807")
        // Longer than the first buffer: formatted again at full size.
        let long = formatted("%300.1f|", 1.5)
        #expect(long.count == 301 && long.hasSuffix("1.5|"))
        #expect(formatted("no arguments") == "no arguments")
    }

    @Test func trimmingSpacesTakesSpacesAndTabsFromBothEnds() {
        #expect(" \t 1=synth:lead \t".trimmingSpaces == "1=synth:lead")
        #expect("inner  space".trimmingSpaces == "inner  space")
        #expect("   ".trimmingSpaces == "")
        #expect("".trimmingSpaces == "")
        #expect("a\n".trimmingSpaces == "a\n")      // only spaces and tabs
        #expect("  x".split(separator: "=")[0].trimmingSpaces == "x")
    }

    @Test func tildeExpandsLikeAShell() {
        #expect(expandingTilde("~", home: "/home/ann") == "/home/ann")
        #expect(expandingTilde("~/fonts/a.sf2", home: "/home/ann") == "/home/ann/fonts/a.sf2")
        #expect(expandingTilde("/abs/~/x", home: "/home/ann") == "/abs/~/x")
        #expect(expandingTilde("rel/x", home: "/home/ann") == "rel/x")
        #expect(expandingTilde("~root/x").hasSuffix("/x") && !expandingTilde("~root/x").hasPrefix("~"))
        #expect(expandingTilde("~no-such-user-spinet/x") == "~no-such-user-spinet/x")
    }

    @Test func parentPathDropsTheLastComponent() {
        #expect(parentPath("a/b/c") == "a/b")
        #expect(parentPath("a/b/c/") == "a/b")
        #expect(parentPath("/a") == "/")
        #expect(parentPath("/") == "/")
        #expect(parentPath("name") == "")
        #expect(parentPath("/out/dir") == "/out")
    }

    @Test func paddedFillsToTheWidth() {
        #expect("ab".padded(to: 5) == "ab   ")
        #expect("abcdef".padded(to: 3) == "abcdef")
        #expect("".padded(to: 2) == "  ")
    }

    @Test func isDirectoryTellsDirectoriesFilesAndNothing() {
        #expect(isDirectory("/tmp") == true)
        #expect(isDirectory("/proc/self/exe") == false)
        #expect(isDirectory("/no/such/path/spinet") == nil)
    }
}
