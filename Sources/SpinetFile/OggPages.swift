import Glibc

/// Ogg page surgery: libsndfile starts every Ogg stream with a random serial
/// number (seeded from the clock), so two renders of one input would differ.
/// After the file is closed, `normalizeSerial` gives every page the same
/// serial, derived from the audio itself, and recomputes each page's CRC.
enum OggPages {
    /// The Ogg page checksum: CRC-32, polynomial 0x04C11DB7, not reflected,
    /// initial value 0, no final xor, over the page with its CRC field zeroed.
    static let crcTable: [UInt32] = (0..<256).map { i in
        var r = UInt32(i) << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
        return r
    }

    static func crc(_ bytes: UnsafeRawBufferPointer, _ start: UInt32 = 0) -> UInt32 {
        var c = start
        crcTable.withUnsafeBufferPointer { table in
            for b in bytes { c = (c << 8) ^ table[Int((c >> 24) ^ UInt32(b))] }
        }
        return c
    }

    /// A page as found in the file.
    struct Page {
        var offset: Int64
        var header: [UInt8]   // the 27 fixed bytes and the segment table
        var body: [UInt8]
    }

    /// Reads the page at `offset`; nil at the end of the file. Throws on anything not an Ogg page.
    static func readPage(_ fd: Int32, at offset: Int64) throws(OggError) -> Page? {
        var fixed = [UInt8](repeating: 0, count: 27)
        let n = try readFully(fd, &fixed, at: offset)
        if n == 0 { return nil }
        guard n == 27, fixed[0] == 0x4F, fixed[1] == 0x67, fixed[2] == 0x67, fixed[3] == 0x53 else {
            throw OggError(description: "no Ogg page at byte \(offset)")
        }
        var segments = [UInt8](repeating: 0, count: Int(fixed[26]))
        guard try readFully(fd, &segments, at: offset + 27) == segments.count else {
            throw OggError(description: "the Ogg page at byte \(offset) is cut short")
        }
        var body = [UInt8](repeating: 0, count: segments.reduce(0) { $0 + Int($1) })
        guard try readFully(fd, &body, at: offset + 27 + Int64(segments.count)) == body.count else {
            throw OggError(description: "the Ogg page at byte \(offset) is cut short")
        }
        return Page(offset: offset, header: fixed + segments, body: body)
    }

    /// Gives every page of the Ogg file at `path` one serial number (a
    /// checksum of the page bodies, so it follows the audio) and a
    /// recomputed CRC. Only the page headers are rewritten.
    static func normalizeSerial(path: String) throws(OggError) {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw OggError(description: String(cString: strerror(errno))) }
        defer { close(fd) }
        // 1. The serial: CRC-32 of every page body, in order.
        var serial: UInt32 = 0
        var offset: Int64 = 0
        while let page = try readPage(fd, at: offset) {
            serial = page.body.withUnsafeBytes { crc($0, serial) }
            offset += Int64(page.header.count + page.body.count)
        }
        // 2. Each page gets it, and its CRC again.
        offset = 0
        while var page = try readPage(fd, at: offset) {
            for i in 0..<4 { page.header[14 + i] = UInt8((serial >> (8 * UInt32(i))) & 0xFF) }
            for i in 22..<26 { page.header[i] = 0 }
            var c = page.header.withUnsafeBytes { crc($0) }
            c = page.body.withUnsafeBytes { crc($0, c) }
            for i in 0..<4 { page.header[22 + i] = UInt8((c >> (8 * UInt32(i))) & 0xFF) }
            let written = page.header.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
            guard written == page.header.count else {
                throw OggError(description: written < 0 ? String(cString: strerror(errno)) : "short write")
            }
            offset += Int64(page.header.count + page.body.count)
        }
    }

    /// Reads until `buffer` is full or the file ends; returns the bytes read.
    private static func readFully(_ fd: Int32, _ buffer: inout [UInt8], at offset: Int64) throws(OggError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw OggError(description: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    struct OggError: Error, CustomStringConvertible {
        var description: String
    }
}
